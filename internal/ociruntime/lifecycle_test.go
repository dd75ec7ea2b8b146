package ociruntime_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/crib-dev/crib/internal/ociruntime"
	"github.com/crib-dev/crib/internal/ociruntime/ociruntimetest"
)

func TestLifecycle(t *testing.T) {
	ociruntimetest.RequireRuntime(t)
	ctx := context.Background()
	r := ociruntimetest.NewRuntime(t)
	id := ociruntimetest.ID(t)

	if _, err := r.State(ctx, id); !errdefs.IsNotFound(err) {
		t.Fatalf("state of unknown container: got %v, want not found", err)
	}
	if err := r.Kill(ctx, id, syscall.SIGKILL, false); !errdefs.IsNotFound(err) {
		t.Fatalf("kill unknown container: got %v, want not found", err)
	}
	if err := r.Delete(ctx, id, false); err != nil {
		t.Fatalf("delete unknown container: %v", err)
	}

	bundle := ociruntimetest.NewBundle(t, id, []string{"sleep", "3600"}, nil)
	ociruntimetest.Create(t, r, id, bundle)
	s, err := r.State(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.Pid <= 0 {
		t.Errorf("created container has pid %d", s.Pid)
	}
	if d := cmp.Diff(ociruntime.State{ID: id, Status: "created", Pid: s.Pid, Bundle: bundle}, s); d != "" {
		t.Errorf("state after create (-want +got):\n%s", d)
	}
	if err := r.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	ociruntimetest.WaitStatus(t, r, id, ociruntime.StatusRunning)

	list, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != id || list[0].Status != "running" {
		t.Errorf("list: got %+v, want one running %s", list, id)
	}
	if err := r.Delete(ctx, id, false); err == nil || !strings.Contains(err.Error(), "running") {
		t.Errorf("delete running container without force: got %v, want an error", err)
	}
	if err := r.Kill(ctx, id, syscall.SIGKILL, true); err != nil {
		t.Fatal(err)
	}
	ociruntimetest.WaitStatus(t, r, id, ociruntime.StatusStopped)
	if err := r.Kill(ctx, id, syscall.SIGKILL, false); !errdefs.IsNotFound(err) {
		t.Errorf("kill stopped container: got %v, want not found", err)
	}
	for i := 0; i < 2; i++ {
		if err := r.Delete(ctx, id, false); err != nil {
			t.Fatalf("delete #%d: %v", i+1, err)
		}
	}
	if _, err := r.State(ctx, id); !errdefs.IsNotFound(err) {
		t.Fatalf("state after delete: got %v, want not found", err)
	}
}

func TestCreateDuplicateIsAlreadyExists(t *testing.T) {
	ociruntimetest.RequireRuntime(t)
	r := ociruntimetest.NewRuntime(t)
	id := ociruntimetest.ID(t)
	bundle := ociruntimetest.NewBundle(t, id, []string{"sleep", "3600"}, nil)
	ociruntimetest.Create(t, r, id, bundle)
	logFile := filepath.Join(t.TempDir(), "create.log")
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	args := r.CreateArgs(id, ociruntime.CreateOpts{Bundle: bundle, LogFile: logFile})
	p, err := os.StartProcess(lookRunc(t), append([]string{"runc"}, args...), &os.ProcAttr{Files: []*os.File{nil, out, out}})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := p.Wait(); st.Success() {
		t.Fatal("second create succeeded")
	}
	err = ociruntime.Classify(ociruntime.LastErrorInFile(logFile))
	if !errdefs.IsAlreadyExists(err) {
		t.Fatalf("got %v, want already exists", err)
	}
}

func TestUpdatePidsLimit(t *testing.T) {
	ociruntimetest.RequireRuntime(t)
	ctx := context.Background()
	r := ociruntimetest.NewRuntime(t)
	id := runningContainer(t, r)
	s, err := r.State(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	limit := int64(42)
	if err := r.Update(ctx, id, &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: &limit}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(pidsCgroup(t, s.Pid), "pids.max"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != "42" {
		t.Errorf("pids.max = %q, want 42", got)
	}
	if err := r.Update(ctx, ociruntimetest.ID(t), &specs.LinuxResources{}); !errdefs.IsNotFound(err) {
		t.Errorf("update unknown container: got %v, want not found", err)
	}
}

func TestVersion(t *testing.T) {
	ociruntimetest.RequireRuntime(t)
	v, err := ociruntimetest.NewRuntime(t).Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v, "runc version ") {
		t.Errorf("version %q", v)
	}
}

func TestFeatures(t *testing.T) {
	ociruntimetest.RequireRuntime(t)
	f, err := ociruntimetest.NewRuntime(t).Features(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Every runc that answers `features` knows bind mounts.
	if !slices.Contains(f.MountOptions, "rbind") {
		t.Errorf("mount options %v lack rbind", f.MountOptions)
	}
}

// pidsCgroup returns the pids cgroup directory of pid (v1 or v2).
func pidsCgroup(t *testing.T, pid int) string {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var unified string
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "pids" {
				return filepath.Join("/sys/fs/cgroup/pids", parts[2])
			}
		}
		if parts[0] == "0" {
			unified = parts[2]
		}
	}
	return filepath.Join("/sys/fs/cgroup", unified)
}

func lookRunc(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc", "/usr/local/bin/runc"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("runc not found")
	return ""
}

func TestErrorsWithLogFile(t *testing.T) {
	ociruntimetest.RequireRuntime(t)
	ctx := context.Background()
	r := ociruntimetest.NewRuntime(t)
	r.Log = filepath.Join(t.TempDir(), "runc.log")
	list, err := r.List(ctx)
	if err != nil || len(list) != 0 {
		t.Fatalf("list of empty root: %v, %v", list, err)
	}
	_, err = r.State(ctx, "nope")
	if !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("state of unknown container: got %v, want not found with runc's message", err)
	}
	if msg := ociruntime.LastErrorInFile(r.Log); !strings.Contains(msg, "does not exist") {
		t.Errorf("runtime log holds %q", msg)
	}
}

// TestDeleteNeverStartedSkipsRuntime: a container the runtime has no state
// directory for is deleted without running the runtime at all; one it has
// goes to the runtime (here /bin/false, so its delete fails).
func TestDeleteNeverStartedSkipsRuntime(t *testing.T) {
	r := &ociruntime.Runtime{Binary: "/bin/false", Root: t.TempDir()}
	if err := r.Delete(context.Background(), "never-started", true); err != nil {
		t.Errorf("delete of a container the runtime never saw: %v, want nil without running it", err)
	}
	if err := os.Mkdir(filepath.Join(r.Root, "known"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(context.Background(), "known", true); err == nil {
		t.Error("delete of a container with runtime state did not run the runtime (/bin/false would have failed)")
	}
}

// TestForcedDeleteTriesPlainFirst: a forced delete runs a plain delete and
// adds --force only when that fails (runc 1.2+ sleeps 100 ms in every
// forced delete, even of a stopped container). The runtime is a script
// that logs its arguments and refuses a plain delete while "running".
func TestForcedDeleteTriesPlainFirst(t *testing.T) {
	dir := t.TempDir()
	calls, running := filepath.Join(dir, "calls"), filepath.Join(dir, "running")
	script := filepath.Join(dir, "runtime")
	body := fmt.Sprintf(`#!/bin/sh
echo "$*" >>%[1]s
case "$*" in *--force*) exit 0 ;; esac
if [ -e %[2]s ]; then echo '{"level":"error","msg":"cannot delete container c that is not stopped: running"}' >&2; exit 1; fi
`, calls, running)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &ociruntime.Runtime{Binary: script}
	ctx := context.Background()
	verbs := func() []string {
		b, _ := os.ReadFile(calls)
		os.Remove(calls)
		var vs []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(l)
			i := slices.Index(f, "delete")
			if i < 0 {
				t.Fatalf("runtime ran %q, want a delete", l)
			}
			vs = append(vs, strings.Join(f[i:], " "))
		}
		return vs
	}

	if err := r.Delete(ctx, "c", true); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"delete c"}, verbs()); d != "" {
		t.Errorf("forced delete of a stopped container (-want +got):\n%s", d)
	}
	if err := os.WriteFile(running, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, "c", true); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"delete c", "delete --force c"}, verbs()); d != "" {
		t.Errorf("forced delete of a running container (-want +got):\n%s", d)
	}
	if err := r.Delete(ctx, "c", false); err == nil || !strings.Contains(err.Error(), "not stopped") {
		t.Errorf("plain delete of a running container: got %v, want the runtime's refusal", err)
	}
	if d := cmp.Diff([]string{"delete c"}, verbs()); d != "" {
		t.Errorf("plain delete of a running container (-want +got):\n%s", d)
	}
}

// TestForcedDeleteRunning: a forced delete of a running container kills it
// and removes it.
func TestForcedDeleteRunning(t *testing.T) {
	ociruntimetest.RequireRuntime(t)
	ctx := context.Background()
	r := ociruntimetest.NewRuntime(t)
	id := runningContainer(t, r)
	s, err := r.State(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, id, true); err != nil {
		t.Fatal(err)
	}
	if _, err := r.State(ctx, id); !errdefs.IsNotFound(err) {
		t.Errorf("state after forced delete: got %v, want not found", err)
	}
	if processAlive(s.Pid) {
		t.Errorf("init %d alive after forced delete", s.Pid)
	}
}

// TestForcedDeleteStoppedKillsLeftovers: a container in its host's PID
// namespace whose init exited may leave processes in its cgroup; the
// forced delete of it, stopped, kills them (the plain delete it now is
// must do what --force did).
func TestForcedDeleteStoppedKillsLeftovers(t *testing.T) {
	ociruntimetest.RequireRuntime(t)
	ctx := context.Background()
	r := ociruntimetest.NewRuntime(t)
	id := ociruntimetest.ID(t)
	bundle := ociruntimetest.NewBundle(t, id, []string{"sh", "-c", "sleep 3600 & echo $! >/tmp/child; exec sleep 3600"},
		func(s *specs.Spec) {
			s.Linux.Namespaces = slices.DeleteFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool {
				return n.Type == specs.PIDNamespace
			})
		})
	ociruntimetest.Create(t, r, id, bundle)
	if err := r.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	childFile := filepath.Join(bundle, "rootfs", "tmp", "child")
	var child int
	for deadline := time.Now().Add(20 * time.Second); child == 0; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(childFile); err == nil && strings.HasSuffix(string(b), "\n") {
			if child, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
				t.Fatal(err)
			}
		} else if time.Now().After(deadline) {
			t.Fatal("the container never wrote its child's pid")
		}
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	// SIGTERM to init alone: runc's SIGKILL of a container without a PID
	// namespace of its own goes to its whole cgroup.
	if err := r.Kill(ctx, id, syscall.SIGTERM, false); err != nil {
		t.Fatal(err)
	}
	ociruntimetest.WaitStatus(t, r, id, ociruntime.StatusStopped)
	if !processAlive(child) {
		t.Fatalf("child %d went with init: nothing left for delete to kill", child)
	}
	if err := r.Delete(ctx, id, true); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); processAlive(child); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d of the stopped container alive after its forced delete", child)
		}
	}
	if _, err := r.State(ctx, id); !errdefs.IsNotFound(err) {
		t.Errorf("state after forced delete: got %v, want not found", err)
	}
}

// processAlive reports whether pid is a process that has not exited (a
// zombie has).
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
