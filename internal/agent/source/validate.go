package source

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The checks here are the ones the agent's correctness depends on, not the
// API server's whole validation: names that become paths and labels,
// unique container and volume names, mounts that name a volume, probes and
// hooks with exactly one handler, sane ports and restart policy.

func required(p *field.Path) error { return &fieldError{path: p.String(), msg: "required value"} }

func invalid(p *field.Path, value any, detail string) error {
	return &fieldError{path: p.String(), msg: fmt.Sprintf("invalid value %#v: %s", value, detail)}
}

func duplicate(p *field.Path, value any) error {
	return &fieldError{path: p.String(), msg: fmt.Sprintf("duplicate value %#v", value)}
}

func notFound(p *field.Path, value any) error {
	return &fieldError{path: p.String(), msg: fmt.Sprintf("not found %#v", value)}
}

// checkName runs one of apimachinery's name checks.
func checkName(p *field.Path, value string, check func(string) []string) []error {
	if value == "" {
		return []error{required(p)}
	}
	if msgs := check(value); len(msgs) > 0 {
		return []error{invalid(p, value, strings.Join(msgs, ", "))}
	}
	return nil
}

func validateMeta(name, namespace string) []error {
	meta := field.NewPath("metadata")
	errs := checkName(meta.Child("name"), name, validation.IsDNS1123Subdomain)
	return append(errs, checkName(meta.Child("namespace"), namespace, validation.IsDNS1123Label)...)
}

func validatePod(pod *corev1.Pod) []error {
	errs := validateMeta(pod.Name, pod.Namespace)
	spec := field.NewPath("spec")
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
	default:
		errs = append(errs, &fieldError{path: spec.Child("restartPolicy").String(),
			msg: fmt.Sprintf("unsupported value %q: supported values: \"Always\", \"OnFailure\", \"Never\"", pod.Spec.RestartPolicy)})
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, invalid(spec.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	errs = append(errs, validateHostUsers(&pod.Spec, spec)...)
	volumes, verrs := validateVolumes(pod.Spec.Volumes, spec.Child("volumes"))
	errs = append(errs, verrs...)
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, required(spec.Child("containers")))
	}
	names := map[string]bool{}
	hostUsers := pod.Spec.HostUsers == nil || *pod.Spec.HostUsers
	for i := range pod.Spec.InitContainers {
		errs = append(errs, validateContainer(&pod.Spec.InitContainers[i], spec.Child("initContainers").Index(i), names, volumes, hostUsers)...)
	}
	for i := range pod.Spec.Containers {
		errs = append(errs, validateContainer(&pod.Spec.Containers[i], spec.Child("containers").Index(i), names, volumes, hostUsers)...)
	}
	return errs
}

// validateHostUsers is the API server's rule for hostUsers: false: a pod in
// its own user namespace may not share the node's network, PID or IPC
// namespace.
func validateHostUsers(spec *corev1.PodSpec, p *field.Path) []error {
	if spec.HostUsers == nil || *spec.HostUsers {
		return nil
	}
	var errs []error
	for _, host := range []struct {
		name string
		set  bool
	}{{"hostNetwork", spec.HostNetwork}, {"hostPID", spec.HostPID}, {"hostIPC", spec.HostIPC}} {
		if host.set {
			errs = append(errs, &fieldError{path: p.Child(host.name).String(), msg: "forbidden: when `spec.hostUsers` is false"})
		}
	}
	return errs
}

func validateVolumes(vols []corev1.Volume, p *field.Path) (map[string]bool, []error) {
	var errs []error
	names := map[string]bool{}
	for i, v := range vols {
		np := p.Index(i).Child("name")
		errs = append(errs, checkName(np, v.Name, validation.IsDNS1123Label)...)
		if names[v.Name] {
			errs = append(errs, duplicate(np, v.Name))
		}
		names[v.Name] = true
		if v.HostPath != nil && v.HostPath.Path == "" {
			errs = append(errs, required(p.Index(i).Child("hostPath", "path")))
		}
		if v.ConfigMap != nil && v.ConfigMap.Name == "" {
			errs = append(errs, required(p.Index(i).Child("configMap", "name")))
		}
		if v.Secret != nil && v.Secret.SecretName == "" {
			errs = append(errs, required(p.Index(i).Child("secret", "secretName")))
		}
		if v.Image != nil && strings.TrimSpace(v.Image.Reference) == "" {
			errs = append(errs, required(p.Index(i).Child("image", "reference")))
		}
	}
	return names, errs
}

// validateContainer checks one init or app container; names collects the
// container names seen so far, which must be unique across both kinds.
// hostUsers says the pod runs with the node's users.
func validateContainer(c *corev1.Container, p *field.Path, names, volumes map[string]bool, hostUsers bool) []error {
	np := p.Child("name")
	errs := checkName(np, c.Name, validation.IsDNS1123Label)
	if c.Name != "" && names[c.Name] {
		errs = append(errs, duplicate(np, c.Name))
	}
	names[c.Name] = true
	if strings.TrimSpace(c.Image) == "" {
		errs = append(errs, required(p.Child("image")))
	}
	for i, port := range c.Ports {
		pp := p.Child("ports").Index(i)
		if port.ContainerPort < 1 || port.ContainerPort > 65535 {
			errs = append(errs, invalid(pp.Child("containerPort"), port.ContainerPort, "must be between 1 and 65535, inclusive"))
		}
		if port.HostPort < 0 || port.HostPort > 65535 {
			errs = append(errs, invalid(pp.Child("hostPort"), port.HostPort, "must be between 0 and 65535, inclusive"))
		}
		switch port.Protocol {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			errs = append(errs, &fieldError{path: pp.Child("protocol").String(),
				msg: fmt.Sprintf("unsupported value %q: supported values: \"TCP\", \"UDP\", \"SCTP\"", port.Protocol)})
		}
	}
	for i, m := range c.VolumeMounts {
		mp := p.Child("volumeMounts").Index(i)
		if m.Name == "" {
			errs = append(errs, required(mp.Child("name")))
		} else if !volumes[m.Name] {
			errs = append(errs, notFound(mp.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, required(mp.Child("mountPath")))
		}
	}
	if c.SecurityContext != nil && c.SecurityContext.ProcMount != nil {
		errs = append(errs, validateProcMount(*c.SecurityContext.ProcMount, p.Child("securityContext", "procMount"), hostUsers)...)
	}
	for _, probe := range []struct {
		name string
		p    *corev1.Probe
	}{{"startupProbe", c.StartupProbe}, {"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}} {
		if probe.p != nil {
			errs = append(errs, checkHandlers(p.Child(probe.name), probe.p.Exec != nil, probe.p.HTTPGet != nil, probe.p.TCPSocket != nil, probe.p.GRPC != nil)...)
		}
	}
	if lc := c.Lifecycle; lc != nil {
		for _, hook := range []struct {
			name string
			h    *corev1.LifecycleHandler
		}{{"postStart", lc.PostStart}, {"preStop", lc.PreStop}} {
			if hook.h != nil {
				errs = append(errs, checkHandlers(p.Child("lifecycle", hook.name), hook.h.Exec != nil, hook.h.HTTPGet != nil, hook.h.TCPSocket != nil, hook.h.Sleep != nil)...)
			}
		}
	}
	return errs
}

// validateProcMount is the API server's rule for procMount: Default, or
// Unmasked in a pod of its own user namespace.
func validateProcMount(pm corev1.ProcMountType, p *field.Path, hostUsers bool) []error {
	switch pm {
	case corev1.DefaultProcMount:
		return nil
	case corev1.UnmaskedProcMount:
		if hostUsers {
			return []error{invalid(p, pm, "`hostUsers` must be false to use `Unmasked`")}
		}
		return nil
	}
	return []error{&fieldError{path: p.String(), msg: fmt.Sprintf("unsupported value %q: supported values: \"Default\", \"Unmasked\"", pm)}}
}

// checkHandlers wants exactly one of a probe's or hook's handlers set.
func checkHandlers(p *field.Path, set ...bool) []error {
	n := 0
	for _, s := range set {
		if s {
			n++
		}
	}
	switch {
	case n == 0:
		return []error{&fieldError{path: p.String(), msg: "must specify a handler type"}}
	case n > 1:
		return []error{&fieldError{path: p.String(), msg: "may not specify more than 1 handler type"}}
	}
	return nil
}

func validateConfigMap(cm *corev1.ConfigMap) []error {
	errs := validateMeta(cm.Name, cm.Namespace)
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		errs = append(errs, checkKey(field.NewPath("data").Key(k), k)...)
		if _, ok := cm.BinaryData[k]; ok {
			errs = append(errs, duplicate(field.NewPath("binaryData").Key(k), k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cm.BinaryData)) {
		errs = append(errs, checkKey(field.NewPath("binaryData").Key(k), k)...)
	}
	return errs
}

func validateSecret(s *corev1.Secret) []error {
	errs := validateMeta(s.Name, s.Namespace)
	for _, k := range slices.Sorted(maps.Keys(s.Data)) {
		errs = append(errs, checkKey(field.NewPath("data").Key(k), k)...)
	}
	return errs
}

func checkKey(p *field.Path, k string) []error {
	if msgs := validation.IsConfigMapKey(k); len(msgs) > 0 {
		return []error{invalid(p, k, strings.Join(msgs, ", "))}
	}
	return nil
}
