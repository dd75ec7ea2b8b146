package podconfig

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// envList is an ordered set of variables: a name keeps the position of its
// first definition and the value of its last, so the produced order is
// stable while later definitions win as in the kubelet.
type envList struct {
	names  []string
	values map[string]string
}

func (e *envList) set(name, value string) {
	if e.values == nil {
		e.values = map[string]string{}
	}
	if _, ok := e.values[name]; !ok {
		e.names = append(e.names, name)
	}
	e.values[name] = value
}

// makeEnv builds the container's environment like the kubelet's
// makeEnvironmentVariables: first every envFrom source in order (keys of one
// source sorted; keys that are not valid variable names, i.e. that hold
// "=" or a non-printable or non-ASCII character, skipped), then each
// env entry in order, a literal value expanded against everything defined
// before it. Standalone there are no Services, so no service variables.
func makeEnv(in ContainerInput, opts Options) (*envList, error) {
	c := in.Container
	env := &envList{}
	for i, from := range c.EnvFrom {
		field := fmt.Sprintf("envFrom[%d]", i)
		var data map[string]string
		switch {
		case from.ConfigMapRef != nil:
			cm, err := configMap(in, from.ConfigMapRef.Name)
			if err != nil {
				if optional(from.ConfigMapRef.Optional) {
					continue
				}
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			data = cm.Data
		case from.SecretRef != nil:
			s, err := secret(in, from.SecretRef.Name)
			if err != nil {
				if optional(from.SecretRef.Optional) {
					continue
				}
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			data = secretData(s)
		default:
			continue
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			name := from.Prefix + k
			if len(validation.IsRelaxedEnvVarName(name)) > 0 {
				continue
			}
			env.set(name, data[k])
		}
	}
	for i := range c.Env {
		v := &c.Env[i]
		field := fmt.Sprintf("env[%d] (%s)", i, v.Name)
		if v.ValueFrom == nil {
			env.set(v.Name, expand(v.Value, lookupIn(env.values)))
			continue
		}
		value, ok, err := envSource(in, opts, v.ValueFrom)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		if ok {
			env.set(v.Name, value)
		}
	}
	return env, nil
}

// envSource resolves a valueFrom; ok is false when an optional source is
// missing, in which case the variable is not set at all.
func envSource(in ContainerInput, opts Options, src *corev1.EnvVarSource) (string, bool, error) {
	switch {
	case src.FieldRef != nil:
		v, err := podField(in, opts, src.FieldRef.FieldPath)
		return v, err == nil, err
	case src.ResourceFieldRef != nil:
		v, err := resourceField(in, opts, src.ResourceFieldRef)
		return v, err == nil, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := configMap(in, ref.Name)
		if err != nil {
			return "", false, skipIfOptional(ref.Optional, err)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			return "", false, skipIfOptional(ref.Optional,
				fmt.Errorf("key %q in ConfigMap %s/%s: %w", ref.Key, in.Pod.Namespace, ref.Name, errdefs.ErrNotFound))
		}
		return v, true, nil
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := secret(in, ref.Name)
		if err != nil {
			return "", false, skipIfOptional(ref.Optional, err)
		}
		v, ok := secretData(s)[ref.Key]
		if !ok {
			return "", false, skipIfOptional(ref.Optional,
				fmt.Errorf("key %q in Secret %s/%s: %w", ref.Key, in.Pod.Namespace, ref.Name, errdefs.ErrNotFound))
		}
		return v, true, nil
	}
	return "", false, fmt.Errorf("valueFrom names no source: %w", errdefs.ErrInvalidArgument)
}

func optional(p *bool) bool { return p != nil && *p }

func skipIfOptional(p *bool, err error) error {
	if optional(p) {
		return nil
	}
	return err
}

func configMap(in ContainerInput, name string) (*corev1.ConfigMap, error) {
	cm := in.ConfigMaps[in.Pod.Namespace+"/"+name]
	if cm == nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", in.Pod.Namespace, name, errdefs.ErrNotFound)
	}
	return cm, nil
}

func secret(in ContainerInput, name string) (*corev1.Secret, error) {
	s := in.Secrets[in.Pod.Namespace+"/"+name]
	if s == nil {
		return nil, fmt.Errorf("secret %s/%s: %w", in.Pod.Namespace, name, errdefs.ErrNotFound)
	}
	return s, nil
}

// secretData is the Secret's data as strings. A manifest may use
// stringData, which the API server would have merged into data (winning
// over it); standalone nobody did, so it is merged here.
func secretData(s *corev1.Secret) map[string]string {
	out := make(map[string]string, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		out[k] = string(v)
	}
	for k, v := range s.StringData {
		out[k] = v
	}
	return out
}

// podField is the downward API's fieldRef for environment variables: the
// pod's metadata (MetadataField) and the spec and status fields only
// environment variables may read.
func podField(in ContainerInput, opts Options, fieldPath string) (string, error) {
	pod := in.Pod
	if v, ok := MetadataField(pod, fieldPath); ok {
		return v, nil
	}
	switch fieldPath {
	case "spec.nodeName":
		if pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
		return opts.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return first(opts.HostIPs), nil
	case "status.hostIPs":
		return strings.Join(opts.HostIPs, ","), nil
	case "status.podIP":
		return first(podIPs(in, opts)), nil
	case "status.podIPs":
		return strings.Join(podIPs(in, opts), ","), nil
	}
	return "", fmt.Errorf("fieldRef %q is not supported: %w", fieldPath, errdefs.ErrInvalidArgument)
}

// podIPs are the pod's addresses; a host-network pod given none has the
// node's.
func podIPs(in ContainerInput, opts Options) []string {
	ips := in.PodIPs
	if len(ips) == 0 && in.PodIP != "" {
		ips = []string{in.PodIP}
	}
	if len(ips) == 0 && in.Pod.Spec.HostNetwork {
		ips = opts.HostIPs
	}
	return ips
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// resourceField is the downward API's resourceFieldRef: the named
// container's (this one by default) request or limit divided by the
// divisor (1 by default) and rounded up. An unset limit is the node's
// capacity when Options gives it, else 0 (the kubelet uses the node's
// allocatable, which a standalone agent does not compute).
func resourceField(in ContainerInput, opts Options, ref *corev1.ResourceFieldSelector) (string, error) {
	c := in.Container
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		c = findContainer(in.Pod, ref.ContainerName)
		if c == nil {
			return "", fmt.Errorf("resourceFieldRef container %q: %w", ref.ContainerName, errdefs.ErrNotFound)
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	limits := c.Resources.Limits
	requests := effectiveRequests(c)
	var q resource.Quantity
	switch ref.Resource {
	case "limits.cpu":
		q = *limits.Cpu()
		if q.IsZero() && opts.NodeMilliCPU > 0 {
			q = *resource.NewMilliQuantity(opts.NodeMilliCPU, resource.DecimalSI)
		}
	case "limits.memory":
		q = *limits.Memory()
		if q.IsZero() && opts.NodeMemoryBytes > 0 {
			q = *resource.NewQuantity(opts.NodeMemoryBytes, resource.BinarySI)
		}
	case "limits.ephemeral-storage":
		q = *limits.StorageEphemeral()
	case "requests.cpu":
		q = *requests.Cpu()
	case "requests.memory":
		q = *requests.Memory()
	case "requests.ephemeral-storage":
		q = *requests.StorageEphemeral()
	default:
		return "", fmt.Errorf("resourceFieldRef %q is not supported: %w", ref.Resource, errdefs.ErrInvalidArgument)
	}
	var v float64
	if ref.Resource == "limits.cpu" || ref.Resource == "requests.cpu" {
		v = float64(q.MilliValue()) / float64(divisor.MilliValue())
	} else {
		v = float64(q.Value()) / float64(divisor.Value())
	}
	return strconv.FormatInt(int64(math.Ceil(v)), 10), nil
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, c := range allContainers(pod) {
		if c.Name == name {
			return c
		}
	}
	return nil
}
