package integration

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// TestStreamingExec drives Exec through crictl: output, stdin, the exit
// code, and a terminal session with a real pty on the client's side.
func TestStreamingExec(t *testing.T) {
	needCrictl(t)
	e := newEnv(t)
	pod := e.podConfig("sexec")
	podID := e.runPod(pod)
	id := e.run(podID, pod, e.ctrConfig("c", "sleep", "3600"))
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)

	t.Run("output", func(t *testing.T) {
		out, errOut, code := e.crictl("", "exec", id, "sh", "-c", "echo out; echo err >&2")
		if out != "out\n" || errOut != "err\n" || code != 0 {
			t.Errorf("exec = stdout %q stderr %q code %d, want out, err, 0", out, errOut, code)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		out, errOut, code := e.crictl("hello\nworld\n", "exec", "-i", id, "cat")
		if out != "hello\nworld\n" || code != 0 {
			t.Errorf("exec -i cat = stdout %q stderr %q code %d, want the input echoed and 0", out, errOut, code)
		}
	})
	t.Run("exit code", func(t *testing.T) {
		_, errOut, code := e.crictl("", "exec", id, "sh", "-c", "exit 3")
		// crictl 1.36 exits 1 and names the code; later ones exit with it.
		if code == 0 || !strings.Contains(errOut, "exit code 3") {
			t.Errorf("exec of exit 3 = code %d stderr %q, want a failure naming exit code 3", code, errOut)
		}
	})
	t.Run("unknown container", func(t *testing.T) {
		_, errOut, code := e.crictl("", "exec", "0123456789abcdef", "true")
		if code == 0 || !strings.Contains(errOut, "NotFound") {
			t.Errorf("exec in an unknown container = code %d stderr %q, want NotFound", code, errOut)
		}
	})
	t.Run("tty", func(t *testing.T) {
		p := openPTY(t)
		ctx, cancel := context.WithTimeout(context.Background(), crictlTimeout)
		defer cancel()
		cmd := e.crictlCmd(ctx, "exec", "-it", id, "sh")
		p.start(t, cmd)
		p.write(t, "tty; echo hi-$((40+2))\n")
		eventually(t, 20*time.Second, "the shell's answer", func() bool { return strings.Contains(p.out.String(), "hi-42") })
		p.write(t, "exit 4\n")
		code := exitCode(t, cmd)
		<-p.copied
		if out := p.out.String(); !strings.Contains(out, "/dev/pts/") || code == 0 {
			t.Errorf("exec -it sh = code %d output %q, want a pts and a failure for exit 4", code, out)
		}
	})
}

// TestStreamingAttach attaches to a terminal container running sh, and to
// a plain one whose stdin closes after the first session (stdin_once).
func TestStreamingAttach(t *testing.T) {
	needCrictl(t)
	e := newEnv(t)
	pod := e.podConfig("sattach")
	podID := e.runPod(pod)

	t.Run("tty", func(t *testing.T) {
		cfg := e.ctrConfig("tty", "sh")
		cfg.Stdin, cfg.Tty = true, true
		id := e.run(podID, pod, cfg)
		e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
		for round := range 2 {
			p := openPTY(t)
			ctx, cancel := context.WithTimeout(context.Background(), crictlTimeout)
			cmd := e.crictlCmd(ctx, "attach", "-i", "-t", id)
			p.start(t, cmd)
			want := fmt.Sprintf("hi-%d", 100+round)
			// The attach may not be in place when the first line goes out:
			// repeat it until the answer shows.
			eventually(t, 20*time.Second, want+" from the attached shell", func() bool {
				p.write(t, fmt.Sprintf("echo hi-$((%d+%d))\n", 100, round))
				time.Sleep(100 * time.Millisecond)
				return strings.Contains(p.out.String(), want)
			})
			// Detach by killing the client: the container goes on.
			cancel()
			_ = cmd.Wait()
			if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				t.Fatalf("container is %s after the client left", st.State)
			}
		}
		log := waitLog(t, pod.LogDirectory+"/tty.log", "hi-101", 10*time.Second)
		if !strings.Contains(log, " stdout ") || strings.Contains(log, " stderr ") {
			t.Errorf("terminal log has not only stdout records:\n%s", log)
		}
	})

	t.Run("stdin once", func(t *testing.T) {
		cfg := e.ctrConfig("once", "sh", "-c", "read x; echo got-$x; exec cat")
		cfg.Stdin, cfg.StdinOnce = true, true
		id := e.run(podID, pod, cfg)
		e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
		// The end of crictl's input closes the container's stdin: cat
		// ends, the container exits, the attach returns.
		out, errOut, code := e.crictl("word\nmore\n", "attach", "-i", id)
		if !strings.Contains(out, "more") || code != 0 {
			t.Errorf("attach -i = stdout %q stderr %q code %d, want the input echoed and 0", out, errOut, code)
		}
		st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
		if st.ExitCode != 0 {
			t.Errorf("exit code %d, want 0", st.ExitCode)
		}
		waitLog(t, pod.LogDirectory+"/once.log", "got-word", 10*time.Second)
	})
}

// forwardedPort matches crictl port-forward's report of its local port.
var forwardedPort = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) ->`)

// TestStreamingPortForward forwards a local port to busybox httpd in a
// bridged pod and in a host-network pod.
func TestStreamingPortForward(t *testing.T) {
	needCrictl(t)
	e := newEnv(t)
	hostPort := freePort(t)
	tests := []struct {
		name string
		host bool
		port int
	}{
		{"bridged", false, 8080},
		{"host network", true, hostPort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := e.podConfig("pf" + fmt.Sprint(tt.port))
			if tt.host {
				pod.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
			}
			podID := e.runPod(pod)
			e.run(podID, pod, e.ctrConfig("httpd", "sh", "-c", fmt.Sprintf(
				"mkdir -p /www && echo hello-%d > /www/index.html && exec httpd -f -p 127.0.0.1:%d -h /www", tt.port, tt.port)))
			ctx, cancel := context.WithTimeout(context.Background(), crictlTimeout)
			defer cancel()
			cmd := e.crictlCmd(ctx, "port-forward", podID, fmt.Sprintf(":%d", tt.port))
			var out testutil.SyncBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cancel(); _ = cmd.Wait() }()
			var local string
			eventually(t, 20*time.Second, "crictl port-forward to listen", func() bool {
				m := forwardedPort.FindStringSubmatch(out.String())
				if m != nil {
					local = m[1]
				}
				return m != nil
			})
			want := fmt.Sprintf("hello-%d", tt.port)
			// httpd may not listen yet: retry until it answers.
			var got string
			eventually(t, 20*time.Second, "the page through the forward", func() bool {
				got = ncGet(t, local)
				return strings.Contains(got, want)
			})
			// A second connection through the same forward.
			if got = ncGet(t, local); !strings.Contains(got, want) {
				t.Errorf("second request through the forward = %q, want %s", got, want)
			}
		})
	}
}

// ncGet fetches / from 127.0.0.1:port with busybox nc on the host.
func ncGet(t *testing.T, port string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "busybox", "nc", "127.0.0.1", port)
	cmd.Stdin = strings.NewReader("GET / HTTP/1.0\r\n\r\n")
	out, _ := cmd.Output()
	return string(out)
}

// freePort returns a TCP port free on the host's loopback just now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
