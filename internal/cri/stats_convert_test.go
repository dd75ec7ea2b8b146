package cri

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/kernelstats"
	"github.com/crib-dev/crib/internal/sandbox"
	"github.com/crib-dev/crib/internal/statsservice"
)

// The I/O pressure of a container's and a pod's cgroup reaches the CRI
// stats in nanoseconds with its averages; a cgroup without it (v1) has no
// Io at all, not zeros.
func TestIOPressureInStats(t *testing.T) {
	at := time.Unix(1_800_000_000, 5)
	withIO := &statsservice.Cgroup{Sample: kernelstats.Sample{
		Time: at,
		IO: &kernelstats.IO{Pressure: &kernelstats.Pressure{
			Some: kernelstats.PressureData{TotalNanos: 20_000, Avg10: 1.5, Avg60: 0.75, Avg300: 0.25},
			Full: kernelstats.PressureData{TotalNanos: 10_000, Avg10: 0.5},
		}},
	}}
	want := &runtimeapi.IoUsage{Timestamp: at.UnixNano(), Psi: &runtimeapi.PsiStats{
		Some: &runtimeapi.PsiData{Total: 20_000, Avg10: 1.5, Avg60: 0.75, Avg300: 0.25},
		Full: &runtimeapi.PsiData{Total: 10_000, Avg10: 0.5},
	}}
	v1 := &statsservice.Cgroup{Sample: kernelstats.Sample{Time: at, CPU: &kernelstats.CPU{UsageNanos: 1}}}

	c := container.Container{ID: "c1", SandboxID: "sb1"}
	if got := containerStats(c, statsservice.Container{Cgroup: withIO}).GetIo(); !proto.Equal(got, want) {
		t.Errorf("container io = %v, want %v", got, want)
	}
	if got := containerStats(c, statsservice.Container{Cgroup: v1}).GetIo(); got != nil {
		t.Errorf("container io without pressure = %v, want none", got)
	}

	sb := sandbox.Sandbox{ID: "sb1"}
	ps := sandboxStats(sb, []container.Container{c}, statsservice.Pod{Cgroup: withIO, Containers: []statsservice.Container{{Cgroup: withIO}}})
	if got := ps.GetLinux().GetIo(); !proto.Equal(got, want) {
		t.Errorf("pod io = %v, want %v", got, want)
	}
	if got := ps.GetLinux().GetContainers()[0].GetIo(); !proto.Equal(got, want) {
		t.Errorf("pod's container io = %v, want %v", got, want)
	}
	if got := sandboxStats(sb, nil, statsservice.Pod{Cgroup: v1}).GetLinux().GetIo(); got != nil {
		t.Errorf("pod io without pressure = %v, want none", got)
	}
}
