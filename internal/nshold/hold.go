// Package nshold keeps pods' namespaces open as descriptors of one process
// per node, so that pinning them adds nothing to the host's mount table
// (issue #26). A runtime joins such a namespace through /proc/PID/fd/N of the
// holder, or a symlink to it, as runc 1.1 and 1.5 and crun do
// (docs/perf/density-2026-11-27.md).
//
// The holder is `crib-monitor hold SOCKET`: it serves requests on a
// SOCK_SEQPACKET unix socket, one packet per request and per reply line:
//
//	put KEY      (with one descriptor as SCM_RIGHTS) -> "ok N", N its number here
//	drop PREFIX  -> "ok COUNT", the descriptors whose key starts with PREFIX closed
//	list         -> "KEY N" per descriptor, then "end"
//
// It outlives the daemon that started it, as monitors do, and exits once a
// drop took the last descriptor it held, or it holds nothing and its last
// client went: a node without pods has no holder.
package nshold

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// maxKey bounds a key; keys name a sandbox and a kind.
const maxKey = 256

// maxPacket is the largest request: a verb, a key and a newline.
const maxPacket = 512

// Holder is the table of held descriptors and the connections serving it.
type Holder struct {
	log *slog.Logger

	mu    sync.Mutex
	held  map[string]*os.File
	conns int
	done  chan struct{}
	ended bool
}

// NewHolder returns an empty holder.
func NewHolder(log *slog.Logger) *Holder {
	return &Holder{log: log, held: map[string]*os.File{}, done: make(chan struct{})}
}

// Serve accepts connections on ln until the holder is empty with no client
// connected (after at least one connection), or ln fails.
func (h *Holder) Serve(ln *net.UnixListener) error {
	errc := make(chan error, 1)
	go func() {
		for {
			conn, err := ln.AcceptUnix()
			if err != nil {
				errc <- err
				return
			}
			h.mu.Lock()
			h.conns++
			h.mu.Unlock()
			go h.serveConn(conn)
		}
	}()
	select {
	case <-h.done:
		ln.Close()
		return nil
	case err := <-errc:
		return fmt.Errorf("accept: %w", err)
	}
}

// ending reports whether Serve is ending.
func (h *Holder) ending() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ended
}

// endIfIdle ends Serve when nothing is held and no client is connected.
// The caller holds h.mu.
func (h *Holder) endIfIdle() {
	if h.conns == 0 {
		h.endIfEmptied()
	}
}

// endIfEmptied ends Serve when nothing is held: a drop took the last
// descriptor, so no process of the node needs the holder until a next pod,
// whose daemon starts a new one. The caller holds h.mu.
func (h *Holder) endIfEmptied() {
	if !h.ended && len(h.held) == 0 {
		h.ended = true
		close(h.done)
	}
}

func (h *Holder) serveConn(conn *net.UnixConn) {
	defer func() {
		conn.Close()
		h.mu.Lock()
		h.conns--
		h.endIfIdle()
		h.mu.Unlock()
	}()
	buf := make([]byte, maxPacket)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, flags, _, err := conn.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			return
		}
		fds, ferr := receivedFds(oob[:oobn])
		var replies []string
		switch {
		case ferr != nil:
			replies = []string{"error " + ferr.Error()}
		case flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0:
			replies = []string{"error request too long"}
		case h.ending():
			// A holder that emptied is on its way out: what it took now
			// would go with it. The client sees the connection end and
			// starts a new holder.
			closeAll(fds)
			return
		default:
			replies = h.handle(strings.TrimSuffix(string(buf[:n]), "\n"), fds)
			fds = nil // handle took them
		}
		closeAll(fds)
		for _, r := range replies {
			if _, err := conn.Write([]byte(r)); err != nil {
				return
			}
		}
	}
}

// handle serves one request and returns its reply packets. It owns fds.
func (h *Holder) handle(req string, fds []int) []string {
	verb, arg, _ := strings.Cut(req, " ")
	if verb != "put" {
		closeAll(fds)
		fds = nil
	}
	switch verb {
	case "put":
		if err := checkKey(arg); err != nil {
			closeAll(fds)
			return []string{"error " + err.Error()}
		}
		if len(fds) != 1 {
			closeAll(fds)
			return []string{fmt.Sprintf("error put takes one descriptor, got %d", len(fds))}
		}
		f := os.NewFile(uintptr(fds[0]), arg)
		h.mu.Lock()
		old := h.held[arg]
		h.held[arg] = f
		h.mu.Unlock()
		if old != nil {
			old.Close()
		}
		return []string{"ok " + strconv.Itoa(fds[0])}
	case "drop":
		if arg == "" {
			return []string{"error drop needs a prefix"}
		}
		h.mu.Lock()
		var gone []*os.File
		for k, f := range h.held {
			if strings.HasPrefix(k, arg) {
				gone = append(gone, f)
				delete(h.held, k)
			}
		}
		h.mu.Unlock()
		for _, f := range gone {
			f.Close()
		}
		if len(gone) > 0 {
			h.mu.Lock()
			h.endIfEmptied()
			h.mu.Unlock()
		}
		return []string{"ok " + strconv.Itoa(len(gone))}
	case "list":
		h.mu.Lock()
		out := make([]string, 0, len(h.held)+1)
		for k, f := range h.held {
			out = append(out, k+" "+strconv.Itoa(int(f.Fd())))
		}
		h.mu.Unlock()
		sort.Strings(out)
		return append(out, "end")
	default:
		return []string{fmt.Sprintf("error unknown request %q", verb)}
	}
}

func checkKey(k string) error {
	switch {
	case k == "":
		return errors.New("empty key")
	case len(k) > maxKey:
		return fmt.Errorf("key longer than %d bytes", maxKey)
	case strings.ContainsAny(k, " \t\n\x00"):
		return fmt.Errorf("key %q holds a space or a control character", k)
	}
	return nil
}

// receivedFds parses the descriptors of an SCM_RIGHTS message, marking
// them close-on-exec.
func receivedFds(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("parse control message: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			closeAll(fds)
			return nil, fmt.Errorf("parse descriptors: %w", err)
		}
		fds = append(fds, got...)
	}
	for _, fd := range fds {
		unix.CloseOnExec(fd)
	}
	return fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
