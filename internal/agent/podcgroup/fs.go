package podcgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// hierarchies are the cgroup trees found under Config.FS.
type hierarchies struct {
	unified bool
	// roots are the hierarchies' root directories: Config.FS itself on v2,
	// one directory per mounted hierarchy on v1.
	roots []string
}

// wantControllers are the v2 controllers enabled for the pod cgroups.
var wantControllers = []string{"cpu", "cpuset", "memory", "pids", "io", "hugetlb"}

// findHierarchies reads which cgroup version fs holds and where its
// hierarchies are: v2 when fs has a cgroup.controllers file, otherwise
// every directory under fs with a cgroup.procs file (symlinks to the same
// mount counted once).
func findHierarchies(fs string) (hierarchies, error) {
	if exists(filepath.Join(fs, "cgroup.controllers")) {
		return hierarchies{unified: true, roots: []string{fs}}, nil
	}
	entries, err := os.ReadDir(fs)
	if err != nil {
		return hierarchies{}, fmt.Errorf("list cgroup hierarchies: %w", err)
	}
	var h hierarchies
	seen := map[string]bool{}
	for _, e := range entries {
		p := filepath.Join(fs, e.Name())
		real, err := filepath.EvalSymlinks(p)
		if err != nil || seen[real] || !exists(filepath.Join(real, "cgroup.procs")) {
			continue
		}
		seen[real] = true
		h.roots = append(h.roots, real)
	}
	if len(h.roots) == 0 {
		return hierarchies{}, fmt.Errorf("list cgroup hierarchies: no cgroup hierarchy under %s", fs)
	}
	return h, nil
}

// with is the root of the hierarchy whose root directory has the file
// (the v1 hierarchy of a controller, by one of its knobs), or "".
func (h hierarchies) with(file string) string {
	for _, r := range h.roots {
		if exists(filepath.Join(r, file)) {
			return r
		}
	}
	return ""
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// mkdirLevels creates the directories of levels (paths below root, the
// outermost first) that do not exist yet. On v2 it enables the parent's
// controllers for each level first; on v1 it gives a new cpuset cgroup
// its parent's cpus and mems, without which no task could join it.
func (h hierarchies) mkdirLevels(root string, levels []string) error {
	cpuset := !h.unified && exists(filepath.Join(root, "cpuset.cpus"))
	for _, l := range levels {
		dir := filepath.Join(root, l)
		parent := filepath.Dir(dir)
		if h.unified {
			if err := enableControllers(parent); err != nil {
				return err
			}
		}
		if !exists(dir) {
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("create cgroup %s: %w", dir, err)
			}
		}
		if cpuset { // also for an existing dir: a crash may have cut its setup short
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if err := inherit(parent, dir, f); err != nil {
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
	if writeFile(file, strings.Join(add, " ")) == nil {
		return nil
	}
	for _, a := range add {
		_ = writeFile(file, a) // best effort, see above
	}
	return nil
}

// inherit copies a cpuset file from parent to dir when dir's is empty.
func inherit(parent, dir, file string) error {
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
	return writeFile(filepath.Join(dir, file), strings.TrimSpace(string(val)))
}

// writeFile writes a cgroup knob. O_CREATE is harmless on cgroupfs, where
// the knobs exist, and lets tests run on a plain directory.
func writeFile(path, value string) error {
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("write %q to %s: %w", value, path, err)
	}
	return nil
}

// readPids lists the processes of the cgroup dir (not its children); a
// cgroup without cgroup.procs has none.
func readPids(dir string) ([]int, error) {
	f, err := os.Open(filepath.Join(dir, "cgroup.procs"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read processes of cgroup %s: %w", dir, err)
	}
	defer f.Close()
	var pids []int
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" {
			continue
		}
		pid, err := strconv.Atoi(line)
		if err != nil {
			return nil, fmt.Errorf("read processes of cgroup %s: bad pid %q", dir, line)
		}
		pids = append(pids, pid)
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("read processes of cgroup %s: %w", dir, err)
	}
	return pids, nil
}
