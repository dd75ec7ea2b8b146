package systemd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResourcesProperties(t *testing.T) {
	got := map[string]any{}
	for _, p := range (Resources{CPUWeight: 39, MemoryMax: Unlimited, TasksMax: 100}).properties() {
		got[p.Name] = p.Value.Value()
	}
	want := map[string]any{"CPUWeight": uint64(39), "MemoryMax": Unlimited, "TasksMax": uint64(100)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("properties (-want +got):\n%s", diff)
	}
	if props := (Resources{}).properties(); len(props) != 0 {
		t.Errorf("zero Resources set %v, want nothing", props)
	}
}

// TestRealSlice makes, resizes and stops a slice on a real systemd (the
// test VM of test/vm/run.sh); it reads what systemd wrote to cgroup v2.
func TestRealSlice(t *testing.T) {
	if os.Geteuid() != 0 || !Booted() {
		t.Skip("needs root on a host run by systemd")
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		t.Skip("the slice's files are checked on cgroup v2 only")
	}
	ctx := context.Background()
	c := New()
	defer c.Close()
	name := fmt.Sprintf("cribsystemdtest%d.slice", os.Getpid())
	dir := filepath.Join("/sys/fs/cgroup", name)
	t.Cleanup(func() { _ = c.Stop(ctx, name) })
	read := func(file string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}

	if err := c.EnsureSlice(ctx, name, "crib test slice", Resources{CPUWeight: 50, MemoryMax: 64 << 20, CPUQuotaPerSecUSec: 500000}); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"cpu.weight": "50", "memory.max": "67108864", "cpu.max": "50000 100000"} {
		if got := read(file); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	// A slice that exists takes the new resources.
	if err := c.EnsureSlice(ctx, name, "crib test slice", Resources{MemoryMax: Unlimited}); err != nil {
		t.Fatal(err)
	}
	if got := read("memory.max"); got != "max" {
		t.Errorf("memory.max after lifting the limit = %q, want max", got)
	}
	if units, err := c.Units(ctx, name); err != nil || len(units) != 1 {
		t.Errorf("Units(%s) = %v, %v; want the slice", name, units, err)
	}
	for range 2 { // Stop is idempotent.
		if err := c.Stop(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("slice directory after Stop: %v", err)
	}
	if units, err := c.Units(ctx, name); err != nil || len(units) != 0 {
		t.Errorf("Units(%s) after Stop = %v, %v; want none", name, units, err)
	}
}
