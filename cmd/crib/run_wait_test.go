package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/testutil"
)

// readyAfter is how long the late pod's container takes to create the
// file its readiness probe tests.
const readyAfter = 3 * time.Second

// waitPod is a pod whose app creates /tmp/ready after readyAfter (when
// ready is true) and whose readiness probe tests for file.
func waitPod(name, image, file string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "sleep %d; touch /tmp/ready; exec sleep 3600"]
    readinessProbe:
      exec:
        command: [test, -f, %s]
      periodSeconds: 1
`, name, image, int(readyAfter.Seconds()), file)
}

// cribRun is a `crib run --wait=ready` child process on d's runtime.
type cribRun struct {
	cmd    *exec.Cmd
	stderr *testutil.SyncBuffer
	start  time.Time
	done   chan struct{}
	err    error
}

func startCribRun(t *testing.T, d *testutil.Daemon, manifest string, env []string, args ...string) *cribRun {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := append([]string{"run", "--config", d.Config, "--runtime-endpoint", "unix://" + d.Socket,
		"--agent-root", filepath.Join(dir, "agent"), "--pod-log-root", d.LogDir, "--status-address=",
		"--cgroup-driver", "none", "--wait=ready"}, args...)
	r := &cribRun{cmd: exec.Command(d.Binary, append(argv, path)...), stderr: &testutil.SyncBuffer{}, done: make(chan struct{})}
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.Stderr = r.stderr
	r.start = time.Now()
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// wait returns the exit code once crib run ended.
func (r *cribRun) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(within):
		t.Fatalf("crib run still runs after %s; stderr:\n%s", within, r.stderr)
	}
	var exit *exec.ExitError
	if errors.As(r.err, &exit) {
		return exit.ExitCode()
	}
	if r.err != nil {
		t.Fatalf("crib run: %v", r.err)
	}
	return 0
}

// podContainer is the running app container of pod in d, if any.
func podContainer(t *testing.T, d *testutil.Daemon, pod string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := d.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{labels.PodName: pod},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Containers) != 1 {
		return ""
	}
	return resp.Containers[0].Id
}

// readyFileExists says whether the container made its readiness file.
func readyFileExists(t *testing.T, d *testutil.Daemon, id string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := d.Runtime.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"test", "-f", "/tmp/ready"}, Timeout: 10})
	if err != nil {
		t.Fatal(err)
	}
	return resp.ExitCode == 0
}

// podSandboxes counts the sandboxes d holds of pod.
func podSandboxes(t *testing.T, d *testutil.Daemon, pod string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := d.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{labels.PodName: pod},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.Items)
}

func TestRunWaitReady(t *testing.T) {
	img := testutil.Busybox(t)
	d := testutil.StartDaemon(t, testutil.Options{Image: &img, LogLevel: "info"})

	t.Run("readiness passes late", func(t *testing.T) {
		r := startCribRun(t, d, waitPod("late", img.Ref, "/tmp/ready"), nil, "--timeout", "2m")
		if code := r.wait(t, 2*time.Minute); code != 0 {
			t.Fatalf("exit code %d, want 0; stderr:\n%s", code, r.stderr)
		}
		// Not before it passed: the file appears readyAfter after the
		// container started, which is after crib run started.
		if took := time.Since(r.start); took < readyAfter {
			t.Errorf("crib run returned after %s, before the container could be ready", took)
		}
		if !strings.Contains(r.stderr.String(), "crib run: pod late is ready") {
			t.Errorf("stderr does not say the pod is ready:\n%s", r.stderr)
		}
		id := podContainer(t, d, "late")
		if id == "" {
			t.Fatalf("the pod does not run after crib run returned; stderr:\n%s", r.stderr)
		}
		if !readyFileExists(t, d, id) {
			t.Error("crib run returned before the readiness file existed")
		}
	})

	t.Run("readiness never passes", func(t *testing.T) {
		r := startCribRun(t, d, waitPod("never", img.Ref, "/tmp/never"), nil, "--timeout", "5s")
		code := r.wait(t, 2*time.Minute)
		if code == 0 {
			t.Fatalf("exit code 0 for a pod that never got ready; stderr:\n%s", r.stderr)
		}
		if want := "not ready after 5s: container never/app runs but has not passed its readiness probe"; !strings.Contains(r.stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
		}
		if n := podSandboxes(t, d, "never"); n != 0 {
			t.Errorf("%d sandboxes of the pod left after the failed wait, want it torn down", n)
		}
	})

	t.Run("systemd hears READY=1 once ready", func(t *testing.T) {
		socket := filepath.Join(t.TempDir(), "notify.sock")
		conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: socket, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		type note struct {
			state string
			at    time.Time
		}
		notes := make(chan note, 16)
		go func() {
			buf := make([]byte, 4096)
			for {
				n, err := conn.Read(buf)
				if err != nil {
					close(notes)
					return
				}
				notes <- note{string(buf[:n]), time.Now()}
			}
		}()
		r := startCribRun(t, d, waitPod("notified", img.Ref, "/tmp/ready"), []string{"NOTIFY_SOCKET=" + socket}, "--timeout", "2m")
		var ready note
		select {
		case ready = <-notes:
		case <-r.done:
			t.Fatalf("crib run ended before it notified; stderr:\n%s", r.stderr)
		case <-time.After(2 * time.Minute):
			t.Fatalf("no notification; stderr:\n%s", r.stderr)
		}
		if ready.state != "READY=1" {
			t.Fatalf("first notification %q, want READY=1", ready.state)
		}
		if took := ready.at.Sub(r.start); took < readyAfter {
			t.Errorf("READY=1 came %s after the start, before the container could be ready", took)
		}
		id := podContainer(t, d, "notified")
		if id == "" || !readyFileExists(t, d, id) {
			t.Errorf("READY=1 came while the pod was not ready (container %q)", id)
		}
		// Under systemd crib run stays the unit's main process.
		select {
		case <-r.done:
			t.Fatalf("crib run ended after READY=1 under systemd; stderr:\n%s", r.stderr)
		case <-time.After(time.Second):
		}
		if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := r.wait(t, 2*time.Minute); code != 0 {
			t.Errorf("exit code %d after SIGTERM, want 0; stderr:\n%s", code, r.stderr)
		}
		select {
		case n := <-notes:
			if n.state != "STOPPING=1" {
				t.Errorf("notification after READY=1: %q, want STOPPING=1", n.state)
			}
		case <-time.After(5 * time.Second):
			t.Error("no STOPPING=1 on the teardown")
		}
		if n := podSandboxes(t, d, "notified"); n != 0 {
			t.Errorf("%d sandboxes of the pod left after SIGTERM, want it torn down", n)
		}
	})
}
