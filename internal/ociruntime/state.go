package ociruntime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// Container statuses as the runtime reports them.
const (
	StatusCreating = "creating"
	StatusCreated  = "created"
	StatusRunning  = "running"
	StatusStopped  = "stopped"
	StatusPaused   = "paused"
)

// State is what the runtime knows about one container.
type State struct {
	ID string `json:"id"`
	// Status is one of the Status* constants.
	Status string `json:"status"`
	// Pid is the container's init process in the host PID namespace; 0
	// once the container stopped.
	Pid    int    `json:"pid"`
	Bundle string `json:"bundle"`
}

// State returns the runtime's view of container id; errdefs.ErrNotFound
// when the runtime does not know it.
func (r *Runtime) State(ctx context.Context, id string) (State, error) {
	out, err := r.run(ctx, nil, "state", id)
	if err != nil {
		return State{}, fmt.Errorf("state of container %s: %w", id, err)
	}
	var s State
	if err := json.Unmarshal(out, &s); err != nil {
		return State{}, fmt.Errorf("decode state of container %s: %w", id, err)
	}
	return s, nil
}

// List returns the state of every container under the runtime root.
func (r *Runtime) List(ctx context.Context) ([]State, error) {
	out, err := r.run(ctx, nil, "list", "--format", "json")
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	var states []State
	// runc prints "null" when there is no container.
	if trimmed := strings.TrimSpace(string(out)); trimmed == "" || trimmed == "null" {
		return nil, nil
	}
	if err := json.Unmarshal(out, &states); err != nil {
		return nil, fmt.Errorf("decode container list: %w", err)
	}
	return states, nil
}

// Version returns the first line of the runtime's --version output
// ("runc version 1.1.5").
func (r *Runtime) Version(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, r.Binary, "--version")
	cmd.WaitDelay = waitDelay
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("runtime version: %w", err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return first, nil
}

// Features is what the runtime says it supports (`runtime features`, OCI
// runtime features document). Runtimes too old to answer have none.
type Features struct {
	MountOptions []string `json:"mountOptions"`
	// Annotations are the runtime's own facts; runc and crun say whether
	// they can checkpoint ("org.opencontainers.runc.checkpoint.enabled",
	// "run.oci.crun.checkpoint.enabled").
	Annotations map[string]string `json:"annotations"`
	Linux       struct {
		MountExtensions struct {
			IDMap struct {
				Enabled bool `json:"enabled"`
			} `json:"idmap"`
		} `json:"mountExtensions"`
	} `json:"linux"`
}

// Features asks the runtime what it supports.
func (r *Runtime) Features(ctx context.Context) (Features, error) {
	out, err := r.run(ctx, nil, "features")
	if err != nil {
		return Features{}, fmt.Errorf("runtime features: %w", err)
	}
	var f Features
	if err := json.Unmarshal(out, &f); err != nil {
		return Features{}, fmt.Errorf("runtime features: decode: %w", err)
	}
	return f, nil
}

// CheckpointMissing says why the runtime cannot checkpoint, from its
// features: "" when an annotation ending in ".checkpoint.enabled" is "true",
// or when none is there (a runtime that does not say is asked anyway).
// crun built without CRIU (as on Debian 12, which has no libcriu) says
// "false": crib then refuses up front, naming the runtime.
func (f Features) CheckpointMissing(binary string) string {
	said := false
	for k, v := range f.Annotations {
		if strings.HasSuffix(k, ".checkpoint.enabled") {
			if v == "true" {
				return ""
			}
			said = true
		}
	}
	if said {
		return fmt.Sprintf("the OCI runtime %s was built without checkpoint/restore (its features say checkpoint.enabled false)", binary)
	}
	return ""
}

// RestoreMissing says why the runtime cannot restore a checkpoint into a
// container of its own on a host whose cgroups are v2 (cgroupV2), or "".
// runc before 1.2 tells CRIU the restored container's cgroup on cgroup v1
// only (criuApplyCgroups returns early on v2, fixed by runc 3438ef30b), so
// on v2 the restored processes go back to the checkpointed container's
// cgroup, beyond the new one's limits, stats and removal. Other runtimes,
// and runc that does not say its version, are asked anyway; crib checks
// where the restored process landed.
func (f Features) RestoreMissing(binary string, cgroupV2 bool) string {
	v, ok := f.Annotations["org.opencontainers.runc.version"]
	if !cgroupV2 || !ok {
		return ""
	}
	var major, minor int
	if n, _ := fmt.Sscanf(v, "%d.%d", &major, &minor); n != 2 {
		return ""
	}
	if major > 1 || (major == 1 && minor >= 2) {
		return ""
	}
	return fmt.Sprintf("the OCI runtime %s (runc %s) does not give CRIU the restored container's own cgroup on cgroup v2, so its processes would come back in the checkpointed container's cgroup: runc 1.2 or later restores here", binary, v)
}

// Support is what a runtime handler makes possible on this host: its
// runtime's features and the kernel's together.
type Support struct {
	// RecursiveReadOnly: "rro" mounts.
	RecursiveReadOnly bool
	// UserNamespacesMissing is empty when pods can have user namespaces of
	// their own (id-mapped mounts in the runtime, id-mapped overlay layers
	// in the kernel); otherwise it says what is missing.
	UserNamespacesMissing string
	// CheckpointMissing is empty when the runtime can checkpoint
	// containers with CRIU; otherwise it says why not.
	CheckpointMissing string
	// RestoreMissing is empty when the runtime can also restore them
	// into containers of their own; otherwise it says why not.
	RestoreMissing string
}

// UserNamespaces reports whether pods can have user namespaces of their own.
func (s Support) UserNamespaces() bool { return s.UserNamespacesMissing == "" }

// pfExiting is the kernel's PF_EXITING task flag (include/linux/sched.h).
const pfExiting = 0x4

// Exiting reports whether process pid (in the host's PID namespace) has
// exited or is exiting: gone, a zombie, or with PF_EXITING set. The runtime
// still calls a container "running" while its init exits: the init of a PID
// namespace waits in its exit for the kernel to kill and reap the rest of
// the namespace (an exec's half-started process among them) before it
// becomes a zombie. A pid of 0 or less is not a process: false.
func Exiting(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH)
	}
	state, flags, ok := statStateFlags(string(b))
	if !ok {
		return false
	}
	return state == "Z" || state == "X" || state == "x" || flags&pfExiting != 0
}

// statStateFlags takes the state and the flags out of a /proc/PID/stat
// line; the command name before them is in parentheses and may hold
// spaces and parentheses itself.
func statStateFlags(stat string) (state string, flags uint64, ok bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return "", 0, false
	}
	// After the name: state ppid pgrp session tty_nr tpgid flags ...
	f := strings.Fields(stat[i+1:])
	if len(f) < 7 {
		return "", 0, false
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return f[0], flags, true
}
