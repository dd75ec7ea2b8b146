package ociruntime

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
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
	Linux        struct {
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

// Support is what a runtime handler makes possible on this host: its
// runtime's features and the kernel's together.
type Support struct {
	// RecursiveReadOnly: "rro" mounts.
	RecursiveReadOnly bool
	// UserNamespacesMissing is empty when pods can have user namespaces of
	// their own (id-mapped mounts in the runtime, id-mapped overlay layers
	// in the kernel); otherwise it says what is missing.
	UserNamespacesMissing string
}

// UserNamespaces reports whether pods can have user namespaces of their own.
func (s Support) UserNamespaces() bool { return s.UserNamespacesMissing == "" }
