package ociruntime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// CreateOpts are the options of one `create` call.
type CreateOpts struct {
	// Bundle is the OCI bundle directory (config.json and rootfs).
	Bundle string
	// PidFile receives the container's init pid.
	PidFile string
	// ConsoleSocket, when set, is the unix socket the runtime sends the
	// pty master to (terminal containers).
	ConsoleSocket string
	// NoPivot creates the container without pivot_root (needed when the
	// root is on a ramdisk).
	NoPivot bool
	// LogFile overrides Runtime.Log for this call, so the caller can read
	// back the runtime's error without racing other calls.
	LogFile string
}

// CreateArgs returns the full argument vector (after the binary) of
// `create` for container id. The caller runs it, so that it owns the
// container's stdio.
func (r *Runtime) CreateArgs(id string, o CreateOpts) []string {
	return r.createArgs(id, o, "create")
}

// RunArgs is CreateArgs for `run --detach`: create and start in one call,
// which costs the runtime less than the two apart.
func (r *Runtime) RunArgs(id string, o CreateOpts) []string {
	return r.createArgs(id, o, "run", "--detach")
}

// RestoreArgs is RunArgs for `restore --detach`: the container made
// from its bundle and its processes restored by CRIU from the images in
// imagePath, running; CRIU's log goes to workPath. The caller's stdio
// takes the place of the checkpointed container's stdio pipes.
func (r *Runtime) RestoreArgs(id string, o CreateOpts, imagePath, workPath string) []string {
	return r.createArgs(id, o, "restore", "--detach", "--image-path", imagePath, "--work-path", workPath)
}

func (r *Runtime) createArgs(id string, o CreateOpts, verb ...string) []string {
	args := r.globalArgs(o.LogFile)
	args = append(args, verb...)
	args = append(args, "--bundle", o.Bundle)
	if o.PidFile != "" {
		args = append(args, "--pid-file", o.PidFile)
	}
	if o.ConsoleSocket != "" {
		args = append(args, "--console-socket", o.ConsoleSocket)
	}
	if o.NoPivot {
		args = append(args, "--no-pivot")
	}
	return append(args, id)
}

// Start runs the user process of a created container.
func (r *Runtime) Start(ctx context.Context, id string) error {
	if _, err := r.run(ctx, nil, "start", id); err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	return nil
}

// Kill sends sig to the container's init, or to every process of the
// container when all is set. A container that is unknown or no longer
// running yields errdefs.ErrNotFound.
func (r *Runtime) Kill(ctx context.Context, id string, sig syscall.Signal, all bool) error {
	args := []string{"kill"}
	if all {
		args = append(args, "--all")
	}
	args = append(args, id, strconv.Itoa(int(sig)))
	if _, err := r.run(ctx, nil, args...); err != nil {
		if errdefs.IsFailedPrecondition(err) && !errdefs.IsNotFound(err) {
			err = fmt.Errorf("%w: %w", err, errdefs.ErrNotFound)
		}
		return fmt.Errorf("kill container %s: %w", id, err)
	}
	return nil
}

// Delete removes the runtime's record of container id; force kills a
// container that is still running first. Deleting an unknown container is
// not an error.
//
// A forced delete first tries a plain one and forces only if that fails:
// runc 1.2 and later, given --force, SIGKILL even a stopped container and
// then sleep 100 ms before they look whether it went (killContainer in
// runc's delete.go), a fixed 100 ms on every removal of a container that
// has exited. For a stopped container the plain delete does all the forced
// one would (runc's destroy SIGKILLs what is left in the cgroup of a
// container without a PID namespace of its own); one that still runs, or
// any other failure, goes on to --force.
func (r *Runtime) Delete(ctx context.Context, id string, force bool) error {
	// runc and crun keep a container's state in <root>/<id>: without it
	// there is nothing to delete, and a container that was created but never
	// started (most containers of a pod removed early) costs no runtime exec.
	if r.Root != "" {
		if _, err := os.Lstat(filepath.Join(r.Root, id)); errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
	_, err := r.run(ctx, nil, "delete", id)
	if err != nil && force && !errdefs.IsNotFound(err) && ctx.Err() == nil {
		_, err = r.run(ctx, nil, "delete", "--force", id)
	}
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("delete container %s: %w", id, err)
	}
	return nil
}

// Update applies new resource limits to a container.
func (r *Runtime) Update(ctx context.Context, id string, res *specs.LinuxResources) error {
	if res == nil {
		return fmt.Errorf("update container %s: no resources: %w", id, errdefs.ErrInvalidArgument)
	}
	body, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("update container %s: encode resources: %w", id, err)
	}
	if _, err := r.run(ctx, bytes.NewReader(body), "update", "--resources", "-", id); err != nil {
		return fmt.Errorf("update container %s: %w", id, err)
	}
	return nil
}
