package sandbox

import (
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	cv "github.com/crib-dev/crib/internal/crivalidate"
)

// kubeletSandbox is a config as the kubelet sends it.
func kubeletSandbox() *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web-0", Namespace: "default", Uid: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", Attempt: 1},
		Hostname:     "web-0",
		LogDirectory: "/var/log/pods/default_web-0_0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
		DnsConfig:    &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"default.svc.cluster.local", "svc.cluster.local"}, Options: []string{"ndots:5"}},
		PortMappings: []*runtimeapi.PortMapping{{Protocol: runtimeapi.Protocol_UDP, ContainerPort: 53}, {ContainerPort: 8080, HostPort: 80, HostIp: "127.0.0.1"}},
		Labels:       map[string]string{"io.kubernetes.pod.name": "web-0", "io.kubernetes.pod.namespace": "default", "app": "web"},
		Annotations:  map[string]string{"kubernetes.io/config.source": "api", "kubectl.kubernetes.io/last-applied-configuration": `{"kind":"Pod"}`},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: "/kubepods/burstable/pod0f1e2d3c",
			Sysctls:      map[string]string{"net.ipv4.ip_unprivileged_port_start": "0", "kernel.shm_rmid_forced": "1"},
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
				RunAsUser:        &runtimeapi.Int64Value{Value: 1000},
				Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			},
			Resources: &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, CpuQuota: 50000, MemoryLimitInBytes: 64 << 20},
		},
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(c *runtimeapi.PodSandboxConfig)
		field string // "" for valid
	}{
		{"kubelet's", func(*runtimeapi.PodSandboxConfig) {}, ""},
		{"minimal", func(c *runtimeapi.PodSandboxConfig) {
			*c = runtimeapi.PodSandboxConfig{Metadata: c.Metadata}
		}, ""},
		{"no metadata", func(c *runtimeapi.PodSandboxConfig) { c.Metadata = nil }, "config.metadata"},
		{"no name", func(c *runtimeapi.PodSandboxConfig) { c.Metadata.Name = "" }, "config.metadata.name"},
		{"long name", func(c *runtimeapi.PodSandboxConfig) { c.Metadata.Name = strings.Repeat("n", 254) }, "config.metadata.name"},
		{"no namespace", func(c *runtimeapi.PodSandboxConfig) { c.Metadata.Namespace = "" }, "config.metadata.namespace"},
		{"long uid", func(c *runtimeapi.PodSandboxConfig) { c.Metadata.Uid = strings.Repeat("u", 1<<20) }, "config.metadata.uid"},
		{"long hostname", func(c *runtimeapi.PodSandboxConfig) { c.Hostname = strings.Repeat("h", 65) }, "config.hostname"},
		{"relative log_directory", func(c *runtimeapi.PodSandboxConfig) { c.LogDirectory = "var/log/pods/x" }, "config.log_directory"},
		{"unclean log_directory", func(c *runtimeapi.PodSandboxConfig) { c.LogDirectory = "/var/log/pods/../../etc" }, "config.log_directory"},
		{"too many DNS searches", func(c *runtimeapi.PodSandboxConfig) {
			c.DnsConfig.Searches = make([]string, 1025)
		}, "config.dns_config.searches"},
		{"unknown protocol", func(c *runtimeapi.PodSandboxConfig) { c.PortMappings[1].Protocol = 3 }, "config.port_mappings[1].protocol"},
		{"container port 0", func(c *runtimeapi.PodSandboxConfig) { c.PortMappings[0].ContainerPort = 0 }, "config.port_mappings[0].container_port"},
		{"host port too big", func(c *runtimeapi.PodSandboxConfig) { c.PortMappings[1].HostPort = 65536 }, "config.port_mappings[1].host_port"},
		{"bad label key", func(c *runtimeapi.PodSandboxConfig) { c.Labels["-app"] = "x" }, "config.labels"},
		{"annotations over the bound", func(c *runtimeapi.PodSandboxConfig) {
			c.Annotations["big"] = strings.Repeat("x", cv.MaxMapTotal)
		}, "config.annotations"},
		{"unknown network mode", func(c *runtimeapi.PodSandboxConfig) {
			c.Linux.SecurityContext.NamespaceOptions.Network = 9
		}, "config.linux.security_context.namespace_options.network"},
		{"unknown ipc mode", func(c *runtimeapi.PodSandboxConfig) {
			c.Linux.SecurityContext.NamespaceOptions.Ipc = -1
		}, "config.linux.security_context.namespace_options.ipc"},
		{"pid TARGET", func(c *runtimeapi.PodSandboxConfig) {
			c.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_TARGET
		}, "config.linux.security_context.namespace_options.pid"},
		{"net sysctl with the host network", func(c *runtimeapi.PodSandboxConfig) {
			c.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
		}, "config.linux.sysctls"},
		{"IPC sysctl with host IPC", func(c *runtimeapi.PodSandboxConfig) {
			c.Linux.SecurityContext.NamespaceOptions.Ipc = runtimeapi.NamespaceMode_NODE
		}, "config.linux.sysctls"},
		{"host sysctl", func(c *runtimeapi.PodSandboxConfig) { c.Linux.Sysctls["kernel.panic"] = "1" }, "config.linux.sysctls"},
		{"unknown seccomp type", func(c *runtimeapi.PodSandboxConfig) {
			c.Linux.SecurityContext.Seccomp.ProfileType = 5
		}, "config.linux.security_context.seccomp.profile_type"},
		{"negative run_as_user", func(c *runtimeapi.PodSandboxConfig) {
			c.Linux.SecurityContext.RunAsUser.Value = -1
		}, "config.linux.security_context.run_as_user"},
		{"negative overhead", func(c *runtimeapi.PodSandboxConfig) {
			c.Linux.Overhead = &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: -1}
		}, "config.linux.overhead.memory_limit_in_bytes"},
		{"bad resources", func(c *runtimeapi.PodSandboxConfig) { c.Linux.Resources.CpuPeriod = 10 }, "config.linux.resources.cpu_period"},
	}
	for _, tt := range tests {
		cfg := kubeletSandbox()
		tt.edit(cfg)
		_, err := validate(cfg)
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s: %v, want no error", tt.name, err)
		case tt.field != "" && (!errdefs.IsInvalidArgument(err) || !strings.HasPrefix(err.Error(), tt.field)):
			t.Errorf("%s: %v, want InvalidArgument naming %s", tt.name, err, tt.field)
		}
	}
}

// FuzzValidateSandboxConfig feeds validate any config protobuf can decode: it must
// never panic, and an accepted config keeps the invariants the rest of
// RunPodSandbox relies on.
func FuzzValidateSandboxConfig(f *testing.F) {
	seed, err := proto.Marshal(kubeletSandbox())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := &runtimeapi.PodSandboxConfig{}
		if proto.Unmarshal(data, cfg) != nil {
			return
		}
		if _, err := validate(cfg); err != nil {
			if !errdefs.IsInvalidArgument(err) && !errdefs.IsNotImplemented(err) {
				t.Fatalf("validate: %v, want InvalidArgument", err)
			}
			return
		}
		md := cfg.GetMetadata()
		if md.GetName() == "" || md.GetNamespace() == "" || md.GetUid() == "" || len(md.GetName()) > 253 {
			t.Fatalf("accepted metadata %v", md)
		}
		if d := cfg.GetLogDirectory(); d != "" && (d[0] != '/' || strings.Contains(d, "/../") || strings.HasSuffix(d, "/..")) {
			t.Fatalf("accepted log_directory %q", d)
		}
		ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
		for _, m := range []runtimeapi.NamespaceMode{ns.GetNetwork(), ns.GetPid(), ns.GetIpc()} {
			if _, ok := runtimeapi.NamespaceMode_name[int32(m)]; !ok {
				t.Fatalf("accepted namespace mode %d", m)
			}
		}
		for k := range cfg.GetLinux().GetSysctls() {
			if ns.GetNetwork() == runtimeapi.NamespaceMode_NODE && (strings.HasPrefix(k, "net.") || strings.HasPrefix(k, "net/")) {
				t.Fatalf("accepted sysctl %q with the host network", k)
			}
		}
		size := 0
		for k, v := range cfg.GetAnnotations() {
			size += len(k) + len(v)
		}
		if size > cv.MaxMapTotal {
			t.Fatalf("accepted %d bytes of annotations", size)
		}
	})
}
