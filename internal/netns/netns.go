package netns

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/crib-dev/crib/internal/mount"
)

// Kind is a namespace type that can be pinned.
type Kind string

// The kinds a pod sandbox pins.
const (
	Net Kind = "net"
	IPC Kind = "ipc"
	UTS Kind = "uts"
)

var cloneFlag = map[Kind]int{
	Net: unix.CLONE_NEWNET,
	IPC: unix.CLONE_NEWIPC,
	UTS: unix.CLONE_NEWUTS,
}

// Request says which namespaces to create, where to pin them and how to set
// them up.
type Request struct {
	// Dir receives one file per kind, named after the kind.
	Dir string
	// Kinds to create; each gets a new namespace.
	Kinds []Kind
	// Hostname is set in the new UTS namespace, if one is made.
	Hostname string
	// Hold, when set, keeps the namespaces: each pin is a symlink to it,
	// not a bind mount.
	Hold Holder
}

// Pin creates the requested namespaces, pins them under req.Dir and returns
// their paths by kind. Loopback is brought up in a new network namespace.
func Pin(req Request) (map[Kind]string, error) {
	if len(req.Kinds) == 0 {
		return map[Kind]string{}, nil
	}
	if err := os.MkdirAll(req.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("pin namespaces: %w", err)
	}
	type result struct {
		paths map[Kind]string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		// The thread ends up inside the new namespaces: it is locked and
		// never unlocked, so the runtime discards it when this goroutine
		// returns.
		runtime.LockOSThread()
		paths, err := pinOnThread(req)
		done <- result{paths, err}
	}()
	r := <-done
	if r.err != nil {
		_ = Remove(req.Dir, req.Hold)
		return nil, r.err
	}
	return r.paths, nil
}

func pinOnThread(req Request) (map[Kind]string, error) {
	flags := 0
	for _, k := range req.Kinds {
		f, ok := cloneFlag[k]
		if !ok {
			return nil, fmt.Errorf("pin namespaces: unknown kind %q", k)
		}
		flags |= f
	}
	if err := unix.Unshare(flags); err != nil {
		return nil, fmt.Errorf("unshare namespaces: %w", err)
	}
	tid := unix.Gettid()
	paths := make(map[Kind]string, len(req.Kinds))
	for _, k := range req.Kinds {
		target := filepath.Join(req.Dir, string(k))
		src := fmt.Sprintf("/proc/%d/task/%d/ns/%s", os.Getpid(), tid, k)
		if err := pinFile(req.Hold, src, target); err != nil {
			return nil, fmt.Errorf("pin %s namespace: %w", k, err)
		}
		paths[k] = target
	}
	if _, ok := paths[UTS]; ok && req.Hostname != "" {
		if err := unix.Sethostname([]byte(req.Hostname)); err != nil {
			return nil, fmt.Errorf("set hostname %q: %w", req.Hostname, err)
		}
	}
	if _, ok := paths[Net]; ok {
		if err := loopbackUp(); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// loopbackUp sets IFF_UP on lo in the calling thread's network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring up loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bring up loopback: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up loopback: read flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring up loopback: set flags: %w", err)
	}
	return nil
}

// Remove unpins every namespace under dir, bind-mounted or held by hold,
// and deletes dir. A dir that does not exist is fine. The links go before
// the holder drops what they name: a dropped descriptor's number is the
// next put's, and a link left to it (a daemon killed in between) would
// open another pod's namespace.
func Remove(dir string, hold Holder) error {
	if err := mount.UnmountTree(dir); err != nil {
		return fmt.Errorf("unpin namespaces: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove namespace dir: %w", err)
	}
	if hold != nil {
		if _, err := hold.Drop(dir + "/"); err != nil {
			return fmt.Errorf("unpin namespaces: %w", err)
		}
	}
	return nil
}

// Do runs fn on a thread that has joined the network namespace at path, for
// code that must act inside a pod's network (a test, a probe). The thread is
// discarded afterwards.
func Do(path string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(path)
		if err != nil {
			errc <- fmt.Errorf("open netns %s: %w", path, err)
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("enter netns %s: %w", path, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}
