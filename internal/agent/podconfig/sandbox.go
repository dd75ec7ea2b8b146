package podconfig

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/userns"
)

// SandboxConfig builds RunPodSandbox's config for the pod, as the kubelet's
// generatePodSandboxConfig does: the pod's labels plus the agent's identity
// labels, the pod's annotations, hostname (not on the host network), DNS
// (see dnsConfig), log directory, port mappings of every app container
// port (the runtime ignores those without a hostPort), and the Linux part:
// the QoS pod cgroup, namespaces, pod-level security context, sysctls and
// the pod's summed resources and overhead. userNS is the pod's block of host
// ids when it has hostUsers: false (see namespaces); nil for any other.
func SandboxConfig(pod *corev1.Pod, attempt uint32, userNS *userns.Range, opts Options) (*runtimeapi.PodSandboxConfig, error) {
	if err := checkIdentity(pod); err != nil {
		return nil, err
	}
	dns, err := dnsConfig(pod, opts)
	if err != nil {
		return nil, err
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Uid:       string(pod.UID),
			Attempt:   attempt,
		},
		Labels:       sandboxLabels(pod, opts.OwnerLabel()),
		Annotations:  maps.Clone(pod.Annotations),
		DnsConfig:    dns,
		LogDirectory: PodLogDirectory(opts.PodLogRoot, pod),
		PortMappings: portMappings(pod),
	}
	if !pod.Spec.HostNetwork {
		if cfg.Hostname, err = hostname(pod, opts.ClusterDomain); err != nil {
			return nil, err
		}
	}
	if cfg.Linux, err = sandboxLinux(pod, userNS, opts); err != nil {
		return nil, err
	}
	return cfg, nil
}

// RuntimeHandler is the CRI runtime handler for the pod's
// runtimeClassName: "" without one, the mapped handler otherwise, and a
// NotFound error for a class the node does not know (the kubelet's
// RunContainerError "RuntimeClass not found").
func RuntimeHandler(pod *corev1.Pod, opts Options) (string, error) {
	rc := pod.Spec.RuntimeClassName
	if rc == nil || *rc == "" {
		return "", nil
	}
	h, ok := opts.RuntimeHandlers[*rc]
	if !ok {
		return "", fmt.Errorf("runtimeClassName %q: %w", *rc, errdefs.ErrNotFound)
	}
	return h, nil
}

// PodLogDirectory is the kubelet's pod log directory,
// <root>/<namespace>_<name>_<uid>.
func PodLogDirectory(root string, pod *corev1.Pod) string {
	return filepath.Join(root, strings.Join([]string{pod.Namespace, pod.Name, string(pod.UID)}, "_"))
}

func checkIdentity(pod *corev1.Pod) error {
	if pod == nil {
		return fmt.Errorf("pod is nil: %w", errdefs.ErrInvalidArgument)
	}
	for _, f := range []struct{ field, value string }{
		{"metadata.name", pod.Name}, {"metadata.namespace", pod.Namespace}, {"metadata.uid", string(pod.UID)},
	} {
		if f.value == "" {
			return fmt.Errorf("pod %s/%s: %s is empty: %w", pod.Namespace, pod.Name, f.field, errdefs.ErrInvalidArgument)
		}
	}
	return nil
}

// sandboxLabels are the pod's labels with the agent's identity labels over
// them.
func sandboxLabels(pod *corev1.Pod, owner string) map[string]string {
	l := maps.Clone(pod.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[labels.PodName] = pod.Name
	l[labels.PodNamespace] = pod.Namespace
	l[labels.PodUID] = string(pod.UID)
	l[labels.ManagedBy] = owner
	return l
}

// hostname is the kubelet's GeneratePodHostNameAndDomain followed by
// GetNodenameForKernel: spec.hostname or the pod's name cut to 63
// characters, or the FQDN <hostname>.<subdomain>.<ns>.svc.<domain> with
// setHostnameAsFQDN.
func hostname(pod *corev1.Pod, clusterDomain string) (string, error) {
	name := pod.Name
	if h := pod.Spec.Hostname; h != "" {
		if msgs := validation.IsDNS1123Label(h); len(msgs) > 0 {
			return "", fmt.Errorf("spec.hostname %q is not a valid DNS label: %s: %w", h, strings.Join(msgs, "; "), errdefs.ErrInvalidArgument)
		}
		name = h
	}
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-.")
		if name == "" {
			return "", fmt.Errorf("hostname of pod %s/%s is not valid: %w", pod.Namespace, pod.Name, errdefs.ErrInvalidArgument)
		}
	}
	sub := pod.Spec.Subdomain
	if sub == "" {
		return name, nil
	}
	if msgs := validation.IsDNS1123Label(sub); len(msgs) > 0 {
		return "", fmt.Errorf("spec.subdomain %q is not a valid DNS label: %s: %w", sub, strings.Join(msgs, "; "), errdefs.ErrInvalidArgument)
	}
	if fqdn := pod.Spec.SetHostnameAsFQDN; fqdn != nil && *fqdn {
		full := fmt.Sprintf("%s.%s.%s.svc.%s", name, sub, pod.Namespace, clusterDomain)
		if len(full) > 64 {
			return "", fmt.Errorf("setHostnameAsFQDN: FQDN %s is longer than 64 characters: %w", full, errdefs.ErrInvalidArgument)
		}
		return full, nil
	}
	return name, nil
}

// portMappings is the kubelet's MakePortMappings over the app containers:
// every declared port, a name (or, unnamed, family/protocol/hostIP/port)
// used twice in one container counted once.
func portMappings(pod *corev1.Pod) []*runtimeapi.PortMapping {
	var out []*runtimeapi.PortMapping
	for i := range pod.Spec.Containers {
		seen := map[string]bool{}
		for _, p := range pod.Spec.Containers[i].Ports {
			key := p.Name
			if key == "" {
				family := "any"
				if p.HostIP != "" {
					family = "v4"
					if strings.Contains(p.HostIP, ":") {
						family = "v6"
					}
				}
				key = fmt.Sprintf("%s-%s-%s:%d", family, p.Protocol, p.HostIP, p.ContainerPort)
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, &runtimeapi.PortMapping{
				Protocol:      protocol(p.Protocol),
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}
	return out
}

func protocol(p corev1.Protocol) runtimeapi.Protocol {
	switch p {
	case corev1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case corev1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	}
	return runtimeapi.Protocol_TCP
}

// sandboxLinux is the kubelet's generatePodSandboxLinuxConfig with
// applySandboxResources. The sandbox always gets the RuntimeDefault
// seccomp profile, as the kubelet forces it.
func sandboxLinux(pod *corev1.Pod, userNS *userns.Range, opts Options) (*runtimeapi.LinuxPodSandboxConfig, error) {
	ns, err := namespaces(pod, userNS)
	if err != nil {
		return nil, err
	}
	sc := &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: ns,
		Privileged:       hasPrivileged(pod),
		Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}
	lc := &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent:    podCgroupParent(pod, QOSClass(pod), opts.CgroupParent),
		SecurityContext: sc,
		Resources:       sandboxResources(pod),
		Overhead:        sandboxOverhead(pod),
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return lc, nil
	}
	if psc.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
	}
	if psc.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
	}
	sc.SelinuxOptions = selinux(psc.SELinuxOptions)
	if sc.SupplementalGroups, sc.SupplementalGroupsPolicy, err = supplementalGroups(psc); err != nil {
		return nil, err
	}
	if len(psc.Sysctls) > 0 {
		lc.Sysctls = map[string]string{}
		for _, s := range psc.Sysctls {
			lc.Sysctls[s.Name] = s.Value
		}
	}
	return lc, nil
}

// hasPrivileged reports whether any container of the pod, of any kind, is
// privileged.
func hasPrivileged(pod *corev1.Pod) bool {
	priv := func(sc *corev1.SecurityContext) bool {
		return sc != nil && sc.Privileged != nil && *sc.Privileged
	}
	for _, c := range allContainers(pod) {
		if priv(c.SecurityContext) {
			return true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if priv(pod.Spec.EphemeralContainers[i].SecurityContext) {
			return true
		}
	}
	return false
}
