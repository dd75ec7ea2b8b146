package nri

import (
	"maps"

	nri "github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/api"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/ocispec"
	"github.com/crib-dev/crib/internal/sandbox"
)

// podOf is the NRI view of a pod: its CRI metadata, labels, annotations,
// handler, IPs, cgroups, namespaces and resources.
func podOf(s sandbox.Sandbox) *nri.PodSandbox {
	cfg := s.Config
	md := cfg.GetMetadata()
	linux := &nri.LinuxPodSandbox{
		CgroupParent: s.CgroupParent,
		CgroupsPath:  s.CgroupParent,
		PodOverhead:  resourcesFromCRI(cfg.GetLinux().GetOverhead()),
		PodResources: resourcesFromCRI(cfg.GetLinux().GetResources()),
	}
	for typ, path := range map[string]string{"network": s.NetNS, "ipc": s.IPCNS, "uts": s.UTSNS, "user": s.UserNS, "pid": s.PIDNS()} {
		if path != "" {
			linux.Namespaces = append(linux.Namespaces, &nri.LinuxNamespace{Type: typ, Path: path})
		}
	}
	return &nri.PodSandbox{
		Id:             s.ID,
		Name:           md.GetName(),
		Uid:            md.GetUid(),
		Namespace:      md.GetNamespace(),
		Labels:         maps.Clone(cfg.GetLabels()),
		Annotations:    maps.Clone(cfg.GetAnnotations()),
		RuntimeHandler: s.RuntimeHandler,
		Linux:          linux,
		Pid:            uint32(s.PausePid),
		Ips:            append([]string(nil), s.IPs...),
	}
}

// containerOf is the NRI view of a container with its OCI spec (nil: the
// spec is not known, and only the CRI config describes it).
func containerOf(c container.Container, spec *specs.Spec) *nri.Container {
	cfg := c.Config
	ctr := &nri.Container{
		Id:           c.ID,
		PodSandboxId: c.SandboxID,
		Name:         cfg.GetMetadata().GetName(),
		Labels:       maps.Clone(cfg.GetLabels()),
		Annotations:  maps.Clone(cfg.GetAnnotations()),
		Image:        &nri.Image{Name: cfg.GetImage().GetImage(), Digest: c.ImageRef, ConfigDigest: c.ImageID},
		Linux:        &nri.LinuxContainer{CgroupsPath: c.CgroupsPath},
	}
	for _, d := range cfg.GetCDIDevices() {
		ctr.CDIDevices = append(ctr.CDIDevices, &nri.CDIDevice{Name: d.GetName()})
	}
	if sp := cfg.GetLinux().GetSecurityContext().GetSeccomp(); sp != nil {
		// The profile the kubelet asked for (the enums agree), by which
		// NRI's default validator judges a plugin's seccomp policy.
		ctr.Linux.SeccompProfile = &api.SecurityProfile{ProfileType: api.SecurityProfile_ProfileType(sp.GetProfileType()), LocalhostRef: sp.GetLocalhostRef()}
	}
	if spec == nil {
		ctr.Args = append(append([]string(nil), cfg.GetCommand()...), cfg.GetArgs()...)
		for _, kv := range cfg.GetEnvs() {
			ctr.Env = append(ctr.Env, kv.GetKey()+"="+string(kv.GetValue()))
		}
		ctr.Linux.Resources = resourcesFromCRI(cfg.GetLinux().GetResources())
		return ctr
	}
	if p := spec.Process; p != nil {
		ctr.Args = append([]string(nil), p.Args...)
		ctr.Env = append([]string(nil), p.Env...)
		ctr.User = &nri.User{Uid: p.User.UID, Gid: p.User.GID, AdditionalGids: append([]uint32(nil), p.User.AdditionalGids...)}
		for _, r := range p.Rlimits {
			ctr.Rlimits = append(ctr.Rlimits, &nri.POSIXRlimit{Type: r.Type, Hard: r.Hard, Soft: r.Soft})
		}
		if p.OOMScoreAdj != nil {
			ctr.Linux.OomScoreAdj = nri.Int(*p.OOMScoreAdj)
		}
		if p.IOPriority != nil {
			ctr.Linux.IoPriority = nri.FromOCILinuxIOPriority(p.IOPriority)
		}
		if p.Scheduler != nil {
			ctr.Linux.Scheduler = api.FromOCILinuxScheduler(p.Scheduler)
		}
	}
	ctr.Mounts = nri.FromOCIMounts(spec.Mounts)
	ctr.Hooks = nri.FromOCIHooks(spec.Hooks)
	if l := spec.Linux; l != nil {
		ctr.Linux.Namespaces = nri.FromOCILinuxNamespaces(l.Namespaces)
		ctr.Linux.Devices = nri.FromOCILinuxDevices(l.Devices)
		ctr.Linux.Resources = nri.FromOCILinuxResources(l.Resources, nil)
		ctr.Linux.CgroupsPath = l.CgroupsPath
		ctr.Linux.Sysctl = maps.Clone(l.Sysctl)
		if l.Seccomp != nil {
			ctr.Linux.SeccompPolicy = api.FromOCILinuxSeccomp(l.Seccomp)
		}
		ctr.Linux.NetDevices = api.FromOCILinuxNetDevices(l.NetDevices)
		if r := l.IntelRdt; r != nil {
			ctr.Linux.Rdt = &api.LinuxRdt{ClosId: api.String(r.ClosID), Schemata: api.RepeatedString(r.Schemata), EnableMonitoring: api.Bool(r.EnableMonitoring)}
		}
	}
	return ctr
}

// withState is kept, the container's spec, with c's state: a copy, so
// that the kept view is never handed to a request.
func withState(kept *nri.Container, c container.Container) *nri.Container {
	ctr := proto.Clone(kept).(*nri.Container)
	ctr.State = stateOf(c.State)
	ctr.Pid = uint32(c.Pid)
	ctr.CreatedAt = nanos(c.CreatedAt.UnixNano(), c.CreatedAt.IsZero())
	ctr.StartedAt = nanos(c.StartedAt.UnixNano(), c.StartedAt.IsZero())
	ctr.FinishedAt = nanos(c.FinishedAt.UnixNano(), c.FinishedAt.IsZero())
	ctr.ExitCode = c.ExitCode
	ctr.StatusReason = c.Reason
	ctr.StatusMessage = c.Message
	if r := c.Config.GetLinux().GetResources(); r != nil && c.State == container.Running {
		// Updated since its creation: what is in force now.
		ctr.Linux.Resources = mergeNRI(ctr.Linux.GetResources(), resourcesFromCRI(r))
	}
	return ctr
}

func nanos(n int64, zero bool) int64 {
	if zero {
		return 0
	}
	return n
}

func stateOf(s container.State) nri.ContainerState {
	switch s {
	case container.Created, container.Creating:
		return nri.ContainerState_CONTAINER_CREATED
	case container.Running:
		return nri.ContainerState_CONTAINER_RUNNING
	case container.Exited:
		return nri.ContainerState_CONTAINER_STOPPED
	}
	return nri.ContainerState_CONTAINER_UNKNOWN
}

// resourcesFromCRI is the NRI form of CRI resources (nil for nil), by
// the conversion crib's OCI specs use.
func resourcesFromCRI(r *runtimeapi.LinuxContainerResources) *nri.LinuxResources {
	if r == nil {
		return nil
	}
	return nri.FromOCILinuxResources(ocispec.UpdateResources(r, true), nil)
}

// mergeNRI is base with what over sets.
func mergeNRI(base, over *nri.LinuxResources) *nri.LinuxResources {
	if base == nil {
		return over
	}
	out := proto.Clone(base).(*nri.LinuxResources)
	proto.Merge(out, over)
	return out
}

// mergeResources is res, CRI resources, with what an NRI update sets.
func mergeResources(res *runtimeapi.LinuxContainerResources, u *nri.LinuxResources) *runtimeapi.LinuxContainerResources {
	out := &runtimeapi.LinuxContainerResources{}
	if res != nil {
		out = proto.Clone(res).(*runtimeapi.LinuxContainerResources)
	}
	if u == nil {
		return out
	}
	if cpu := u.GetCpu(); cpu != nil {
		if v := cpu.GetShares(); v != nil {
			out.CpuShares = int64(v.GetValue())
		}
		if v := cpu.GetQuota(); v != nil {
			out.CpuQuota = v.GetValue()
		}
		if v := cpu.GetPeriod(); v != nil {
			out.CpuPeriod = int64(v.GetValue())
		}
		if cpu.GetCpus() != "" {
			out.CpusetCpus = cpu.GetCpus()
		}
		if cpu.GetMems() != "" {
			out.CpusetMems = cpu.GetMems()
		}
	}
	if mem := u.GetMemory(); mem != nil {
		if v := mem.GetLimit(); v != nil {
			out.MemoryLimitInBytes = v.GetValue()
		}
		if v := mem.GetSwap(); v != nil {
			out.MemorySwapLimitInBytes = v.GetValue()
		}
	}
	for _, h := range u.GetHugepageLimits() {
		out.HugepageLimits = setHugepage(out.HugepageLimits, h.GetPageSize(), h.GetLimit())
	}
	if len(u.GetUnified()) > 0 {
		if out.Unified == nil {
			out.Unified = map[string]string{}
		}
		maps.Copy(out.Unified, u.GetUnified())
	}
	return out
}

func setHugepage(hs []*runtimeapi.HugepageLimit, size string, limit uint64) []*runtimeapi.HugepageLimit {
	for _, h := range hs {
		if h.GetPageSize() == size {
			h.Limit = limit
			return hs
		}
	}
	return append(hs, &runtimeapi.HugepageLimit{PageSize: size, Limit: limit})
}
