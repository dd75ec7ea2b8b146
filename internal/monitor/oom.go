package monitor

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cgroupRoot is where cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// oomFile names the file and key that count OOM kills in one memory
// cgroup.
type oomFile struct {
	path string
	key  string
}

// memoryCgroup finds the memory cgroup of pid from /proc/<pid>/cgroup: the
// v1 memory hierarchy when there is one, the unified hierarchy otherwise.
// It returns a zero oomFile when none is found.
func memoryCgroup(pid int) oomFile {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return oomFile{}
	}
	return memoryCgroupFrom(string(b), cgroupRoot)
}

func memoryCgroupFrom(procCgroup, root string) oomFile {
	var unified string
	sc := bufio.NewScanner(strings.NewReader(procCgroup))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				return oomFile{path: filepath.Join(root, "memory", parts[2], "memory.oom_control"), key: "oom_kill"}
			}
		}
	}
	if unified == "" {
		return oomFile{}
	}
	return oomFile{path: filepath.Join(root, unified, "memory.events"), key: "oom_kill"}
}

// killed reports whether the cgroup counted at least one OOM kill. Missing
// files (cgroup already gone, controller absent) read as false.
func (o oomFile) killed() bool {
	n, err := o.count()
	return err == nil && n > 0
}

// count reads the file's OOM kill count.
func (o oomFile) count() (uint64, error) {
	if o.path == "" {
		return 0, os.ErrNotExist
	}
	b, err := os.ReadFile(o.path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == o.key {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s", o.path, o.key)
}

// oomWatch remembers an OOM kill of a container's cgroup seen while the
// cgroup exists. On cgroup v2 it watches memory.events with inotify, as
// containerd's shim does: under the systemd driver the container's scope,
// and its memory.events with it, is removed as soon as the last process
// exits, often before the monitor has reaped the init to read it. As the
// kernel may drop a change notice it had delayed when the cgroup goes, the
// parent's hierarchical count is the last resort (see Killed).
type oomWatch struct {
	file   oomFile
	killed atomic.Bool
	// done is closed when follow returns; nil without a watch.
	done chan struct{}
	// parent is the parent cgroup's memory.events and its oom_kill count
	// when the watch began.
	parent      oomFile
	parentKills uint64
}

// watchOOM starts watching the memory cgroup of pid. Without inotify, or
// on cgroup v1 (whose cgroup stays until the runtime deletes the
// container), Killed reads the file at exit only.
func watchOOM(pid int) *oomWatch {
	w := &oomWatch{file: memoryCgroup(pid)}
	if filepath.Base(w.file.path) != "memory.events" {
		return w
	}
	w.parent = oomFile{path: filepath.Join(filepath.Dir(filepath.Dir(w.file.path)), "memory.events"), key: "oom_kill"}
	w.parentKills, _ = w.parent.count()
	w.watch()
	return w
}

// watch starts following w.file with inotify, when it can.
func (w *oomWatch) watch() {
	// Non-blocking, so that its reads wait in the Go runtime's poller: a
	// blocking read would hold an OS thread of the monitor for the
	// container's whole life.
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return
	}
	if _, err := unix.InotifyAddWatch(fd, w.file.path, unix.IN_MODIFY); err != nil {
		unix.Close(fd)
		return
	}
	events := os.NewFile(uintptr(fd), "inotify")
	// A kill before the watch was in place is counted already.
	if w.file.killed() {
		w.killed.Store(true)
	}
	w.done = make(chan struct{})
	go w.follow(events)
}

// follow reads memory.events at each change until the file goes (the
// watch is then dropped) or a kill is seen.
func (w *oomWatch) follow(events *os.File) {
	defer close(w.done)
	defer events.Close()
	buf := make([]byte, 4096)
	for {
		n, err := events.Read(buf)
		if err != nil || n <= 0 {
			return
		}
		if w.file.killed() {
			w.killed.Store(true)
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&unix.IN_IGNORED != 0 {
				return
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// oomSettle is how long Killed waits for the watch to see the cgroup go.
const oomSettle = 200 * time.Millisecond

// Killed reports whether the cgroup counted an OOM kill: seen by the
// watch, or in the file if it is still there. When the file is gone
// unread and the init died of SIGKILL, an OOM kill counted by the parent
// (the pod's cgroup, which counts its children's) while the container ran
// is taken as the container's: only a sibling killed for memory in the
// same span, while this one was killed otherwise, is mistaken.
func (w *oomWatch) Killed(sigkilled bool) bool {
	if w.killed.Load() || w.file.killed() {
		return true
	}
	if w.done == nil || !sigkilled {
		return false
	}
	select {
	case <-w.done:
	case <-time.After(oomSettle):
	}
	if w.killed.Load() {
		return true
	}
	if _, err := os.Stat(w.file.path); err == nil {
		return false
	}
	n, err := w.parent.count()
	return err == nil && n > w.parentKills
}
