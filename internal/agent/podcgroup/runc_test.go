package podcgroup

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/crib-dev/crib/internal/cgroupfs"
	"github.com/crib-dev/crib/internal/ociruntime/ociruntimetest"
)

// TestRuncInPodCgroup checks that runc accepts the pod cgroup as a parent
// (the cpuset is usable, the path is absolute) and that RemovePod kills a
// container runc left running in it.
func TestRuncInPodCgroup(t *testing.T) {
	ociruntimetest.RequireRuntime(t)
	m, h := realManager(t, "cgroupfs")
	if err := m.Setup(); err != nil {
		t.Fatal(err)
	}
	p := pod("r-1", res("", "500m,64Mi"), res("", "500m,64Mi"))
	name, err := m.EnsurePod(p)
	if err != nil {
		t.Fatal(err)
	}
	r := ociruntimetest.NewRuntime(t)
	id := ociruntimetest.ID(t)
	bundle := ociruntimetest.NewBundle(t, id, []string{"sleep", "100"}, func(s *specs.Spec) {
		s.Linux.CgroupsPath = name + "/" + id
	})
	ociruntimetest.Create(t, r, id, bundle)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	ociruntimetest.WaitStatus(t, r, id, "running")
	st, err := r.State(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	cg, err := os.ReadFile("/proc/" + strconv.Itoa(st.Pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if want := ":memory:" + name + "/" + id + "\n"; !strings.Contains(string(cg), want) {
		t.Errorf("container's cgroups:\n%s\nwant a line ending %q", cg, want)
	}
	mem := h.With("memory.limit_in_bytes")
	if got := readKnob(t, filepath.Join(mem, name, "memory.limit_in_bytes")); got != strconv.Itoa(128<<20) {
		t.Errorf("pod memory limit = %s, want 128Mi", got)
	}
	if err := m.RemovePod("r-1"); err != nil {
		t.Fatalf("RemovePod with a running container: %v", err)
	}
	for _, root := range h.Roots {
		if cgroupfs.Exists(filepath.Join(root, name)) {
			t.Errorf("%s left in %s", name, root)
		}
	}
	if alive(st.Pid) {
		t.Errorf("container process %d still alive", st.Pid)
	}
}
