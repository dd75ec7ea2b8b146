package integration

import (
	"bytes"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// execCap is the documented cap of each ExecSync output stream.
const execCap = 16 << 20

// TestExecSyncOutputCap checks that a command writing more than the cap to
// a stream gets exactly the first 16 MiB back, its exit code intact, and
// that ExecSync does not hang on the output it discards.
func TestExecSyncOutputCap(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("execcap")
	podID := e.runPod(pod)
	id := e.run(podID, pod, e.ctrConfig("c", "sleep", "3600"))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)

	zeros := bytes.Repeat([]byte{0}, execCap)
	tests := []struct {
		name           string
		script         string
		stdout, stderr int
	}{
		{"stdout", "head -c 20000000 /dev/zero", execCap, 0},
		{"stderr", "head -c 20000000 /dev/zero >&2", 0, execCap},
		{"stdout under the cap", "head -c 1000 /dev/zero", 1000, 0},
		{"stdout at the cap", "head -c 16777216 /dev/zero", execCap, 0},
		{"both streams", "head -c 20000000 /dev/zero; head -c 20000000 /dev/zero >&2", execCap, execCap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			// Both streams full make a response of twice the cap: the
			// client must accept it.
			resp, err := e.rt().ExecSync(e.ctx(), &runtimeapi.ExecSyncRequest{
				ContainerId: id, Cmd: []string{"sh", "-c", tt.script}, Timeout: 60,
			}, grpc.MaxCallRecvMsgSize(3*execCap))
			elapsed := time.Since(start)
			if err != nil {
				t.Fatalf("ExecSync %q: %v (after %s)", tt.script, err, elapsed)
			}
			t.Logf("ExecSync %q: %d bytes stdout, %d bytes stderr in %s", tt.script, len(resp.Stdout), len(resp.Stderr), elapsed)
			if resp.ExitCode != 0 {
				t.Errorf("exit code %d, want 0 (stderr %q)", resp.ExitCode, clip(resp.Stderr))
			}
			if len(resp.Stdout) != tt.stdout || !bytes.Equal(resp.Stdout, zeros[:min(len(resp.Stdout), execCap)]) {
				t.Errorf("stdout: %d bytes, want %d zero bytes", len(resp.Stdout), tt.stdout)
			}
			if len(resp.Stderr) != tt.stderr || !bytes.Equal(resp.Stderr, zeros[:min(len(resp.Stderr), execCap)]) {
				t.Errorf("stderr: %d bytes, want %d zero bytes", len(resp.Stderr), tt.stderr)
			}
			// A bound against hanging on discarded output, far above
			// the time the copy takes; not a performance assertion.
			if elapsed > 30*time.Second {
				t.Errorf("ExecSync took %s", elapsed)
			}
		})
	}

	// The container is unharmed and later execs are not truncated.
	if out := e.exec(id, "echo", "after"); string(out.Stdout) != "after\n" || out.ExitCode != 0 {
		t.Errorf("ExecSync after the capped ones = %q exit %d", out.Stdout, out.ExitCode)
	}
}

// clip shortens b for a message.
func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
