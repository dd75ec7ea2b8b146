package prober

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// hookHTTPTimeout bounds an HTTP hook that the caller's context does not.
const hookHTTPTimeout = 2 * time.Minute

// HookOption changes how RunHandler runs a hook.
type HookOption func(*hookOptions)

type hookOptions struct {
	clock     clock.Clock
	dial      DialFunc
	userAgent string
}

// WithClock makes Sleep hooks wait on c instead of the real clock.
func WithClock(c clock.Clock) HookOption {
	return func(o *hookOptions) {
		if c != nil {
			o.clock = c
		}
	}
}

// WithDial makes HTTP hooks connect through dial.
func WithDial(dial DialFunc) HookOption {
	return func(o *hookOptions) { o.dial = dial }
}

// WithUserAgent sets the User-Agent of HTTP hooks.
func WithUserAgent(ua string) HookOption {
	return func(o *hookOptions) {
		if ua != "" {
			o.userAgent = ua
		}
	}
}

// HookError says which lifecycle hook of which container failed, and why.
// The agent turns it into the kubelet's FailedPostStartHook or
// FailedPreStopHook event (see Reason).
type HookError struct {
	// Hook is "PostStart", "PreStop", or "" when the handler is neither of
	// the container's hooks.
	Hook string
	// Action describes the handler: `exec [cmd]`, `http GET url`, `sleep 5s`.
	Action    string
	Container string
	Pod       string
	// Output is what an exec hook printed.
	Output string
	Err    error
}

func (e *HookError) Error() string {
	hook := "lifecycle"
	if e.Hook != "" {
		hook = e.Hook
	}
	msg := fmt.Sprintf("run %s hook (%s) of container %q in pod %q: %v", hook, e.Action, e.Container, e.Pod, e.Err)
	if e.Output != "" {
		msg += fmt.Sprintf(", output: %q", truncate(e.Output, 1024))
	}
	return msg
}

func (e *HookError) Unwrap() error { return e.Err }

// Reason returns the kubelet's event reason for the failure.
func (e *HookError) Reason() string {
	switch e.Hook {
	case "PostStart":
		return "FailedPostStartHook"
	case "PreStop":
		return "FailedPreStopHook"
	}
	return "FailedLifecycleHook"
}

// RunHandler runs one lifecycle handler (postStart or preStop) of container c:
// an exec through exec (no timeout of its own: ctx bounds it), an HTTP GET
// that must answer 2xx or 3xx, or a sleep on the option clock that ctx cuts
// short. TCPSocket handlers are deprecated for hooks and are rejected, as the
// kubelet does. A failure is a *HookError.
func RunHandler(ctx context.Context, exec Exec, pod *corev1.Pod, c *corev1.Container, containerID, podIP string, h *corev1.LifecycleHandler, opts ...HookOption) error {
	o := hookOptions{clock: clock.RealClock{}, userAgent: DefaultUserAgent}
	for _, opt := range opts {
		opt(&o)
	}
	herr := &HookError{Hook: hookName(c, h), Pod: podName(pod)}
	if c != nil {
		herr.Container = c.Name
	}
	fail := func(action string, err error) error {
		herr.Action, herr.Err = action, err
		return herr
	}
	if h == nil {
		return fail("none", fmt.Errorf("no handler: %w", errdefs.ErrInvalidArgument))
	}
	switch {
	case h.Exec != nil:
		action := fmt.Sprintf("exec %v", h.Exec.Command)
		if exec == nil {
			return fail(action, fmt.Errorf("no runtime to exec in: %w", errdefs.ErrFailedPrecondition))
		}
		if len(h.Exec.Command) == 0 {
			return fail(action, fmt.Errorf("no command: %w", errdefs.ErrInvalidArgument))
		}
		stdout, stderr, err := exec.ExecSync(ctx, containerID, h.Exec.Command, 0)
		if err != nil {
			herr.Output = string(stdout) + string(stderr)
			return fail(action, err)
		}
		return nil
	case h.HTTPGet != nil:
		hd := handlers{dial: o.dial, userAgent: o.userAgent}
		t := target{pod: pod, container: c, containerID: containerID, podIP: podIP}
		action := "http GET " + h.HTTPGet.Path
		if u, err := actionURL(h.HTTPGet, t); err == nil {
			action = "http GET " + u.String()
		}
		res, err := hd.httpGet(ctx, h.HTTPGet, t, hookHTTPTimeout)
		if err != nil {
			return fail(action, err)
		}
		if res.statusCode < 200 || res.statusCode >= 400 {
			return fail(action, fmt.Errorf("status %d, body: %s", res.statusCode, strings.TrimSpace(truncate(res.body, 512))))
		}
		return nil
	case h.Sleep != nil:
		d := time.Duration(h.Sleep.Seconds) * time.Second
		action := fmt.Sprintf("sleep %s", d)
		if d <= 0 {
			return nil
		}
		t := o.clock.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C():
			return nil
		case <-ctx.Done():
			return fail(action, fmt.Errorf("container terminated before the sleep ended: %w", ctx.Err()))
		}
	case h.TCPSocket != nil:
		return fail(fmt.Sprintf("tcp %s", h.TCPSocket.Port.String()),
			fmt.Errorf("tcpSocket handlers are not supported for lifecycle hooks: %w", errdefs.ErrInvalidArgument))
	}
	return fail("none", fmt.Errorf("handler has no action: %w", errdefs.ErrInvalidArgument))
}

// hookName tells which of the container's hooks h is.
func hookName(c *corev1.Container, h *corev1.LifecycleHandler) string {
	if c == nil || c.Lifecycle == nil || h == nil {
		return ""
	}
	switch h {
	case c.Lifecycle.PostStart:
		return "PostStart"
	case c.Lifecycle.PreStop:
		return "PreStop"
	}
	return ""
}

func podName(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	return fmt.Sprintf("%s/%s", pod.Namespace, pod.Name)
}
