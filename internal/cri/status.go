package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Status reports runtime and network readiness and what each runtime
// handler supports. Features are advertised only where they work: user
// namespaces (and with them the host network) and recursive read-only
// mounts where the handler's runtime and the kernel make them.
func (s *Server) Status(_ context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	ready, why := s.network.Ready()
	network := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: ready}
	if !ready {
		network.Reason = "NetworkPluginNotReady"
		network.Message = "network plugin is not ready: " + why
	}
	resp := &runtimeapi.StatusResponse{
		Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true},
			network,
		}},
		// crib resolves supplemental groups itself, from the image's
		// /etc/group, so both policies work with any OCI runtime. The mount
		// options it takes (noexec, nodev, nosuid) are flags every OCI
		// runtime applies to a bind mount.
		Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true, MountOptions: true},
	}
	for _, h := range s.currentInfo().Handlers {
		resp.RuntimeHandlers = append(resp.RuntimeHandlers, &runtimeapi.RuntimeHandler{
			Name:     h.Name,
			Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: h.RecursiveReadOnly, UserNamespaces: h.UserNamespaces()},
		})
		// A pod in its own user namespace may use the host's network
		// wherever it may have one at all: the kubelet asks both.
		resp.Features.UserNamespacesHostNetwork = resp.Features.UserNamespacesHostNetwork || h.UserNamespaces()
	}
	if req.GetVerbose() {
		resp.Info = map[string]string{"config": `{"cgroupDriver":"` + s.info.CgroupDriver + `"}`}
	}
	return resp, nil
}

// RuntimeConfig reports the cgroup driver, which the kubelet must match.
func (s *Server) RuntimeConfig(context.Context, *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	driver := runtimeapi.CgroupDriver_CGROUPFS
	if s.info.CgroupDriver == "systemd" {
		driver = runtimeapi.CgroupDriver_SYSTEMD
	}
	return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: driver}}, nil
}
