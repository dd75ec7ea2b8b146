package nshold

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// Main is the body of `crib-monitor hold SOCKET`. It returns the process
// exit status.
func Main(args []string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "nshold")
	if len(args) != 1 {
		log.Error("usage: crib-monitor hold SOCKET")
		return 2
	}
	ln, err := Listen(args[0])
	if err != nil {
		log.Error("listen", "err", err)
		return 1
	}
	if err := NewHolder(log).Serve(ln); err != nil {
		log.Error("serve", "err", err)
		return 1
	}
	return 0
}

// Listen binds the holder's socket, readable by root alone. A socket left
// by a holder that is gone is replaced; one a holder still serves is not.
func Listen(socket string) (*net.UnixListener, error) {
	if c, err := Dial(socket); err == nil {
		c.Close()
		return nil, fmt.Errorf("%s: a holder serves it already", socket)
	}
	if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	old := unix.Umask(0o077)
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: socket, Net: "unixpacket"})
	unix.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", socket, err)
	}
	return ln, nil
}

// CheckPaths reports why a holder cannot serve on socket with keys as
// long as longestKey, if it cannot: a unix socket's path has at most 107
// bytes, and a key at most maxKey, without spaces.
func CheckPaths(socket, longestKey string) error {
	if len(socket) > len(unix.RawSockaddrUnix{}.Path)-1 {
		return fmt.Errorf("socket path %s is longer than a unix socket's %d bytes", socket, len(unix.RawSockaddrUnix{}.Path)-1)
	}
	return checkKey(longestKey)
}
