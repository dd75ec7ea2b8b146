package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
)

// hashedContainer is what ContainerHash covers: the whole container spec,
// the definitions of the pod volumes it uses, and the pod-level fields
// that go into every container's config (the pod's security context —
// seccomp, AppArmor, run-as-user and groups — and the service account the
// downward API can expose).
type hashedContainer struct {
	Container       *corev1.Container          `json:"container"`
	Volumes         []corev1.Volume            `json:"volumes,omitempty"`
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`
	ServiceAccount  string                     `json:"serviceAccount,omitempty"`
}

// ContainerHash returns a hash of everything that, when it changes, must
// restart container c of pod: the whole container spec (image, command,
// args, env, resources, probes, mounts, ...), the pod volumes that its
// volumeMounts and volumeDevices reference, so that editing a volume's
// definition restarts the containers that use it, and the pod-level fields
// every container's config is made from.
//
// The hash is the first 16 hex digits of the SHA-256 of the JSON encoding.
// encoding/json writes struct fields in declaration order and map keys
// sorted, and resource quantities in canonical form, so the same spec gives
// the same hash in every process and with every Go version. A k8s.io/api
// upgrade that adds a field without omitempty would change every hash and
// restart every container once; the API's new fields are optional, so that
// does not happen in practice.
func ContainerHash(pod *corev1.Pod, c *corev1.Container) string {
	h := hashedContainer{Container: c, Volumes: usedVolumes(pod, c)}
	if pod != nil {
		h.SecurityContext = pod.Spec.SecurityContext
		h.ServiceAccount = pod.Spec.ServiceAccountName
	}
	b, err := json.Marshal(h)
	if err != nil {
		// The core/v1 types always encode; keep the function total anyway.
		b = []byte(err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// ResizeHash is ContainerHash of c with its resources and resize policy
// left out: two versions of a container with the same ResizeHash differ at
// most in what a resize in place can change.
func ResizeHash(pod *corev1.Pod, c *corev1.Container) string {
	if c == nil {
		return ContainerHash(pod, c)
	}
	bare := *c
	bare.Resources = corev1.ResourceRequirements{}
	bare.ResizePolicy = nil
	return ContainerHash(pod, &bare)
}

// usedVolumes returns the pod volumes c references, in the pod's order.
func usedVolumes(pod *corev1.Pod, c *corev1.Container) []corev1.Volume {
	if pod == nil || c == nil {
		return nil
	}
	used := map[string]bool{}
	for _, m := range c.VolumeMounts {
		used[m.Name] = true
	}
	for _, d := range c.VolumeDevices {
		used[d.Name] = true
	}
	var out []corev1.Volume
	for _, v := range pod.Spec.Volumes {
		if used[v.Name] {
			out = append(out, v)
		}
	}
	return out
}
