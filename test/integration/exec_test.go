package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestExecSync(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("exec")
	podID := e.runPod(pod)
	id := e.run(podID, pod, e.ctrConfig("c", "sleep", "3600"))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)

	t.Run("output and exit code", func(t *testing.T) {
		tests := []struct {
			cmd            []string
			stdout, stderr string
			code           int32
		}{
			{[]string{"sh", "-c", "echo out; echo err >&2; exit 7"}, "out\n", "err\n", 7},
			{[]string{"echo", "hello", "world"}, "hello world\n", "", 0},
			{[]string{"false"}, "", "", 1},
			{[]string{"cat", "/etc/hostname"}, pod.Hostname + "\n", "", 0},
		}
		for _, tt := range tests {
			resp := e.exec(id, tt.cmd...)
			if string(resp.Stdout) != tt.stdout || string(resp.Stderr) != tt.stderr || resp.ExitCode != tt.code {
				t.Errorf("ExecSync %q = stdout %q stderr %q exit %d, want %q %q %d",
					tt.cmd, resp.Stdout, resp.Stderr, resp.ExitCode, tt.stdout, tt.stderr, tt.code)
			}
		}
	})

	t.Run("command not found", func(t *testing.T) {
		resp, err := e.rt().ExecSync(e.ctx(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"/no/such/binary"}, Timeout: 10})
		if err == nil && resp.ExitCode == 0 {
			t.Errorf("ExecSync of a missing binary succeeded: %+v", resp)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		_, err := e.rt().ExecSync(e.ctx(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sleep", "31"}, Timeout: 1})
		elapsed := time.Since(start)
		if err == nil {
			t.Fatal("ExecSync of sleep 31 with a 1 s timeout succeeded")
		}
		t.Logf("ExecSync timed out after %s: %v (code %s)", elapsed, err, status.Code(err))
		if elapsed >= 10*time.Second {
			t.Errorf("ExecSync with a 1 s timeout returned after %s", elapsed)
		}
		eventually(t, 5*time.Second, "the timed-out sleep to be gone", func() bool {
			return !strings.Contains(string(e.exec(id, "ps", "-o", "args").Stdout), "sleep 31")
		})
		if pids := hostProcesses("sleep\x0031\x00"); len(pids) != 0 {
			t.Errorf("sleep 31 still runs on the host: pids %v", pids)
		}
	})

	t.Run("background child", func(t *testing.T) {
		start := time.Now()
		resp, err := e.rt().ExecSync(e.ctx(), &runtimeapi.ExecSyncRequest{
			ContainerId: id, Cmd: []string{"sh", "-c", "sleep 61 & echo started"}, Timeout: 20,
		})
		elapsed := time.Since(start)
		if err != nil {
			t.Fatalf("ExecSync with a background child: %v (after %s)", err, elapsed)
		}
		if string(resp.Stdout) != "started\n" || resp.ExitCode != 0 {
			t.Errorf("ExecSync = stdout %q exit %d, want \"started\\n\" 0", resp.Stdout, resp.ExitCode)
		}
		if elapsed >= 10*time.Second {
			t.Errorf("ExecSync waited %s for its background child", elapsed)
		}
	})

	t.Run("not running", func(t *testing.T) {
		done := e.run(podID, pod, e.ctrConfig("done", "true"))
		e.waitState(done, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
		_, err := e.rt().ExecSync(e.ctx(), &runtimeapi.ExecSyncRequest{ContainerId: done, Cmd: []string{"true"}, Timeout: 5})
		if status.Code(err) != codes.FailedPrecondition {
			t.Errorf("ExecSync in an exited container: %v, want FailedPrecondition", err)
		}
		_, err = e.rt().ExecSync(e.ctx(), &runtimeapi.ExecSyncRequest{ContainerId: "feedface", Cmd: []string{"true"}, Timeout: 5})
		if status.Code(err) != codes.NotFound {
			t.Errorf("ExecSync in an unknown container: %v, want NotFound", err)
		}
	})
}

// hostProcesses are the pids whose raw /proc cmdline is cmdline.
func hostProcesses(cmdline string) []string {
	matches, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []string
	for _, m := range matches {
		if b, err := os.ReadFile(m); err == nil && string(b) == cmdline {
			out = append(out, filepath.Base(filepath.Dir(m)))
		}
	}
	return out
}
