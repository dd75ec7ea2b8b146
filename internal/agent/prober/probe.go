package prober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Exec is the part of the CRI the prober needs; internalapi.RuntimeService
// satisfies it. A command that exits non-zero is reported as an error that has
// an ExitStatus() int method (k8s.io/utils/exec.ExitError).
type Exec interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error)
}

// DialFunc opens a network connection; net.Dialer.DialContext is one.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Probe defaults, as the API server would fill them in.
const (
	defaultTimeout          = time.Second
	defaultPeriod           = 10 * time.Second
	defaultFailureThreshold = 3
	// execGrace is added to an exec probe's timeout so that a runtime which
	// does not honour the timeout cannot hold a worker forever.
	execGrace = 2 * time.Second
)

// target is the container a probe or hook is run against.
type target struct {
	pod         *corev1.Pod
	container   *corev1.Container
	containerID string
	podIP       string
}

// handlers runs one probe or hook action; it is shared by workers and hooks.
type handlers struct {
	exec      Exec
	dial      DialFunc
	userAgent string
}

// probeTimeout returns the probe's timeout with the API default applied.
func probeTimeout(p *corev1.Probe) time.Duration {
	if p.TimeoutSeconds <= 0 {
		return defaultTimeout
	}
	return time.Duration(p.TimeoutSeconds) * time.Second
}

// run performs one probe and returns its raw result with a message saying why.
// Every error is a Failure: a probe that cannot be performed did not pass.
func (h *handlers) run(ctx context.Context, p *corev1.Probe, t target) (Result, string) {
	timeout := probeTimeout(p)
	switch {
	case p.Exec != nil:
		return h.execProbe(ctx, t.containerID, p.Exec.Command, timeout)
	case p.HTTPGet != nil:
		return h.httpProbe(ctx, p.HTTPGet, t, timeout)
	case p.TCPSocket != nil:
		return h.tcpProbe(ctx, p.TCPSocket, t, timeout)
	case p.GRPC != nil:
		return h.grpcProbe(ctx, p.GRPC, t, timeout)
	}
	return Failure, "probe has no handler"
}

// execProbe runs cmd in the container through the runtime.
func (h *handlers) execProbe(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (Result, string) {
	if h.exec == nil {
		return Failure, "exec probe: no runtime to exec in"
	}
	if len(cmd) == 0 {
		return Failure, "exec probe: no command"
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+execGrace)
	defer cancel()
	stdout, stderr, err := h.exec.ExecSync(ctx, containerID, cmd, timeout)
	out := string(stdout) + string(stderr)
	if err == nil {
		return Success, out
	}
	var exit interface{ ExitStatus() int }
	switch {
	case errors.As(err, &exit):
		return Failure, fmt.Sprintf("command %q exited with %d: %s", strings.Join(cmd, " "), exit.ExitStatus(), out)
	case isTimeout(err):
		return Failure, fmt.Sprintf("command %q timed out after %s", strings.Join(cmd, " "), timeout)
	}
	return Failure, fmt.Sprintf("exec %q: %v", strings.Join(cmd, " "), err)
}

// isTimeout reports whether err says a call ran out of time: a context
// deadline, a gRPC DeadlineExceeded, or cri-client's "timed out" error.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded {
		return true
	}
	var to interface{ Timeout() bool }
	if errors.As(err, &to) && to.Timeout() {
		return true
	}
	return strings.Contains(err.Error(), "timed out")
}

// tcpProbe passes when a TCP connection opens within the timeout.
func (h *handlers) tcpProbe(ctx context.Context, a *corev1.TCPSocketAction, t target, timeout time.Duration) (Result, string) {
	port, err := resolvePort(a.Port, t.container)
	if err != nil {
		return Failure, err.Error()
	}
	addr := net.JoinHostPort(hostOrPodIP(a.Host, t.podIP), strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := h.dialer()(ctx, "tcp", addr)
	if err != nil {
		return Failure, fmt.Sprintf("dial tcp %s: %v", addr, err)
	}
	_ = conn.Close()
	return Success, ""
}

func (h *handlers) dialer() DialFunc {
	if h.dial != nil {
		return h.dial
	}
	var d net.Dialer
	return d.DialContext
}

// hostOrPodIP picks the address a network probe or hook connects to: the
// action's host, else the pod IP, else the loopback address (host network).
func hostOrPodIP(host, podIP string) string {
	switch {
	case host != "":
		return host
	case podIP != "":
		return podIP
	}
	return "127.0.0.1"
}

// resolvePort turns a probe's port (a number or the name of one of the
// container's ports) into a port number.
func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	port := p.IntValue()
	if p.Type == intstr.String {
		port = 0
		if c != nil {
			for _, cp := range c.Ports {
				if cp.Name == p.StrVal {
					port = int(cp.ContainerPort)
					break
				}
			}
		}
		if port == 0 {
			n, err := strconv.Atoi(p.StrVal)
			if err != nil {
				return 0, fmt.Errorf("resolve port %q: no container port has that name", p.StrVal)
			}
			port = n
		}
	}
	if port <= 0 || port > 65535 {
		return 0, fmt.Errorf("resolve port %s: %d is out of range", p.String(), port)
	}
	return port, nil
}
