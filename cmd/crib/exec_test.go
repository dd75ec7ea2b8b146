package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"

	"github.com/crib-dev/crib/internal/agent/statusapi"
	"github.com/crib-dev/crib/internal/testutil"
)

func TestParseExecArgs(t *testing.T) {
	type parsed struct {
		Namespace, Pod, Container, Endpoint string
		Timeout                             time.Duration
		Cmd                                 []string
	}
	tests := []struct {
		args []string
		want parsed
		bad  bool
	}{
		{args: []string{"web", "--", "ls", "-l"}, want: parsed{Namespace: "default", Pod: "web", Cmd: []string{"ls", "-l"}}},
		{
			args: []string{"-c", "app", "web", "-n", "prod", "--runtime-endpoint", "/run/x.sock", "--", "sh", "-c", "echo -- hi"},
			want: parsed{Namespace: "prod", Pod: "web", Container: "app", Endpoint: "/run/x.sock", Cmd: []string{"sh", "-c", "echo -- hi"}},
		},
		{args: []string{"-n", "prod", "web", "ls", "-l"}, want: parsed{Namespace: "prod", Pod: "web", Cmd: []string{"ls", "-l"}}},
		{args: []string{"--timeout", "1.5s", "web", "--", "true"}, want: parsed{Namespace: "default", Pod: "web", Timeout: 1500 * time.Millisecond, Cmd: []string{"true"}}},
		{args: []string{}, bad: true},
		{args: []string{"web"}, bad: true},
		{args: []string{"web", "--"}, bad: true},
		{args: []string{"--", "ls"}, bad: true},
		{args: []string{"a", "b", "--", "ls"}, bad: true},
		{args: []string{"--timeout=-1s", "web", "--", "ls"}, bad: true},
		{args: []string{"--no-such-flag", "web", "--", "ls"}, bad: true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			o, _, err := parseExecArgs(tt.args, io.Discard)
			if tt.bad {
				if err == nil {
					t.Fatalf("parseExecArgs accepted %q: %+v", tt.args, o)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseExecArgs: %v", err)
			}
			got := parsed{o.namespace, o.pod, o.container, o.endpoint, o.timeout, o.cmd}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parsed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExecTarget(t *testing.T) {
	store := statusapi.NewStore()
	client := statusAPI(t, store)
	store.Set(testPod("one", []string{"app"}), corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{running("app", "0123456789abcdef", 0)}})
	store.Set(testPod("two", []string{"a", "b"}, "init"), corev1.PodStatus{
		ContainerStatuses:     []corev1.ContainerStatus{running("a", "aaa", 0), running("b", "bbb", 2)},
		InitContainerStatuses: []corev1.ContainerStatus{exited("init", "iii", 0, 0)},
	})
	store.Set(testPod("pending", []string{"app"}), corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("app", "ContainerCreating")}})
	bad := running("app", "", 0)
	bad.ContainerID = "no-scheme"
	store.Set(testPod("bad", []string{"app"}), corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{bad}})

	tests := []struct {
		pod, container string
		want           string
		err            error
		errHas         string
	}{
		{pod: "one", want: "0123456789abcdef"},
		{pod: "two", container: "b", want: "bbb"},
		{pod: "two", err: errdefs.ErrInvalidArgument, errHas: "choose one with -c: a, b; init containers: init"},
		{pod: "two", container: "init", err: errdefs.ErrFailedPrecondition, errHas: `container "init" in pod default/two is not running`},
		{pod: "two", container: "c", err: errdefs.ErrNotFound, errHas: `no container "c"`},
		{pod: "pending", err: errdefs.ErrFailedPrecondition, errHas: "is waiting to start: ContainerCreating"},
		{pod: "bad", err: errdefs.ErrInvalidArgument, errHas: `malformed ID "no-scheme"`},
		{pod: "ghost", err: errdefs.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.pod+"/"+tt.container, func(t *testing.T) {
			id, err := execTarget(context.Background(), client, execOptions{podTarget: podTarget{namespace: "default", pod: tt.pod, container: tt.container}})
			if tt.err == nil {
				if err != nil || id != tt.want {
					t.Fatalf("execTarget = %q, %v; want %q", id, err, tt.want)
				}
				return
			}
			if !errors.Is(err, tt.err) || !strings.Contains(fmt.Sprint(err), tt.errHas) {
				t.Fatalf("execTarget error = %v, want class %v saying %q", err, tt.err, tt.errHas)
			}
		})
	}
}

// fakeExec answers ExecSync with fixed output and error, and remembers the
// request.
type fakeExec struct {
	stdout, stderr string
	err            error

	id      string
	cmd     []string
	timeout time.Duration
}

func (f *fakeExec) ExecSync(_ context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	f.id, f.cmd, f.timeout = id, cmd, timeout
	return []byte(f.stdout), []byte(f.stderr), f.err
}

func TestRunExec(t *testing.T) {
	tests := []struct {
		name           string
		fake           fakeExec
		timeout        time.Duration
		wantTimeout    time.Duration
		code           int
		errHas         string
		stdout, stderr string
	}{
		{name: "success", fake: fakeExec{stdout: "out\n", stderr: "err\n"}, stdout: "out\n", stderr: "err\n"},
		{
			name: "exit code", fake: fakeExec{stdout: "o", stderr: "e", err: utilexec.CodeExitError{Err: errors.New("exited with 7"), Code: 7}},
			code: 7, stdout: "o", stderr: "e",
		},
		{name: "rpc error", fake: fakeExec{err: errors.New("connection refused")}, code: 1, errHas: "connection refused"},
		{name: "timeout rounded up", timeout: 1500 * time.Millisecond, wantTimeout: 2 * time.Second},
		{name: "whole seconds kept", timeout: 3 * time.Second, wantTimeout: 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := tt.fake
			var stdout, stderr bytes.Buffer
			code, err := runExec(context.Background(), &fake, "abc", []string{"sh", "-c", "x"}, tt.timeout, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit code %d, want %d", code, tt.code)
			}
			if (err != nil) != (tt.errHas != "") || (err != nil && !strings.Contains(err.Error(), tt.errHas)) {
				t.Errorf("error = %v, want one saying %q", err, tt.errHas)
			}
			if stdout.String() != tt.stdout || stderr.String() != tt.stderr {
				t.Errorf("output %q / %q, want %q / %q", stdout.String(), stderr.String(), tt.stdout, tt.stderr)
			}
			if fake.id != "abc" || !cmp.Equal(fake.cmd, []string{"sh", "-c", "x"}) || fake.timeout != tt.wantTimeout {
				t.Errorf("ExecSync(%q, %q, %s), want (abc, [sh -c x], %s)", fake.id, fake.cmd, fake.timeout, tt.wantTimeout)
			}
		})
	}
}

// TestExecInDaemon runs `crib exec` in-process against a crib daemon's
// container, found through a status API that names it.
func TestExecInDaemon(t *testing.T) {
	testutil.RequiresRoot(t)
	img := testutil.Busybox(t)
	d, _, srv := startAppContainer(t, testutil.Options{Image: &img})
	addr := strings.TrimPrefix(srv.URL, "http://")

	tests := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{
			name:   "exit code and streams",
			args:   []string{"--status-address", addr, "--runtime-endpoint", d.Socket, "web", "--", "sh", "-c", "echo out; echo err >&2; exit 3"},
			code:   3,
			stdout: "out\n", stderr: "err\n",
		},
		{
			name:   "socket from the configuration",
			args:   []string{"--config", d.Config, "--state", d.State, "--status-address", addr, "-c", "app", "web", "--", "echo", "hi", "there"},
			stdout: "hi there\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"exec"}, tt.args...), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.code, stderr.String())
			}
			if stdout.String() != tt.stdout || stderr.String() != tt.stderr {
				t.Errorf("output %q / %q, want %q / %q", stdout.String(), stderr.String(), tt.stdout, tt.stderr)
			}
		})
	}

	t.Run("timeout", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := run([]string{"exec", "--timeout", "1s", "--status-address", addr, "--runtime-endpoint", d.Socket, "web", "--", "sleep", "30"}, &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), "timed out after 1s") {
			t.Errorf("exec of sleep 30 with a 1 s timeout: exit code %d, stderr %q", code, stderr.String())
		}
		t.Logf("exit code %d, stderr %q", code, stderr.String())
	})
}

// startAppContainer starts a daemon with opts, a pod "web" with a running
// container "app" (sleep 3600) on it, and a status API that names it.
func startAppContainer(t *testing.T, opts testutil.Options) (*testutil.Daemon, string, *httptest.Server) {
	t.Helper()
	d := testutil.StartDaemon(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sandbox := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"},
		LogDirectory: d.LogDir + "/web",
	}
	pod, err := d.Runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandbox})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	ctr, err := d.Runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: pod.PodSandboxId, SandboxConfig: sandbox,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image:    &runtimeapi.ImageSpec{Image: opts.Image.Ref},
			Command:  []string{"sleep", "3600"},
			LogPath:  "app/0.log",
		},
	})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if _, err := d.Runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctr.ContainerId}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}

	store := statusapi.NewStore()
	store.Set(testPod("web", []string{"app"}), corev1.PodStatus{
		Phase:             corev1.PodRunning,
		ContainerStatuses: []corev1.ContainerStatus{running("app", ctr.ContainerId, 0)},
	})
	srv := httptest.NewServer(statusapi.Handler(store, nil, nil))
	t.Cleanup(srv.Close)
	return d, ctr.ContainerId, srv
}
