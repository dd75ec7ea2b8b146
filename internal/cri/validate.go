package cri

import (
	"math"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	cv "github.com/crib-dev/crib/internal/crivalidate"
)

// Bounds of request fields the edge checks itself; the sandbox and
// container configs are checked whole by their managers.
const (
	// maxAuthField bounds each credential of a pull: tokens are a few KiB.
	maxAuthField = 1 << 20
	// maxPodCIDR bounds UpdateRuntimeConfig's pod CIDRs, a comma-separated
	// pair at most.
	maxPodCIDR = 256
)

// checkID bounds an id or id prefix a request names.
func checkID(field, id string, required bool) error {
	return cv.Name(field, id, required)
}

// checkImageSpec bounds an image reference.
func checkImageSpec(field string, img *runtimeapi.ImageSpec) error {
	if err := cv.String(field+".image", img.GetImage(), cv.MaxPathLen); err != nil {
		return err
	}
	return cv.Annotations(field+".annotations", img.GetAnnotations())
}

// checkImageHandler refuses an image request for a runtime handler this
// node does not offer, as RunPodSandbox does; none named ("") is the
// default's. Every handler shares the one image store (one snapshotter,
// the host's platform), so a known one pulls, finds and removes the same
// images as any other.
func (s *Server) checkImageHandler(field string, img *runtimeapi.ImageSpec) error {
	h := img.GetRuntimeHandler()
	if h == "" {
		return nil
	}
	if err := cv.Name(field+".runtime_handler", h, false); err != nil {
		return err
	}
	if _, ok := s.currentInfo().handler(h); !ok {
		return cv.Invalid(field+".runtime_handler", "%q is not configured or its runtime is not installed", h)
	}
	return nil
}

func checkAuth(a *runtimeapi.AuthConfig) error {
	for field, v := range map[string]string{
		"auth.username": a.GetUsername(), "auth.password": a.GetPassword(), "auth.auth": a.GetAuth(),
		"auth.server_address": a.GetServerAddress(), "auth.identity_token": a.GetIdentityToken(),
		"auth.registry_token": a.GetRegistryToken(),
	} {
		if err := cv.String(field, v, maxAuthField); err != nil {
			return err
		}
	}
	return nil
}

func checkContainerFilter(f *runtimeapi.ContainerFilter) error {
	if err := checkID("filter.id", f.GetId(), false); err != nil {
		return err
	}
	if err := checkID("filter.pod_sandbox_id", f.GetPodSandboxId(), false); err != nil {
		return err
	}
	if f.GetState() != nil {
		if err := cv.Enum("filter.state.state", f.GetState().GetState(), runtimeapi.ContainerState_name); err != nil {
			return err
		}
	}
	return cv.Labels("filter.label_selector", f.GetLabelSelector())
}

func checkSandboxFilter(f *runtimeapi.PodSandboxFilter) error {
	if err := checkID("filter.id", f.GetId(), false); err != nil {
		return err
	}
	if f.GetState() != nil {
		if err := cv.Enum("filter.state.state", f.GetState().GetState(), runtimeapi.PodSandboxState_name); err != nil {
			return err
		}
	}
	return cv.Labels("filter.label_selector", f.GetLabelSelector())
}

func checkContainerStatsFilter(f *runtimeapi.ContainerStatsFilter) error {
	if err := checkID("filter.id", f.GetId(), false); err != nil {
		return err
	}
	if err := checkID("filter.pod_sandbox_id", f.GetPodSandboxId(), false); err != nil {
		return err
	}
	return cv.Labels("filter.label_selector", f.GetLabelSelector())
}

func checkSandboxStatsFilter(f *runtimeapi.PodSandboxStatsFilter) error {
	if err := checkID("filter.id", f.GetId(), false); err != nil {
		return err
	}
	return cv.Labels("filter.label_selector", f.GetLabelSelector())
}

// seconds is a request's timeout of v seconds: InvalidArgument naming the
// field when it is negative or beyond what a time.Duration holds (about
// 292 years), which would wrap to a negative, or no, timeout.
func seconds(field string, v int64) (time.Duration, error) {
	if v < 0 {
		return 0, invalid("%s %d is negative", field, v)
	}
	if v > int64(math.MaxInt64/time.Second) {
		return 0, invalid("%s %d seconds is too large", field, v)
	}
	return time.Duration(v) * time.Second, nil
}
