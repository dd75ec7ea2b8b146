package source

import (
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults the API server would have applied before a kubelet saw the pod.
const (
	DefaultNamespace              = metav1.NamespaceDefault
	DefaultTerminationGracePeriod = int64(30)
	DefaultTerminationMessagePath = corev1.TerminationMessagePathDefault
	DefaultVolumeMode             = int32(0o644)
)

// defaultPod fills what the API server defaults, so that the rest of the
// agent never sees an empty restartPolicy or probe period. Fields the
// agent does not read (schedulerName, enableServiceLinks) are left alone,
// and so is the security context. The status from the manifest (a pod
// copied from `kubectl get -o yaml` has one) is replaced by Pending.
func defaultPod(pod *corev1.Pod, nodeName string) {
	if pod.Namespace == "" {
		pod.Namespace = DefaultNamespace
	}
	spec := &pod.Spec
	spec.NodeName = nodeName
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr(DefaultTerminationGracePeriod)
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i], spec.HostNetwork)
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i], spec.HostNetwork)
	}
	for i := range spec.EphemeralContainers {
		c := &spec.EphemeralContainers[i].EphemeralContainerCommon
		if c.ImagePullPolicy == "" {
			c.ImagePullPolicy = pullPolicy(c.Image)
		}
		defaultTerminationMessage(&c.TerminationMessagePath, &c.TerminationMessagePolicy)
	}
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending}
}

func defaultContainer(c *corev1.Container, hostNetwork bool) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicy(c.Image)
	}
	defaultTerminationMessage(&c.TerminationMessagePath, &c.TerminationMessagePolicy)
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort
		}
	}
	for _, p := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
		defaultProbe(p)
	}
	if c.Lifecycle != nil {
		defaultHandler(c.Lifecycle.PostStart)
		defaultHandler(c.Lifecycle.PreStop)
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
	// A limit without a request requests the limit; the QoS class depends
	// on it.
	for name, limit := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; ok {
			continue
		}
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		c.Resources.Requests[name] = limit.DeepCopy()
	}
}

func defaultTerminationMessage(path *string, policy *corev1.TerminationMessagePolicy) {
	if *path == "" {
		*path = DefaultTerminationMessagePath
	}
	if *policy == "" {
		*policy = corev1.TerminationMessageReadFile
	}
}

// pullPolicy is Always for an image without a digest whose tag is latest
// or absent, IfNotPresent otherwise.
func pullPolicy(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	tag := ""
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		tag = image[i+1:]
	}
	if tag == "" || tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
}

func defaultHandler(h *corev1.LifecycleHandler) {
	if h != nil {
		defaultHTTPGet(h.HTTPGet)
	}
}

func defaultHTTPGet(g *corev1.HTTPGetAction) {
	if g == nil {
		return
	}
	if g.Path == "" {
		g.Path = "/"
	}
	if g.Scheme == "" {
		g.Scheme = corev1.URISchemeHTTP
	}
}

func defaultVolume(v *corev1.Volume) {
	if reflect.ValueOf(v.VolumeSource).IsZero() {
		v.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	switch {
	case v.HostPath != nil:
		if v.HostPath.Type == nil {
			v.HostPath.Type = ptr(corev1.HostPathUnset)
		}
	case v.ConfigMap != nil:
		if v.ConfigMap.DefaultMode == nil {
			v.ConfigMap.DefaultMode = ptr(DefaultVolumeMode)
		}
	case v.Secret != nil:
		if v.Secret.DefaultMode == nil {
			v.Secret.DefaultMode = ptr(DefaultVolumeMode)
		}
	case v.DownwardAPI != nil:
		if v.DownwardAPI.DefaultMode == nil {
			v.DownwardAPI.DefaultMode = ptr(DefaultVolumeMode)
		}
		for i := range v.DownwardAPI.Items {
			if f := v.DownwardAPI.Items[i].FieldRef; f != nil && f.APIVersion == "" {
				f.APIVersion = "v1"
			}
		}
	case v.Projected != nil:
		if v.Projected.DefaultMode == nil {
			v.Projected.DefaultMode = ptr(DefaultVolumeMode)
		}
	case v.Image != nil:
		if v.Image.PullPolicy == "" {
			v.Image.PullPolicy = pullPolicy(v.Image.Reference)
		}
	}
}

func defaultConfigMap(cm *corev1.ConfigMap) {
	if cm.Namespace == "" {
		cm.Namespace = DefaultNamespace
	}
}

// defaultSecret merges stringData into data (stringData wins, as on the
// API server) and clears it, and sets the type to Opaque.
func defaultSecret(s *corev1.Secret) {
	if s.Namespace == "" {
		s.Namespace = DefaultNamespace
	}
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	for k, v := range s.StringData {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

func ptr[T any](v T) *T { return &v }
