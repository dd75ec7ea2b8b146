package container

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// validate checks what CreateContainer needs of its config and names the
// offending field.
func validate(cfg *runtimeapi.ContainerConfig) error {
	switch {
	case cfg == nil:
		return fmt.Errorf("config is missing: %w", errdefs.ErrInvalidArgument)
	case cfg.GetMetadata() == nil:
		return fmt.Errorf("config.metadata is missing: %w", errdefs.ErrInvalidArgument)
	case cfg.GetMetadata().GetName() == "":
		return fmt.Errorf("config.metadata.name is empty: %w", errdefs.ErrInvalidArgument)
	case cfg.GetImage().GetImage() == "":
		return fmt.Errorf("config.image.image is empty: %w", errdefs.ErrInvalidArgument)
	}
	for i, m := range cfg.GetMounts() {
		if !filepath.IsAbs(m.GetContainerPath()) {
			return fmt.Errorf("config.mounts[%d].container_path %q is not absolute: %w", i, m.GetContainerPath(), errdefs.ErrInvalidArgument)
		}
		if err := validateImageMount(i, m); err != nil {
			return err
		}
	}
	return nil
}

// validateImageMount checks what can be told of an image mount before its
// image is mounted; subPathIn checks the rest (symlinks) after.
func validateImageMount(i int, m *runtimeapi.Mount) error {
	sub := m.GetImageSubPath()
	switch {
	case m.GetImage().GetImage() == "" && sub != "":
		return fmt.Errorf("config.mounts[%d].image_sub_path is set without an image: %w", i, errdefs.ErrInvalidArgument)
	case m.GetImage().GetImage() != "" && m.GetHostPath() != "":
		return fmt.Errorf("config.mounts[%d].image and host_path are both set: %w", i, errdefs.ErrInvalidArgument)
	case m.GetImage().GetImage() != "" && m.GetPropagation() != runtimeapi.MountPropagation_PROPAGATION_PRIVATE:
		return fmt.Errorf("config.mounts[%d].propagation: an image mount must be private: %w", i, errdefs.ErrInvalidArgument)
	}
	if c := filepath.Clean(sub); c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Errorf("config.mounts[%d].image_sub_path %q leaves the image: %w", i, sub, errdefs.ErrInvalidArgument)
	}
	return nil
}

// logPath joins the sandbox's log directory and the container's log path,
// refusing a path that would land outside the directory.
func logPath(dir, rel string) (string, error) {
	if rel == "" {
		return "", nil
	}
	if dir == "" {
		return "", fmt.Errorf("config.log_path %q is set but the sandbox has no log_directory: %w", rel, errdefs.ErrInvalidArgument)
	}
	if filepath.IsAbs(rel) {
		return "", fmt.Errorf("config.log_path %q must be relative to the log directory: %w", rel, errdefs.ErrInvalidArgument)
	}
	clean := filepath.Clean(rel)
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("config.log_path %q is outside the log directory: %w", rel, errdefs.ErrInvalidArgument)
	}
	return filepath.Join(dir, clean), nil
}
