package monitor_test

import (
	"os"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestOOMKilledRecorded(t *testing.T) {
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
			t.Skip("no memory cgroup controller")
		}
	}
	limit := int64(8 << 20)
	e := newEnv(t, []string{"sh", "-c", "x=$(head -c 100000000 /dev/zero | tr '\\0' a); echo survived"},
		func(s *specs.Spec) {
			if s.Linux.Resources == nil {
				s.Linux.Resources = &specs.LinuxResources{}
			}
			s.Linux.Resources.Memory = &specs.LinuxMemory{Limit: &limit}
		})
	e.run(t)
	if ex := e.wait(t); !ex.OOMKilled {
		t.Errorf("exit %+v, want OOM killed", ex)
	}
}
