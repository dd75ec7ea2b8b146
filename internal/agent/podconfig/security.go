package podconfig

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/userns"
)

// effectiveSecurityContext merges the pod's security context into the
// container's: a field the container sets wins, the pod fills the rest.
// The result is never nil.
func effectiveSecurityContext(pod *corev1.Pod, c *corev1.Container) *corev1.SecurityContext {
	out := &corev1.SecurityContext{}
	if c.SecurityContext != nil {
		out = c.SecurityContext.DeepCopy()
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return out
	}
	if out.SELinuxOptions == nil && psc.SELinuxOptions != nil {
		out.SELinuxOptions = psc.SELinuxOptions.DeepCopy()
	}
	if out.RunAsUser == nil {
		out.RunAsUser = psc.RunAsUser
	}
	if out.RunAsGroup == nil {
		out.RunAsGroup = psc.RunAsGroup
	}
	if out.RunAsNonRoot == nil {
		out.RunAsNonRoot = psc.RunAsNonRoot
	}
	if out.SeccompProfile == nil && psc.SeccompProfile != nil {
		out.SeccompProfile = psc.SeccompProfile.DeepCopy()
	}
	if out.AppArmorProfile == nil && psc.AppArmorProfile != nil {
		out.AppArmorProfile = psc.AppArmorProfile.DeepCopy()
	}
	return out
}

// verifyRunAsNonRoot is the kubelet's check of runAsNonRoot against the
// user the container will run as: an explicit runAsUser must not be 0;
// otherwise the image's user must be numeric, non-zero and a valid id. An
// image with no user runs as root. An image whose user is unknown (nil
// ImageUser; the kubelet always asks the runtime) cannot be verified and
// is refused rather than trusted.
func verifyRunAsNonRoot(in ContainerInput, sc *corev1.SecurityContext) error {
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		return nil
	}
	name := in.Container.Name
	if sc.RunAsUser != nil {
		if *sc.RunAsUser == 0 {
			return fmt.Errorf("container %q: runAsUser 0 breaks runAsNonRoot: %w", name, errdefs.ErrInvalidArgument)
		}
		return nil
	}
	iu := in.ImageUser
	switch {
	case iu == nil:
		return fmt.Errorf("container %q has runAsNonRoot and the image's user is unknown, cannot verify it is non-root: %w", name, errdefs.ErrInvalidArgument)
	case iu.UID == nil && iu.Username != "":
		return fmt.Errorf("container %q has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root: %w", name, iu.Username, errdefs.ErrInvalidArgument)
	case iu.UID == nil || *iu.UID == 0:
		return fmt.Errorf("container %q has runAsNonRoot and image will run as root: %w", name, errdefs.ErrInvalidArgument)
	case *iu.UID < 0 || *iu.UID > math.MaxInt32:
		return fmt.Errorf("container %q has runAsNonRoot and image has an invalid user id %d: %w", name, *iu.UID, errdefs.ErrInvalidArgument)
	}
	return nil
}

// containerSecurity is the kubelet's determineEffectiveSecurityContext.
func containerSecurity(in ContainerInput, opts Options) (*runtimeapi.LinuxContainerSecurityContext, error) {
	pod, c := in.Pod, in.Container
	sc := effectiveSecurityContext(pod, c)
	if err := verifyRunAsNonRoot(in, sc); err != nil {
		return nil, err
	}
	out := &runtimeapi.LinuxContainerSecurityContext{
		SelinuxOptions: selinux(sc.SELinuxOptions),
		Privileged:     sc.Privileged != nil && *sc.Privileged,
		ReadonlyRootfs: sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem,
		// The kubelet sets no_new_privs only when allowPrivilegeEscalation
		// is explicitly false.
		NoNewPrivs: sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation,
	}
	if caps := sc.Capabilities; caps != nil {
		out.Capabilities = &runtimeapi.Capability{}
		for _, a := range caps.Add {
			out.Capabilities.AddCapabilities = append(out.Capabilities.AddCapabilities, string(a))
		}
		for _, d := range caps.Drop {
			out.Capabilities.DropCapabilities = append(out.Capabilities.DropCapabilities, string(d))
		}
	}
	if sc.RunAsUser != nil {
		out.RunAsUser = &runtimeapi.Int64Value{Value: *sc.RunAsUser}
	} else if iu := in.ImageUser; iu != nil {
		// As the kubelet: the image's numeric user, or its user name for
		// the runtime to resolve, or root when the image names none.
		switch {
		case iu.UID != nil:
			out.RunAsUser = &runtimeapi.Int64Value{Value: *iu.UID}
		case iu.Username != "":
			out.RunAsUsername = iu.Username
		default:
			out.RunAsUser = &runtimeapi.Int64Value{Value: 0}
		}
	}
	if sc.RunAsGroup != nil {
		out.RunAsGroup = &runtimeapi.Int64Value{Value: *sc.RunAsGroup}
	}
	var err error
	if out.Seccomp, err = seccompProfile(c.Name, sc.SeccompProfile, opts); err != nil {
		return nil, err
	}
	//lint:ignore SA1019 runtimes older than the Apparmor field read only the deprecated one, so the kubelet sends both
	out.Apparmor, out.ApparmorProfile = appArmorProfile(sc.AppArmorProfile)
	if out.NamespaceOptions, err = namespaces(pod, in.UserNamespace); err != nil {
		return nil, err
	}
	out.SupplementalGroups, out.SupplementalGroupsPolicy, err = supplementalGroups(pod.Spec.SecurityContext)
	if err != nil {
		return nil, err
	}
	if out.MaskedPaths, out.ReadonlyPaths, err = procMountPaths(pod, c.Name, sc.ProcMount); err != nil {
		return nil, err
	}
	return out, nil
}

// defaultMaskedPaths and defaultReadonlyPaths are what the kubelet sends
// for procMount Default (k8s.io/kubernetes pkg/securitycontext): a runtime
// masks only what it is sent.
var (
	defaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
		"/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// procMountPaths are the kubelet's masked and read-only paths for a
// container's procMount: its default lists (for a privileged container too:
// the runtime drops them there), and none for Unmasked, which the API
// server allows only in a pod with hostUsers: false.
func procMountPaths(pod *corev1.Pod, container string, pm *corev1.ProcMountType) (masked, readonly []string, err error) {
	if pm == nil || *pm == corev1.DefaultProcMount {
		return slices.Clone(defaultMaskedPaths), slices.Clone(defaultReadonlyPaths), nil
	}
	if *pm != corev1.UnmaskedProcMount {
		return nil, nil, fmt.Errorf("container %q: securityContext.procMount %q is not Default or Unmasked: %w", container, *pm, errdefs.ErrInvalidArgument)
	}
	if HostUsers(pod) {
		return nil, nil, fmt.Errorf("container %q: securityContext.procMount Unmasked needs spec.hostUsers false: %w", container, errdefs.ErrInvalidArgument)
	}
	return []string{}, []string{}, nil
}

func selinux(o *corev1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}

// seccompProfile is the kubelet's getSeccompProfile for the effective
// (container over pod) profile.
func seccompProfile(container string, p *corev1.SeccompProfile, opts Options) (*runtimeapi.SecurityProfile, error) {
	if p == nil {
		if opts.SeccompDefault {
			return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	}
	switch p.Type {
	case corev1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case corev1.SeccompProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	case corev1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, fmt.Errorf("container %q: seccompProfile.localhostProfile must be set for type Localhost: %w", container, errdefs.ErrInvalidArgument)
		}
		ref := filepath.Join(opts.SeccompProfileRoot, *p.LocalhostProfile)
		if !filepath.IsAbs(ref) {
			return nil, fmt.Errorf("container %q: seccompProfile.localhostProfile %q is relative and no profile root is configured: %w", container, *p.LocalhostProfile, errdefs.ErrInvalidArgument)
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: ref}, nil
	}
	return nil, fmt.Errorf("container %q: seccompProfile.type %q is not valid: %w", container, p.Type, errdefs.ErrInvalidArgument)
}

// appArmorProfile converts the effective AppArmor profile, also in the
// deprecated string form the kubelet still sends; none leaves the runtime
// default.
func appArmorProfile(p *corev1.AppArmorProfile) (*runtimeapi.SecurityProfile, string) {
	if p == nil {
		return nil, ""
	}
	switch p.Type {
	case corev1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, "runtime/default"
	case corev1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, "unconfined"
	case corev1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile != nil && *p.LocalhostProfile != "" {
			return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
				"localhost/" + *p.LocalhostProfile
		}
	}
	return nil, ""
}

// namespaces is the kubelet's NamespacesForPod: the node's namespaces where
// the pod asks for them, a pod-wide PID namespace with
// shareProcessNamespace, else one per container. A pod with hostUsers:
// false gets a user namespace mapping ids 0-65535 to userNS, its block of
// the node's range (the caller allocates it); any other pod the node's, said
// as the kubelet says it (mode NODE).
func namespaces(pod *corev1.Pod, userNS *userns.Range) (*runtimeapi.NamespaceOption, error) {
	ns := &runtimeapi.NamespaceOption{
		Network:       runtimeapi.NamespaceMode_POD,
		Pid:           runtimeapi.NamespaceMode_CONTAINER,
		Ipc:           runtimeapi.NamespaceMode_POD,
		UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE},
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	if !HostUsers(pod) {
		if err := checkUserNamespace(pod, userNS); err != nil {
			return nil, err
		}
		m := []*runtimeapi.IDMapping{{HostId: userNS.First, ContainerId: 0, Length: userNS.Length}}
		ns.UsernsOptions = &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: m, Gids: m}
	}
	return ns, nil
}

// HostUsers reports whether the pod runs with the node's users: unless it
// says hostUsers: false.
func HostUsers(pod *corev1.Pod) bool {
	return pod.Spec.HostUsers == nil || *pod.Spec.HostUsers
}

// checkUserNamespace refuses a user namespace the API server would (with
// the node's network, PID or IPC namespace) and one without its block.
func checkUserNamespace(pod *corev1.Pod, userNS *userns.Range) error {
	for _, host := range []struct {
		field string
		set   bool
	}{{"hostNetwork", pod.Spec.HostNetwork}, {"hostPID", pod.Spec.HostPID}, {"hostIPC", pod.Spec.HostIPC}} {
		if host.set {
			return fmt.Errorf("spec.%s is forbidden when spec.hostUsers is false: %w", host.field, errdefs.ErrInvalidArgument)
		}
	}
	if userNS == nil || userNS.Length == 0 {
		return fmt.Errorf("hostUsers false: the pod has no range of host ids for its user namespace: %w", errdefs.ErrFailedPrecondition)
	}
	return nil
}

// supplementalGroups is fsGroup then supplementalGroups, with the policy.
func supplementalGroups(psc *corev1.PodSecurityContext) ([]int64, runtimeapi.SupplementalGroupsPolicy, error) {
	if psc == nil {
		return nil, runtimeapi.SupplementalGroupsPolicy_Merge, nil
	}
	var groups []int64
	if psc.FSGroup != nil {
		groups = append(groups, *psc.FSGroup)
	}
	groups = append(groups, psc.SupplementalGroups...)
	policy := runtimeapi.SupplementalGroupsPolicy_Merge
	if psc.SupplementalGroupsPolicy != nil {
		v, ok := runtimeapi.SupplementalGroupsPolicy_value[string(*psc.SupplementalGroupsPolicy)]
		if !ok {
			return nil, 0, fmt.Errorf("supplementalGroupsPolicy %q is not valid: %w", *psc.SupplementalGroupsPolicy, errdefs.ErrInvalidArgument)
		}
		policy = runtimeapi.SupplementalGroupsPolicy(v)
	}
	return groups, policy, nil
}
