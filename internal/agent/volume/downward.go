package volume

import (
	"fmt"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/podconfig"
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
	if v, ok := podconfig.MetadataField(pod, fieldPath); ok {
		return v, nil
	}
	return "", fmt.Errorf("field path %q is not supported in a downwardAPI volume: %w", fieldPath, errdefs.ErrInvalidArgument)
}
