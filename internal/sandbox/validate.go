package sandbox

import (
	"fmt"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// validate checks what RunPodSandbox needs of its config and names the
// offending field.
func validate(cfg *runtimeapi.PodSandboxConfig) error {
	if cfg == nil {
		return fmt.Errorf("config is missing: %w", errdefs.ErrInvalidArgument)
	}
	md := cfg.GetMetadata()
	switch {
	case md == nil:
		return fmt.Errorf("config.metadata is missing: %w", errdefs.ErrInvalidArgument)
	case md.GetName() == "":
		return fmt.Errorf("config.metadata.name is empty: %w", errdefs.ErrInvalidArgument)
	case md.GetNamespace() == "":
		return fmt.Errorf("config.metadata.namespace is empty: %w", errdefs.ErrInvalidArgument)
	case md.GetUid() == "":
		return fmt.Errorf("config.metadata.uid is empty: %w", errdefs.ErrInvalidArgument)
	}
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns.GetPid() == runtimeapi.NamespaceMode_TARGET {
		return fmt.Errorf("config.linux.security_context.namespace_options.pid: TARGET is for containers, not pods: %w", errdefs.ErrInvalidArgument)
	}
	if ns.GetNetwork() == runtimeapi.NamespaceMode_TARGET || ns.GetIpc() == runtimeapi.NamespaceMode_TARGET {
		return fmt.Errorf("config.linux.security_context.namespace_options: TARGET is only valid for pid: %w", errdefs.ErrInvalidArgument)
	}
	_, err := UserNamespace(ns)
	return err
}
