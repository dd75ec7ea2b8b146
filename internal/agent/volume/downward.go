package volume

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
)

// downwardFiles renders downwardAPI items. Only the metadata fields a
// downwardAPI volume may carry are supported: metadata.name, .namespace,
// .uid, .labels, .annotations, and one label or annotation by key
// (metadata.labels['k']). resourceFieldRef is refused: it needs the
// container's resolved limits, which this package does not know.
func downwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, defaultMode *int32, defaultUser *int64) (payload, error) {
	files := payload{}
	for _, it := range items {
		if it.ResourceFieldRef != nil {
			return nil, fmt.Errorf("downwardAPI item %q: resourceFieldRef is not supported by crib's standalone agent: %w", it.Path, errdefs.ErrInvalidArgument)
		}
		if it.FieldRef == nil {
			return nil, fmt.Errorf("downwardAPI item %q: no fieldRef: %w", it.Path, errdefs.ErrInvalidArgument)
		}
		if v := it.FieldRef.APIVersion; v != "" && v != "v1" {
			return nil, fmt.Errorf("downwardAPI item %q: apiVersion %q: %w", it.Path, v, errdefs.ErrInvalidArgument)
		}
		value, err := fieldValue(pod, it.FieldRef.FieldPath)
		if err != nil {
			return nil, fmt.Errorf("downwardAPI item %q: %w", it.Path, err)
		}
		mode, err := fileMode(defaultMode, it.Mode)
		if err != nil {
			return nil, fmt.Errorf("downwardAPI item %q: %w", it.Path, err)
		}
		files[it.Path] = file{data: []byte(value), mode: mode, uid: owner(defaultUser, it.User)}
	}
	return files, checkPaths(files)
}

// fieldValue resolves one metadata field path of pod.
func fieldValue(pod *corev1.Pod, fieldPath string) (string, error) {
	if key, ok := subscript(fieldPath, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(fieldPath, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	}
	return "", fmt.Errorf("field path %q is not supported in a downwardAPI volume: %w", fieldPath, errdefs.ErrInvalidArgument)
}

// subscript parses prefix['key'].
func subscript(fieldPath, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(fieldPath, prefix+"['")
	if !ok {
		return "", false
	}
	key, ok := strings.CutSuffix(rest, "']")
	return key, ok && key != ""
}

// formatMap renders a map as the kubelet does: key="quoted value" lines,
// sorted by key, without a trailing newline.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + "=" + strconv.Quote(m[k])
	}
	return strings.Join(lines, "\n")
}
