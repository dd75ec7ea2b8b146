package daemon

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"syscall"

	"github.com/containerd/cgroups/v3"
	"golang.org/x/sys/unix"

	"github.com/crib-dev/crib/internal/config"
	"github.com/crib-dev/crib/internal/cri"
	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/mount"
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
	kernelIDMap := d.probeIDMappedOverlay(cfg.Root)
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
			ExecShim:      monitor.ExecShimArgs(d.monitorBin),
		}
		features, err := rt.Features(ctx)
		if err != nil {
			d.log.Debug("runtime does not describe its features", "handler", name, "err", err)
		}
		h := cri.Handler{Name: name, Support: ociruntime.Support{
			RecursiveReadOnly:     kernelRRO && slices.Contains(features.MountOptions, "rro"),
			UserNamespacesMissing: userNamespacesMissing(path, features, kernelIDMap),
			CheckpointMissing:     features.CheckpointMissing(path),
			RestoreMissing:        features.RestoreMissing(path, cgroups.Mode() == cgroups.Unified),
		}}
		if !h.UserNamespaces() {
			d.log.Info("pods of this handler cannot have user namespaces of their own", "handler", name, "missing", h.UserNamespacesMissing)
		}
		if h.CheckpointMissing == "" && h.RestoreMissing != "" {
			d.log.Info("this handler checkpoints but does not restore here", "handler", name, "missing", h.RestoreMissing)
		}
		rt.Support = h.Support
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

// userNamespacesMissing says what keeps the runtime at path from running
// pods in user namespaces of their own, or "" when nothing does.
func userNamespacesMissing(path string, features ociruntime.Features, kernelIDMap error) string {
	switch {
	case !features.Linux.MountExtensions.IDMap.Enabled:
		return fmt.Sprintf("the OCI runtime %s has no id-mapped mounts (runc 1.2 or later has them)", path)
	case kernelIDMap != nil:
		return kernelIDMap.Error()
	}
	return ""
}

// probeIDMappedOverlay tries an overlay of id-mapped layers on the file
// system of root, where the containers' rootfs are mounted, in a user
// namespace made for the probe. It also checks that a pod's root, an
// unprivileged user on the host, can reach root: the OCI runtime mounts the
// rootfs as that user.
func (d *Daemon) probeIDMappedOverlay(root string) error {
	if err := untraversable(root); err != nil {
		return fmt.Errorf("a pod's root cannot reach crib's root %s: %w", root, err)
	}
	// The same as a pod's namespaces are made with: the monitor binary,
	// started as the pod's root.
	cmd := exec.Command(d.monitorBin, "pause", "idmap-probe")
	m := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1 << 16, Size: 1 << 16}}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER, UidMappings: m, GidMappings: m, Pdeathsig: syscall.SIGKILL,
		Credential: &syscall.Credential{},
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start %s as a pod's root in a user namespace (it and its directories must be executable by others): %w", d.monitorBin, err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	userns, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	if err != nil {
		return err
	}
	defer userns.Close()
	if err := mount.ProbeIDMappedOverlay(root, userns); err != nil {
		return fmt.Errorf("the kernel cannot mount overlays of id-mapped layers (Linux 6.8 or later can): %w", err)
	}
	return nil
}

// untraversable says which directory on the way from / to dir others
// cannot search, or returns nil.
func untraversable(dir string) error {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s has no search permission for others (chmod o+x it)", p)
		}
		if p == "/" {
			return nil
		}
	}
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
