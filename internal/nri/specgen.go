package nri

import (
	"fmt"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// specGen is the small editor of an OCI spec that NRI's
// runtime-tools/generate.Generator applies adjustments through (the
// interface of runtime-tools' own Generator, whose releases on the module
// proxy predate runtime-spec 1.3). Each method makes what it edits.
type specGen struct{ s *specs.Spec }

func (g specGen) Spec() *specs.Spec { return g.s }

func (g specGen) process() *specs.Process {
	if g.s.Process == nil {
		g.s.Process = &specs.Process{}
	}
	return g.s.Process
}

func (g specGen) linux() *specs.Linux {
	if g.s.Linux == nil {
		g.s.Linux = &specs.Linux{}
	}
	return g.s.Linux
}

func (g specGen) resources() *specs.LinuxResources {
	l := g.linux()
	if l.Resources == nil {
		l.Resources = &specs.LinuxResources{}
	}
	return l.Resources
}

func (g specGen) cpu() *specs.LinuxCPU {
	r := g.resources()
	if r.CPU == nil {
		r.CPU = &specs.LinuxCPU{}
	}
	return r.CPU
}

func (g specGen) memory() *specs.LinuxMemory {
	r := g.resources()
	if r.Memory == nil {
		r.Memory = &specs.LinuxMemory{}
	}
	return r.Memory
}

func (g specGen) hooks() *specs.Hooks {
	if g.s.Hooks == nil {
		g.s.Hooks = &specs.Hooks{}
	}
	return g.s.Hooks
}

func (g specGen) AddAnnotation(key, value string) {
	if g.s.Annotations == nil {
		g.s.Annotations = map[string]string{}
	}
	g.s.Annotations[key] = value
}

func (g specGen) RemoveAnnotation(key string) { delete(g.s.Annotations, key) }

func (g specGen) AddDevice(d specs.LinuxDevice) {
	l := g.linux()
	for i, have := range l.Devices {
		if have.Path == d.Path {
			l.Devices[i] = d
			return
		}
	}
	l.Devices = append(l.Devices, d)
}

func (g specGen) RemoveDevice(path string) {
	l := g.linux()
	l.Devices = slices.DeleteFunc(l.Devices, func(d specs.LinuxDevice) bool { return d.Path == path })
}

func (g specGen) AddOrReplaceLinuxNamespace(ns, path string) error {
	l := g.linux()
	n := specs.LinuxNamespace{Type: specs.LinuxNamespaceType(ns), Path: path}
	for i, have := range l.Namespaces {
		if have.Type == n.Type {
			l.Namespaces[i] = n
			return nil
		}
	}
	l.Namespaces = append(l.Namespaces, n)
	return nil
}

func (g specGen) RemoveLinuxNamespace(ns string) error {
	l := g.linux()
	l.Namespaces = slices.DeleteFunc(l.Namespaces, func(n specs.LinuxNamespace) bool { return string(n.Type) == ns })
	return nil
}

func (g specGen) AddPostStartHook(h specs.Hook) { g.hooks().Poststart = append(g.hooks().Poststart, h) }
func (g specGen) AddPostStopHook(h specs.Hook)  { g.hooks().Poststop = append(g.hooks().Poststop, h) }

// AddPreStartHook adds a prestart hook, which the OCI spec deprecates but
// runc still runs (NRI's own generator adds createRuntime hooks too).
func (g specGen) AddPreStartHook(h specs.Hook) {
	//lint:ignore SA1019 NRI's Hooks still carry prestart, which runc runs.
	g.hooks().Prestart = append(g.hooks().Prestart, h)
}

func (g specGen) AddProcessEnv(name, value string) {
	p := g.process()
	kv := name + "=" + value
	for i, e := range p.Env {
		if len(e) > len(name) && e[:len(name)+1] == name+"=" {
			p.Env[i] = kv
			return
		}
	}
	p.Env = append(p.Env, kv)
}

func (g specGen) ClearProcessEnv() { g.process().Env = nil }

func (g specGen) AddLinuxResourcesDevice(allow bool, devType string, major, minor *int64, access string) {
	r := g.resources()
	r.Devices = append(r.Devices, specs.LinuxDeviceCgroup{Allow: allow, Type: devType, Major: major, Minor: minor, Access: access})
}

func (g specGen) AddLinuxResourcesHugepageLimit(pageSize string, limit uint64) {
	r := g.resources()
	for i, h := range r.HugepageLimits {
		if h.Pagesize == pageSize {
			r.HugepageLimits[i].Limit = limit
			return
		}
	}
	r.HugepageLimits = append(r.HugepageLimits, specs.LinuxHugepageLimit{Pagesize: pageSize, Limit: limit})
}

func (g specGen) AddLinuxResourcesUnified(key, val string) {
	r := g.resources()
	if r.Unified == nil {
		r.Unified = map[string]string{}
	}
	r.Unified[key] = val
}

func (g specGen) AddMount(m specs.Mount) { g.s.Mounts = append(g.s.Mounts, m) }
func (g specGen) ClearMounts()           { g.s.Mounts = nil }
func (g specGen) Mounts() []specs.Mount  { return g.s.Mounts }

func (g specGen) RemoveMount(dest string) {
	g.s.Mounts = slices.DeleteFunc(g.s.Mounts, func(m specs.Mount) bool { return m.Destination == dest })
}

func (g specGen) AddLinuxSysctl(key, value string) {
	l := g.linux()
	if l.Sysctl == nil {
		l.Sysctl = map[string]string{}
	}
	l.Sysctl[key] = value
}

func (g specGen) RemoveLinuxSysctl(key string) { delete(g.linux().Sysctl, key) }

func (g specGen) SetProcessArgs(args []string)      { g.process().Args = args }
func (g specGen) SetLinuxCgroupsPath(path string)   { g.linux().CgroupsPath = path }
func (g specGen) SetLinuxResourcesCPUCpus(s string) { g.cpu().Cpus = s }
func (g specGen) SetLinuxResourcesCPUMems(s string) { g.cpu().Mems = s }
func (g specGen) SetLinuxResourcesCPUPeriod(v uint64) {
	g.cpu().Period = &v
}
func (g specGen) SetLinuxResourcesCPUQuota(v int64) { g.cpu().Quota = &v }
func (g specGen) SetLinuxResourcesCPURealtimePeriod(v uint64) {
	g.cpu().RealtimePeriod = &v
}
func (g specGen) SetLinuxResourcesCPURealtimeRuntime(v int64) {
	g.cpu().RealtimeRuntime = &v
}
func (g specGen) SetLinuxResourcesCPUShares(v uint64)  { g.cpu().Shares = &v }
func (g specGen) SetLinuxResourcesMemoryLimit(v int64) { g.memory().Limit = &v }
func (g specGen) SetLinuxResourcesMemorySwap(v int64)  { g.memory().Swap = &v }

func (g specGen) SetLinuxRootPropagation(rp string) error {
	switch rp {
	case "", "private", "rprivate", "slave", "rslave", "shared", "rshared", "unbindable", "runbindable":
		g.linux().RootfsPropagation = rp
		return nil
	}
	return fmt.Errorf("rootfs propagation %q is not valid", rp)
}

func (g specGen) SetProcessOOMScoreAdj(adj int) { g.process().OOMScoreAdj = &adj }
