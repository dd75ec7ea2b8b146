package sandbox

import (
	"fmt"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	cv "github.com/crib-dev/crib/internal/crivalidate"
	"github.com/crib-dev/crib/internal/netns"
)

// validate checks what RunPodSandbox needs of its config and names the
// offending field. It returns the mapping of the pod's own user namespace,
// nil for the host's users.
func validate(cfg *runtimeapi.PodSandboxConfig) (*netns.UserNS, error) {
	if cfg == nil {
		return nil, fmt.Errorf("config is missing: %w", errdefs.ErrInvalidArgument)
	}
	if err := validateFields(cfg); err != nil {
		return nil, err
	}
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns.GetPid() == runtimeapi.NamespaceMode_TARGET {
		return nil, fmt.Errorf("config.linux.security_context.namespace_options.pid: TARGET is for containers, not pods: %w", errdefs.ErrInvalidArgument)
	}
	if ns.GetNetwork() == runtimeapi.NamespaceMode_TARGET || ns.GetIpc() == runtimeapi.NamespaceMode_TARGET {
		return nil, fmt.Errorf("config.linux.security_context.namespace_options: TARGET is only valid for pid: %w", errdefs.ErrInvalidArgument)
	}
	return UserNamespace(ns)
}

// maxHostname is the kernel's HOST_NAME_MAX.
const maxHostname = 64

// validateFields checks every field of the config crib reads, refusing
// unknown enum values and sizes beyond any real pod's.
func validateFields(cfg *runtimeapi.PodSandboxConfig) error {
	md := cfg.GetMetadata()
	if md == nil {
		return cv.Invalid("config.metadata", "is missing")
	}
	if err := cv.Name("config.metadata.name", md.GetName(), true); err != nil {
		return err
	}
	if err := cv.Name("config.metadata.namespace", md.GetNamespace(), true); err != nil {
		return err
	}
	if err := cv.Name("config.metadata.uid", md.GetUid(), true); err != nil {
		return err
	}
	if err := cv.Name("config.hostname", cfg.GetHostname(), false); err != nil {
		return err
	}
	if len(cfg.GetHostname()) > maxHostname {
		return cv.Invalid("config.hostname", "%d bytes, more than %d", len(cfg.GetHostname()), maxHostname)
	}
	if d := cfg.GetLogDirectory(); d != "" {
		if err := cv.AbsPath("config.log_directory", d, true); err != nil {
			return err
		}
	}
	dns := cfg.GetDnsConfig()
	for field, list := range map[string][]string{
		"config.dns_config.servers": dns.GetServers(), "config.dns_config.searches": dns.GetSearches(),
		"config.dns_config.options": dns.GetOptions(),
	} {
		if err := cv.Strings(field, list, cv.MaxNameLen); err != nil {
			return err
		}
	}
	for i, p := range cfg.GetPortMappings() {
		if err := validatePort(fmt.Sprintf("config.port_mappings[%d]", i), p); err != nil {
			return err
		}
	}
	if err := cv.Labels("config.labels", cfg.GetLabels()); err != nil {
		return err
	}
	if err := cv.Annotations("config.annotations", cfg.GetAnnotations()); err != nil {
		return err
	}
	return validateLinux(cfg.GetLinux())
}

func validatePort(field string, p *runtimeapi.PortMapping) error {
	if err := cv.Enum(field+".protocol", p.GetProtocol(), runtimeapi.Protocol_name); err != nil {
		return err
	}
	if c := p.GetContainerPort(); c <= 0 || c > 65535 {
		return cv.Invalid(field+".container_port", "%d is not a port", c)
	}
	if h := p.GetHostPort(); h < 0 || h > 65535 {
		return cv.Invalid(field+".host_port", "%d is not a port", h)
	}
	return cv.String(field+".host_ip", p.GetHostIp(), cv.MaxNameLen)
}

func validateLinux(l *runtimeapi.LinuxPodSandboxConfig) error {
	if err := cv.String("config.linux.cgroup_parent", l.GetCgroupParent(), cv.MaxPathLen); err != nil {
		return err
	}
	sc := l.GetSecurityContext()
	ns := sc.GetNamespaceOptions()
	const nsField = "config.linux.security_context.namespace_options"
	for field, mode := range map[string]runtimeapi.NamespaceMode{
		nsField + ".network": ns.GetNetwork(), nsField + ".pid": ns.GetPid(), nsField + ".ipc": ns.GetIpc(),
	} {
		if err := cv.Enum(field, mode, runtimeapi.NamespaceMode_name); err != nil {
			return err
		}
	}
	host := cv.HostNamespaces{
		Network: ns.GetNetwork() == runtimeapi.NamespaceMode_NODE,
		IPC:     ns.GetIpc() == runtimeapi.NamespaceMode_NODE,
		UserNS:  ns.GetUsernsOptions().GetMode() == runtimeapi.NamespaceMode_POD,
	}
	if err := cv.Sysctls("config.linux.sysctls", l.GetSysctls(), host); err != nil {
		return err
	}
	if err := cv.SecurityContext("config.linux.security_context", cv.SecurityFields{
		SELinux:                  sc.GetSelinuxOptions(),
		RunAsUser:                sc.GetRunAsUser(),
		RunAsGroup:               sc.GetRunAsGroup(),
		SupplementalGroups:       sc.GetSupplementalGroups(),
		SupplementalGroupsPolicy: sc.GetSupplementalGroupsPolicy(),
		Seccomp:                  sc.GetSeccomp(),
		Apparmor:                 sc.GetApparmor(),
	}); err != nil {
		return err
	}
	if err := cv.Resources("config.linux.overhead", l.GetOverhead()); err != nil {
		return err
	}
	return cv.Resources("config.linux.resources", l.GetResources())
}
