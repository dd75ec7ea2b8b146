package cgroupfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Hierarchies are the cgroup trees found under a cgroup file system root.
type Hierarchies struct {
	Unified bool
	// Roots are the hierarchies' root directories: the root itself on v2,
	// one directory per mounted hierarchy on v1.
	Roots []string
}

// wantControllers are the v2 controllers enabled for the pod cgroups.
var wantControllers = []string{"cpu", "cpuset", "memory", "pids", "io", "hugetlb"}

// Find reads which cgroup version fs holds and where its
// hierarchies are: v2 when fs has a cgroup.controllers file, otherwise
// every directory under fs with a cgroup.procs file (symlinks to the same
// mount counted once).
func Find(fs string) (Hierarchies, error) {
	if Exists(filepath.Join(fs, "cgroup.controllers")) {
		return Hierarchies{Unified: true, Roots: []string{fs}}, nil
	}
	entries, err := os.ReadDir(fs)
	if err != nil {
		return Hierarchies{}, fmt.Errorf("list cgroup hierarchies: %w", err)
	}
	var h Hierarchies
	seen := map[string]bool{}
	for _, e := range entries {
		p := filepath.Join(fs, e.Name())
		real, err := filepath.EvalSymlinks(p)
		if err != nil || seen[real] || !Exists(filepath.Join(real, "cgroup.procs")) {
			continue
		}
		seen[real] = true
		h.Roots = append(h.Roots, real)
	}
	if len(h.Roots) == 0 {
		return Hierarchies{}, fmt.Errorf("list cgroup hierarchies: no cgroup hierarchy under %s", fs)
	}
	return h, nil
}

// With is the root of the hierarchy whose root directory has the file
// (the v1 hierarchy of a controller, by one of its knobs), or "".
func (h Hierarchies) With(file string) string {
	for _, r := range h.Roots {
		if Exists(filepath.Join(r, file)) {
			return r
		}
	}
	return ""
}

func Exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// MkdirLevels creates the directories of levels (paths below root, the
// outermost first) that do not exist yet. On v2 it enables the parent's
// controllers for each level first; on v1 it gives a new cpuset cgroup
// its parent's cpus and mems, without which no task could join it.
func (h Hierarchies) MkdirLevels(root string, levels []string) error {
	cpuset := !h.Unified && Exists(filepath.Join(root, "cpuset.cpus"))
	for _, l := range levels {
		dir := filepath.Join(root, l)
		parent := filepath.Dir(dir)
		if h.Unified {
			if err := enableControllers(parent); err != nil {
				return err
			}
		}
		if !Exists(dir) {
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("create cgroup %s: %w", dir, err)
			}
		}
		if cpuset { // also for an existing dir: a crash may have cut its setup short
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if err := Inherit(parent, dir, f); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// enableControllers enables in dir's cgroup.subtree_control those of
// wantControllers that dir has. A controller the kernel refuses is left
// out; the knob writes that need it fail later with the reason.
func enableControllers(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read cgroup controllers of %s: %w", dir, err)
	}
	have := map[string]bool{}
	for _, c := range strings.Fields(string(data)) {
		have[c] = true
	}
	var add []string
	for _, c := range wantControllers {
		if have[c] {
			add = append(add, "+"+c)
		}
	}
	if len(add) == 0 {
		return nil
	}
	file := filepath.Join(dir, "cgroup.subtree_control")
	if WriteFile(file, strings.Join(add, " ")) == nil {
		return nil
	}
	for _, a := range add {
		_ = WriteFile(file, a) // best effort, see above
	}
	return nil
}

// Inherit copies a cpuset file from parent to dir when dir's is empty.
func Inherit(parent, dir, file string) error {
	cur, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s of %s: %w", file, dir, err)
	}
	if len(bytes.TrimSpace(cur)) > 0 {
		return nil
	}
	val, err := os.ReadFile(filepath.Join(parent, file))
	if err != nil {
		return fmt.Errorf("read %s of %s: %w", file, parent, err)
	}
	return WriteFile(filepath.Join(dir, file), strings.TrimSpace(string(val)))
}

// WriteFile writes a cgroup knob. O_CREATE is harmless on cgroupfs, where
// the knobs exist, and lets tests run on a plain directory.
func WriteFile(path, value string) error {
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("write %q to %s: %w", value, path, err)
	}
	return nil
}

// RemoveTree removes the cgroup rel (a path below the hierarchies' roots
// under fs) and every cgroup below it, deepest first, from every hierarchy
// that has it. Processes still in them are killed first: it is for the
// cgroups of a pod or container being torn down, which may hold what a
// runtime killed half-way through its work left there. A cgroup that does
// not exist is fine.
func RemoveTree(fs, rel string) error {
	h, err := Find(fs)
	if err != nil {
		return err
	}
	return h.RemoveTree(rel)
}

// RemoveTree is RemoveTree in the hierarchies h, for a caller that found
// them once: finding them costs a look at every entry of the root.
func (h Hierarchies) RemoveTree(rel string) error {
	var errs []error
	for _, root := range h.Roots {
		top := filepath.Join(root, rel)
		if !Exists(top) {
			continue
		}
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := removeCgroup(dirs[i]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeCgroup kills what is left in the cgroup dir and removes it,
// waiting a little for the killed processes to leave it.
func removeCgroup(dir string) error {
	var err error
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if procs, rerr := os.ReadFile(filepath.Join(dir, "cgroup.procs")); rerr == nil {
			for _, f := range strings.Fields(string(procs)) {
				if pid, perr := strconv.Atoi(f); perr == nil && pid > 0 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		err = os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
	}
}
