package nshold

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// requestTimeout bounds a request and its reply: a holder that is stopped
// or wedged fails the call rather than every pod operation behind it.
const requestTimeout = 10 * time.Second

// Client is a connection to a holder. Its calls are serialised: each waits
// for its reply, within requestTimeout.
type Client struct {
	mu   sync.Mutex
	conn *net.UnixConn
	pid  int
}

// Dial connects to the holder serving socket.
func Dial(socket string) (*Client, error) {
	conn, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: socket, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("connect to the namespace holder: %w", err)
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		conn.Close()
		return nil, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || credErr != nil {
		conn.Close()
		return nil, fmt.Errorf("namespace holder's pid: %w", errors.Join(err, credErr))
	}
	return &Client{conn: conn, pid: int(cred.Pid)}, nil
}

// Pid is the holder's process id.
func (c *Client) Pid() int { return c.pid }

// Close closes the connection; the holder keeps what it holds.
func (c *Client) Close() error { return c.conn.Close() }

// Path is the path through which the holder's descriptor n opens what it
// holds.
func (c *Client) Path(n int) string { return fmt.Sprintf("/proc/%d/fd/%d", c.pid, n) }

// Put hands fd to the holder under key (replacing what key held) and
// returns the path that opens it. The caller keeps, and closes, its fd.
func (c *Client) Put(key string, fd int) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.conn.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return "", err
	}
	if _, _, err := c.conn.WriteMsgUnix([]byte("put "+key), unix.UnixRights(fd), nil); err != nil {
		return "", fmt.Errorf("hand %s to the namespace holder: %w", key, err)
	}
	reply, err := c.read()
	if err != nil {
		return "", fmt.Errorf("hand %s to the namespace holder: %w", key, err)
	}
	n, err := strconv.Atoi(reply)
	if err != nil {
		return "", fmt.Errorf("hand %s to the namespace holder: bad reply %q", key, reply)
	}
	return c.Path(n), nil
}

// Drop has the holder close every descriptor whose key starts with prefix
// and returns how many it closed.
func (c *Client) Drop(prefix string) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.conn.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return 0, err
	}
	if _, err := c.conn.Write([]byte("drop " + prefix)); err != nil {
		return 0, fmt.Errorf("drop %s from the namespace holder: %w", prefix, err)
	}
	reply, err := c.read()
	if err != nil {
		return 0, fmt.Errorf("drop %s from the namespace holder: %w", prefix, err)
	}
	n, err := strconv.Atoi(reply)
	if err != nil {
		return 0, fmt.Errorf("drop %s from the namespace holder: bad reply %q", prefix, reply)
	}
	return n, nil
}

// List returns the holder's table: each key with the path that opens it.
func (c *Client) List() (map[string]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.conn.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return nil, err
	}
	if _, err := c.conn.Write([]byte("list")); err != nil {
		return nil, fmt.Errorf("list the namespace holder: %w", err)
	}
	out := map[string]string{}
	buf := make([]byte, maxPacket)
	for {
		n, err := c.conn.Read(buf)
		if err != nil {
			return nil, fmt.Errorf("list the namespace holder: %w", err)
		}
		line := string(buf[:n])
		if line == "end" {
			return out, nil
		}
		key, num, ok := strings.Cut(line, " ")
		fd, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("list the namespace holder: bad line %q", line)
		}
		out[key] = c.Path(fd)
	}
}

// read reads one reply and returns what follows its "ok ".
func (c *Client) read() (string, error) {
	buf := make([]byte, maxPacket)
	n, err := c.conn.Read(buf)
	if err != nil {
		return "", err
	}
	reply := string(buf[:n])
	if rest, ok := strings.CutPrefix(reply, "ok "); ok {
		return rest, nil
	}
	if msg, ok := strings.CutPrefix(reply, "error "); ok {
		return "", errors.New(msg)
	}
	return "", fmt.Errorf("bad reply %q", reply)
}
