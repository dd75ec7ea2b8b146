package monitor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
)

// Client talks to one monitor over its control socket. Each call opens its
// own connection, so a Client is safe for concurrent use and survives
// nothing but the socket path.
type Client struct {
	socket string
}

// Dial checks that a monitor answers at socket and returns its client. A
// monitor that is gone (no socket, connection refused) yields
// errdefs.ErrUnavailable: the caller should then look for the exit file
// (ReadExit), and without one consider the container's state unknown.
func Dial(ctx context.Context, socket string) (*Client, error) {
	conn, err := dial(ctx, socket)
	if err != nil {
		return nil, err
	}
	_ = conn.Close()
	return &Client{socket: socket}, nil
}

func dial(ctx context.Context, socket string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("dial monitor %s: %w: %w", socket, err, errdefs.ErrUnavailable)
		}
		return nil, fmt.Errorf("dial monitor %s: %w", socket, err)
	}
	return conn, nil
}

// Wait blocks until the container exited and returns its exit record. A
// monitor that dies or vanishes before answering yields
// errdefs.ErrUnavailable (see Dial).
func (c *Client) Wait(ctx context.Context) (Exit, error) {
	r, err := c.call(ctx, cmdWait)
	if err != nil {
		return Exit{}, fmt.Errorf("wait for container exit: %w", err)
	}
	if r.Exit == nil {
		return Exit{}, fmt.Errorf("wait for container exit: monitor sent no exit record")
	}
	return *r.Exit, nil
}

// ReopenLog makes the monitor reopen the CRI log file.
func (c *Client) ReopenLog(ctx context.Context) error {
	if _, err := c.call(ctx, cmdReopenLog); err != nil {
		return fmt.Errorf("reopen container log: %w", err)
	}
	return nil
}

// SignalInit sends sig to the container's init through the pidfd its
// monitor (at socket) holds, so that it cannot reach another process that
// got the init's pid; with all, to all the container's processes, which
// the monitor does only as a SIGKILL of the init of the container's own
// PID namespace. An init that has exited yields errdefs.ErrNotFound. Any
// other error (a monitor that cannot do it, one older than this request,
// one gone) leaves the signal to the OCI runtime's kill.
func SignalInit(ctx context.Context, socket string, sig syscall.Signal, all bool) error {
	c := &Client{socket: socket}
	req := fmt.Sprintf("%s %d", cmdSignal, int(sig))
	if all {
		req += " " + signalAll
	}
	r, err := c.call(ctx, req)
	if err != nil {
		return fmt.Errorf("signal container init: %w", err)
	}
	if r.Exited {
		return fmt.Errorf("signal container init: %w", errInitExited)
	}
	return nil
}

// call sends one command and decodes the answer.
func (c *Client) call(ctx context.Context, cmd string) (reply, error) {
	conn, err := dial(ctx, c.socket)
	if err != nil {
		return reply{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Write([]byte(cmd + "\n")); err != nil {
		return reply{}, c.connError(ctx, err)
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return reply{}, c.connError(ctx, err)
	}
	var r reply
	if err := json.Unmarshal(line, &r); err != nil {
		return reply{}, fmt.Errorf("decode monitor reply: %w", err)
	}
	if r.Error != "" {
		return r, fmt.Errorf("monitor: %s", r.Error)
	}
	return r, nil
}

// connError classifies a failure on an established connection: the
// caller's context, or a monitor that went away.
func (c *Client) connError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("monitor %s closed the connection: %w: %w", c.socket, err, errdefs.ErrUnavailable)
}

// WaitExit waits for the container's exit through the monitor at socket
// and, when the monitor is gone, falls back on the exit file. Only a
// monitor gone without an exit file yields errdefs.ErrUnavailable.
func WaitExit(ctx context.Context, socket, exitFile string) (Exit, error) {
	c := &Client{socket: socket}
	e, err := c.Wait(ctx)
	if err == nil || !errdefs.IsUnavailable(err) {
		return e, err
	}
	e, ok, rerr := ReadExit(exitFile)
	if rerr != nil {
		return Exit{}, rerr
	}
	if !ok {
		return Exit{}, err
	}
	return e, nil
}
