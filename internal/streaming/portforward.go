package streaming

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/netns"
	"github.com/crib-dev/crib/internal/sandbox"
)

// dialTimeout bounds the connection to the pod's port.
const dialTimeout = 10 * time.Second

// PortForward connects stream to TCP port on the pod's loopback (inside
// its network namespace; on the host for a host-network pod) and copies
// both ways. The client's end of input half-closes the pod's connection;
// the session ends when the pod's side has closed or either copy failed.
func (r *Runtime) PortForward(ctx context.Context, podID string, port int32, stream io.ReadWriteCloser) error {
	if port <= 0 || port > 65535 {
		return fmt.Errorf("port %d is out of range: %w", port, errdefs.ErrInvalidArgument)
	}
	sb, err := r.sandboxes.Get(podID)
	if err != nil {
		return err
	}
	if sb.State != sandbox.Ready {
		return fmt.Errorf("sandbox %s is %s, not ready: %w", sb.ID, sb.State, errdefs.ErrFailedPrecondition)
	}
	conn, err := dialPod(ctx, sb.NetNS, int(port))
	if err != nil {
		return fmt.Errorf("port forward to sandbox %s: %w", sb.ID, err)
	}
	return pipe(conn, stream)
}

// dialPod dials port on loopback in the network namespace at nsPath, or
// on the host when nsPath is empty. IPv4 first, then IPv6.
func dialPod(ctx context.Context, nsPath string, port int) (*net.TCPConn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	var conn net.Conn
	dial := func() error {
		var d net.Dialer
		var errs []error
		for _, host := range []string{"127.0.0.1", "::1"} {
			c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			if err == nil {
				conn = c
				return nil
			}
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	var err error
	if nsPath == "" {
		err = dial()
	} else {
		// The socket belongs to the namespace of the thread that made it,
		// for its whole life.
		err = netns.Do(nsPath, dial)
	}
	if err != nil {
		return nil, err
	}
	return conn.(*net.TCPConn), nil
}

// pipe copies between conn and stream until the pod's side is done, then
// closes conn. An error is returned only when a copy failed.
func pipe(conn *net.TCPConn, stream io.ReadWriteCloser) error {
	defer conn.Close()
	inDone := make(chan error, 1)
	go func() {
		_, err := io.Copy(conn, stream)
		if err == nil {
			// The client will send no more: tell the pod, which may still
			// answer.
			_ = conn.CloseWrite()
		}
		inDone <- err
	}()
	outDone := make(chan error, 1)
	go func() {
		_, err := io.Copy(stream, conn)
		outDone <- err
	}()
	select {
	case err := <-outDone:
		// The pod closed: the client's input has nowhere to go. Closing
		// the connection ends the input copy on its next write; the
		// library closes the stream when we return.
		return err
	case err := <-inDone:
		if err != nil {
			return err
		}
		return <-outDone
	}
}
