package volume

import corev1 "k8s.io/api/core/v1"

// ReadOnly reports whether the runtime must mount v read-only whatever the
// container's volumeMount says: configMap, secret, downwardAPI and projected
// volumes, as the kubelet does. Their directories are rewritten by this
// package on every update; a container that could write there could plant
// symlinks the next update would write through.
func ReadOnly(v *corev1.Volume) bool {
	if v == nil {
		return false
	}
	s := &v.VolumeSource
	return s.ConfigMap != nil || s.Secret != nil || s.DownwardAPI != nil || s.Projected != nil
}
