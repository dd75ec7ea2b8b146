package nri

import (
	"slices"
	"strings"
	"testing"

	"github.com/containerd/nri/pkg/api"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// An adjustment of every kind the generator takes lands in the spec
// through specGen; a Block I/O or RDT class with no class configuration
// is an error naming the class and the missing file.
func TestAdjustSpec(t *testing.T) {
	n := &NRI{}
	spec := &specs.Spec{
		Process: &specs.Process{Env: []string{"PATH=/bin", "KEEP=1"}, Args: []string{"sleep"}},
		Mounts:  []specs.Mount{{Destination: "/old", Source: "/x", Type: "bind"}},
		Linux:   &specs.Linux{CgroupsPath: "/crib/pod/c"},
	}
	a := &api.ContainerAdjustment{}
	a.AddEnv("NEW", "v")
	a.AddEnv("KEEP", "2")
	a.AddAnnotation("a", "b")
	a.AddMount(&api.Mount{Destination: "/new", Source: "/y", Type: "bind", Options: []string{"rbind", "ro"}})
	a.RemoveMount("/old")
	a.AddDevice(&api.LinuxDevice{Path: "/dev/n", Type: "c", Major: 1, Minor: 3})
	a.AddRlimit("RLIMIT_NOFILE", 10, 5)
	a.SetLinuxMemoryLimit(1 << 20)
	a.SetLinuxCPUShares(256)
	a.SetLinuxCPUSetCPUs("0")
	a.AddLinuxUnified("memory.high", "1000000")
	a.AddLinuxHugepageLimit("2MB", 4<<20)
	a.SetLinuxCgroupsPath("/elsewhere")
	oom := 500
	a.SetLinuxOomScoreAdj(&oom)
	a.SetLinuxIOPriority(&api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_BE, Priority: 4})
	a.AddHooks(&api.Hooks{CreateRuntime: []*api.Hook{{Path: "/bin/true"}}})
	if err := n.adjust(spec, a); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NEW=v", "KEEP=2", "PATH=/bin"} {
		if !slices.Contains(spec.Process.Env, want) {
			t.Errorf("env %v lacks %s", spec.Process.Env, want)
		}
	}
	if slices.Contains(spec.Process.Env, "KEEP=1") {
		t.Errorf("env %v keeps KEEP=1", spec.Process.Env)
	}
	if spec.Annotations["a"] != "b" || len(spec.Mounts) != 1 || spec.Mounts[0].Destination != "/new" {
		t.Errorf("annotations %v, mounts %+v", spec.Annotations, spec.Mounts)
	}
	if len(spec.Linux.Devices) != 1 || spec.Linux.Devices[0].Path != "/dev/n" {
		t.Errorf("devices %+v", spec.Linux.Devices)
	}
	if len(spec.Process.Rlimits) != 1 || spec.Process.Rlimits[0].Hard != 10 {
		t.Errorf("rlimits %+v", spec.Process.Rlimits)
	}
	r := spec.Linux.Resources
	if *r.Memory.Limit != 1<<20 || *r.CPU.Shares != 256 || r.CPU.Cpus != "0" || r.Unified["memory.high"] != "1000000" ||
		len(r.HugepageLimits) != 1 || r.HugepageLimits[0].Limit != 4<<20 {
		t.Errorf("resources %+v", r)
	}
	if spec.Linux.CgroupsPath != "/elsewhere" || *spec.Process.OOMScoreAdj != 500 || spec.Process.IOPriority == nil {
		t.Errorf("cgroups path %q, oom %v, ioprio %v", spec.Linux.CgroupsPath, spec.Process.OOMScoreAdj, spec.Process.IOPriority)
	}
	if spec.Hooks == nil || len(spec.Hooks.CreateRuntime) != 1 {
		t.Errorf("hooks %+v", spec.Hooks)
	}

	b := &api.ContainerAdjustment{}
	b.SetLinuxBlockIOClass("gold")
	if err := n.adjust(&specs.Spec{}, b); err == nil || !strings.Contains(err.Error(), `"gold"`) || !strings.Contains(err.Error(), "blockio_config_file") {
		t.Errorf("a Block I/O class: %v, want an error naming it and blockio_config_file", err)
	}
	b = &api.ContainerAdjustment{}
	b.SetLinuxRDTClass("silver")
	if err := n.adjust(&specs.Spec{}, b); err == nil || !strings.Contains(err.Error(), `"silver"`) || !strings.Contains(err.Error(), "rdt_config_file") {
		t.Errorf("an RDT class: %v, want an error naming it and rdt_config_file", err)
	}
	if err := n.adjust(&specs.Spec{}, &api.ContainerAdjustment{CDIDevices: []*api.CDIDevice{{Name: "v.com/c=x"}}}); err == nil {
		t.Error("a CDI device without CDI spec dirs: no error")
	}
}

// A plugin's update sets what it names over the CRI resources in force.
func TestMergeResources(t *testing.T) {
	in := &runtimeapi.LinuxContainerResources{CpuShares: 100, MemoryLimitInBytes: 1 << 30, CpusetCpus: "0-1"}
	u := &api.LinuxResources{Cpu: &api.LinuxCPU{Quota: api.Int64(5000), Period: api.UInt64(10000)}, Memory: &api.LinuxMemory{Limit: api.Int64(1 << 20)}}
	out := mergeResources(in, u)
	if out.CpuShares != 100 || out.CpusetCpus != "0-1" || out.CpuQuota != 5000 || out.CpuPeriod != 10000 || out.MemoryLimitInBytes != 1<<20 {
		t.Errorf("merged %+v", out)
	}
	if in.MemoryLimitInBytes != 1<<30 {
		t.Errorf("the input changed: %+v", in)
	}
}
