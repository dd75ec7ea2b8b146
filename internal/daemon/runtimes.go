package daemon

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/crib-dev/crib/internal/config"
	"github.com/crib-dev/crib/internal/cri"
	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/ociruntime"
)

// runtimes resolves the OCI runtimes cfg configures by handler and what
// each supports. The default runtime must be installed and is also the ""
// handler; others are offered only when they are installed.
func (d *Daemon) runtimes(ctx context.Context, cfg config.Config) (map[string]*ociruntime.Runtime, []cri.Handler, error) {
	out := map[string]*ociruntime.Runtime{}
	var handlers []cri.Handler
	names := make([]string, 0, len(cfg.Runtimes))
	for name := range cfg.Runtimes {
		names = append(names, name)
	}
	sort.Strings(names)
	kernelRRO := kernelAtLeast(5, 12) // mount_setattr(2)
	for _, name := range names {
		rc := cfg.Runtimes[name]
		path, err := exec.LookPath(rc.Path)
		if err != nil {
			if name == cfg.DefaultRuntime {
				return nil, nil, fmt.Errorf("default OCI runtime %q: %s not found: install it (Debian: apt-get install %s) or set runtimes.%s.path in %s",
					name, rc.Path, name, name, config.DefaultPath)
			}
			d.log.Debug("runtime not installed; handler not offered", "handler", name, "path", rc.Path)
			continue
		}
		rt := &ociruntime.Runtime{
			Binary:        path,
			Root:          cfg.RuntimeRoot(name),
			SystemdCgroup: cfg.CgroupDriver == "systemd",
			ExecShim:      monitor.ExecShimArgs(d.self),
		}
		features, err := rt.Features(ctx)
		if err != nil {
			d.log.Debug("runtime does not describe its features", "handler", name, "err", err)
		}
		h := cri.Handler{Name: name, RecursiveReadOnly: kernelRRO && slices.Contains(features.MountOptions, "rro")}
		out[name] = rt
		handlers = append(handlers, h)
		if name == cfg.DefaultRuntime {
			out[""] = rt
			def := h
			def.Name = ""
			handlers = append([]cri.Handler{def}, handlers...)
		}
	}
	return out, handlers, nil
}

// rroHandlers names the handlers that make recursive read-only mounts.
func rroHandlers(handlers []cri.Handler) map[string]bool {
	out := map[string]bool{}
	for _, h := range handlers {
		if h.RecursiveReadOnly {
			out[h.Name] = true
		}
	}
	return out
}

// kernelAtLeast reports whether the running kernel is major.minor or later.
func kernelAtLeast(major, minor int) bool {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return false
	}
	var maj, min int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(uts.Release[:]), "%d.%d", &maj, &min); err != nil {
		return false
	}
	return maj > major || (maj == major && min >= minor)
}
