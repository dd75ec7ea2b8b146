package netns

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// User is the kind of a pod's own user namespace. Pin never makes one:
// PinIn does, and makes the other kinds owned by it.
const User Kind = "user"

// UserNS is the id mapping of a user namespace: container ids to host ids.
type UserNS struct {
	UIDs []syscall.SysProcIDMap
	GIDs []syscall.SysProcIDMap
}

// Root is the host uid and gid of the namespace's root (container id 0).
func (u UserNS) Root() (uid, gid int) {
	for _, m := range u.UIDs {
		if m.ContainerID == 0 {
			uid = m.HostID
		}
	}
	for _, m := range u.GIDs {
		if m.ContainerID == 0 {
			gid = m.HostID
		}
	}
	return uid, gid
}

// PinIn starts cmd as the first process of a new user namespace mapped by
// user and of new namespaces of req.Kinds, which that user namespace owns
// (the kernel then lets the pod's root manage them: namespaced sysctls,
// sysfs, mqueue). It pins all of them under req.Dir, the user namespace
// as User, sets the hostname, brings up loopback, and returns their paths.
//
// A thread cannot enter a new user namespace in a Go process, so a child
// process has to make them. cmd stays running, the caller's to keep (as a
// pod's pause, when cmd also asks for a PID namespace) or to end; on error
// it has been killed and collected and nothing is left under req.Dir.
func PinIn(cmd *exec.Cmd, user UserNS, req Request) (map[Kind]string, error) {
	if len(user.UIDs) == 0 || len(user.GIDs) == 0 {
		return nil, fmt.Errorf("pin namespaces: a user namespace needs uid and gid mappings")
	}
	flags := uintptr(unix.CLONE_NEWUSER)
	for _, k := range req.Kinds {
		f, ok := cloneFlag[k]
		if !ok {
			return nil, fmt.Errorf("pin namespaces: unknown kind %q", k)
		}
		flags |= uintptr(f)
	}
	if err := os.MkdirAll(req.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("pin namespaces: %w", err)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	attr := cmd.SysProcAttr
	attr.Cloneflags |= flags
	attr.UidMappings, attr.GidMappings = user.UIDs, user.GIDs
	// The pod's processes call setgroups(2) for their supplementary groups.
	attr.GidMappingsEnableSetgroups = true
	// The pod's root: the host's root is not mapped in the namespace, and a
	// process whose uid is not mapped there has no capabilities in it.
	attr.Credential = &syscall.Credential{Uid: 0, Gid: 0}
	if err := cmd.Start(); err != nil {
		_ = Remove(req.Dir, req.Hold)
		return nil, fmt.Errorf("start the first process of the pod's user namespace: %w", err)
	}
	paths, err := pinFrom(cmd.Process.Pid, append([]Kind{User}, req.Kinds...), req)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = Remove(req.Dir, req.Hold)
		return nil, err
	}
	return paths, nil
}

// pinFrom pins the namespaces of kinds of process pid under req.Dir, then
// sets them up from a thread that joins them.
func pinFrom(pid int, kinds []Kind, req Request) (map[Kind]string, error) {
	paths := make(map[Kind]string, len(kinds))
	for _, k := range kinds {
		target := filepath.Join(req.Dir, string(k))
		if err := pinFile(req.Hold, fmt.Sprintf("/proc/%d/ns/%s", pid, k), target); err != nil {
			return nil, fmt.Errorf("pin %s namespace: %w", k, err)
		}
		paths[k] = target
	}
	if err := setUp(paths, req.Hostname); err != nil {
		return nil, err
	}
	return paths, nil
}

// setUp sets the hostname in the UTS namespace of paths and brings up
// loopback in its network namespace, on a thread that joins them and is
// discarded afterwards.
func setUp(paths map[Kind]string, hostname string) error {
	uts, hasUTS := paths[UTS]
	net, hasNet := paths[Net]
	if (!hasUTS || hostname == "") && !hasNet {
		return nil
	}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the runtime discards the thread, and the
		// namespaces it joined, when this goroutine returns.
		runtime.LockOSThread()
		if hasUTS && hostname != "" {
			if err := join(uts, unix.CLONE_NEWUTS); err != nil {
				errc <- err
				return
			}
			if err := unix.Sethostname([]byte(hostname)); err != nil {
				errc <- fmt.Errorf("set hostname %q: %w", hostname, err)
				return
			}
		}
		if hasNet {
			if err := join(net, unix.CLONE_NEWNET); err != nil {
				errc <- err
				return
			}
			if err := loopbackUp(); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	return <-errc
}

// join makes the calling thread enter the namespace pinned at path.
func join(path string, kind int) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open namespace %s: %w", path, err)
	}
	defer f.Close()
	if err := unix.Setns(int(f.Fd()), kind); err != nil {
		return fmt.Errorf("enter namespace %s: %w", path, err)
	}
	return nil
}
