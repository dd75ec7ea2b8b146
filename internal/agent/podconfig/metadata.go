package podconfig

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// MetadataField resolves a downward-API field path that reads the pod's
// own metadata: metadata.name, .namespace, .uid, .labels, .annotations, and
// one label or annotation by key (metadata.labels['k'], a missing key being
// the empty string). Whole maps render as key="value" lines sorted by key,
// without a trailing newline. ok is false for any other path, including an
// empty key. Environment variables (ContainerConfig) and downwardAPI
// volumes both use it, so the two render a field alike.
func MetadataField(pod *corev1.Pod, fieldPath string) (value string, ok bool) {
	switch fieldPath {
	case "metadata.name":
		return pod.Name, true
	case "metadata.namespace":
		return pod.Namespace, true
	case "metadata.uid":
		return string(pod.UID), true
	case "metadata.labels":
		return formatMap(pod.Labels), true
	case "metadata.annotations":
		return formatMap(pod.Annotations), true
	}
	if key, ok := subscript(fieldPath, "metadata.labels"); ok {
		return pod.Labels[key], true
	}
	if key, ok := subscript(fieldPath, "metadata.annotations"); ok {
		return pod.Annotations[key], true
	}
	return "", false
}

// subscript parses prefix['key'] with a non-empty key.
func subscript(fieldPath, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(fieldPath, prefix+"['")
	if !ok {
		return "", false
	}
	key, ok := strings.CutSuffix(rest, "']")
	return key, ok && key != ""
}

// formatMap renders labels or annotations as the downward API does:
// key="value" lines (the value quoted as Go quotes it), sorted by key.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return strings.TrimSuffix(b.String(), "\n")
}
