package source

import (
	"crypto/sha256"
	"encoding/hex"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Annotations every pod from a manifest carries.
const (
	// AnnotationConfigSource is "file", as on the kubelet's static pods.
	AnnotationConfigSource = "kubernetes.io/config.source"
	// AnnotationConfigHash is the pod's UID, as on the kubelet's static pods.
	AnnotationConfigHash = "kubernetes.io/config.hash"
	// AnnotationConfigFile is the absolute path of the manifest file.
	AnnotationConfigFile = "crib.dev/config.file"

	ConfigSourceFile = "file"
)

// PodUID is the UID of the pod namespace/name defined in the manifest file
// path on node nodeName: 32 hex digits of a SHA-256 over those four
// strings. It does not depend on the pod's content, so an edited pod keeps
// its UID.
func PodUID(path, namespace, name, nodeName string) types.UID {
	h := sha256.New()
	for _, s := range []string{"file", path, namespace, name, nodeName} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return types.UID(hex.EncodeToString(h.Sum(nil)[:16]))
}

// setIdentity gives a defaulted pod its UID and source annotations. A uid
// written in the manifest is replaced: manifests copied from a cluster
// carry the cluster pod's uid, and two copies must not share it.
func setIdentity(pod *corev1.Pod, path, nodeName string) {
	pod.UID = PodUID(path, pod.Namespace, pod.Name, nodeName)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationConfigSource] = ConfigSourceFile
	pod.Annotations[AnnotationConfigHash] = string(pod.UID)
	pod.Annotations[AnnotationConfigFile] = path
}

// markFile names the file a ConfigMap or Secret came from, so that the
// watcher can keep it with the pods of a file it rejects.
func markFile(meta *metav1.ObjectMeta, path string) {
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[AnnotationConfigFile] = path
}
