package container

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/kernelstats"
)

// checkRestoredCgroup says whether the restored container whose init is pid
// lives in its own cgroup. The runtime tells CRIU where the new container's
// cgroups are; runc 1.1 does so on cgroup v1 only, so on a cgroup v2 host
// CRIU puts the processes back in the checkpointed container's cgroup, where
// neither the new container's limits nor its stats nor its removal reach
// them. Such a restore is refused (FailedPrecondition) rather than kept.
func checkRestoredCgroup(pid int, cgroupsPath string, systemd, v2 bool) error {
	want, err := kernelstats.GroupPath(cgroupsPath, systemd)
	if err != nil {
		return err
	}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if errors.Is(err, fs.ErrNotExist) {
		// Already exited (and reaped): its exit is the container's,
		// which the watch records.
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the restored process's cgroup: %w", err)
	}
	defer f.Close()
	got, err := procCgroup(f, v2)
	if err != nil {
		return fmt.Errorf("read the restored process's cgroup: %w", err)
	}
	if !withinCgroup(got, want) {
		return fmt.Errorf("the runtime restored the container's processes in cgroup %s, not in the container's own %s (on cgroup v2 a restore needs a runtime that gives CRIU the new cgroup root: runc 1.1 does not, a current runc or crun does): %w",
			got, want, errdefs.ErrFailedPrecondition)
	}
	return nil
}

// withinCgroup says whether cgroup got is want or below it: an init may
// move itself below its cgroup (systemd as PID 1 into init.scope, a nested
// runtime into a child of its own) and is still in its container's.
func withinCgroup(got, want string) bool {
	return got == want || strings.HasPrefix(got, want+"/")
}

// procCgroup is the cgroup a /proc/PID/cgroup file names: the unified
// hierarchy's on cgroup v2, the memory controller's on v1 (every controller
// the runtime manages is placed alike).
func procCgroup(r io.Reader, v2 bool) (string, error) {
	legacy, unified, err := cgroups.ParseCgroupFromReaderUnified(r)
	if err != nil {
		return "", err
	}
	if v2 {
		if unified == "" {
			return "", fmt.Errorf("no cgroup v2 entry")
		}
		return unified, nil
	}
	if path, ok := legacy["memory"]; ok {
		return path, nil
	}
	return "", fmt.Errorf("no memory controller entry")
}
