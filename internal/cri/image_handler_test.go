package cri

import (
	"context"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/image"
)

// TestImageRuntimeHandler: the image RPCs refuse a runtime handler the node
// does not offer before they reach the store (this Server has none, so one
// that got through would panic), and let through the ones it does.
func TestImageRuntimeHandler(t *testing.T) {
	s := &Server{info: Info{Handlers: []Handler{{Name: ""}, {Name: "runc"}}}}
	ctx := context.Background()
	spec := func(h string) *runtimeapi.ImageSpec {
		return &runtimeapi.ImageSpec{Image: "busybox", RuntimeHandler: h}
	}
	rpcs := []struct {
		name  string
		call  func(handler string) error
		field string
	}{
		{"PullImage", func(h string) error {
			_, err := s.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec(h)})
			return err
		}, "image.runtime_handler"},
		{"ImageStatus", func(h string) error {
			_, err := s.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec(h)})
			return err
		}, "image.runtime_handler"},
		{"RemoveImage", func(h string) error {
			_, err := s.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: spec(h)})
			return err
		}, "image.runtime_handler"},
		{"ListImages", func(h string) error {
			_, err := s.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: &runtimeapi.ImageFilter{Image: spec(h)}})
			return err
		}, "filter.image.runtime_handler"},
	}
	for _, rpc := range rpcs {
		for _, tt := range []struct{ handler, want string }{
			{"kata", `"kata" is not configured`},
			{strings.Repeat("k", 300), "300 bytes"},
			{"ru\nnc", "control character"},
		} {
			err := rpc.call(tt.handler)
			if !errdefs.IsInvalidArgument(err) || !strings.HasPrefix(err.Error(), rpc.field+": ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s for handler %.20q: %v, want InvalidArgument naming %s: %s", rpc.name, tt.handler, err, rpc.field, tt.want)
			}
		}
	}
	for _, h := range []string{"", "runc"} {
		if err := s.checkImageHandler("image", spec(h)); err != nil {
			t.Errorf("handler %q: %v, want it let through", h, err)
		}
	}
}

// TestCRIImageSpec: an image's spec is its id and the handler asked about.
func TestCRIImageSpec(t *testing.T) {
	img := image.Image{ID: "sha256:ab", RepoTags: []string{"busybox:1"}}
	for _, h := range []string{"", "runc"} {
		got := criImage(img, h).GetSpec()
		want := &runtimeapi.ImageSpec{Image: "sha256:ab", RuntimeHandler: h}
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("spec for handler %q (-want +got):\n%s", h, diff)
		}
	}
}

// TestContainerImageSpecNamesNoHandler: a container's image is listed
// without the handler its config named, as ListImages lists every image,
// so that the kubelet's image GC finds the image in use.
func TestContainerImageSpecNamesNoHandler(t *testing.T) {
	c := container.Container{Config: &runtimeapi.ContainerConfig{
		Image: &runtimeapi.ImageSpec{Image: "sha256:ab", UserSpecifiedImage: "busybox:1", RuntimeHandler: "runc"},
	}}
	want := &runtimeapi.ImageSpec{Image: "sha256:ab", UserSpecifiedImage: "busybox:1"}
	// ContainerStatus names the image as the pod did (TestContainerStatusImageName).
	wantStatus := &runtimeapi.ImageSpec{Image: "busybox:1", UserSpecifiedImage: "busybox:1"}
	for name, tc := range map[string]struct{ got, want *runtimeapi.ImageSpec }{
		"ListContainers":  {containerItem(c).GetImage(), want},
		"ContainerStatus": {containerStatus(c).GetImage(), wantStatus},
	} {
		if diff := cmp.Diff(tc.want, tc.got, protocmp.Transform()); diff != "" {
			t.Errorf("%s image (-want +got):\n%s", name, diff)
		}
	}
	listed := criImage(image.Image{ID: "sha256:ab"}, "").GetSpec()
	if listed.GetRuntimeHandler() != want.GetRuntimeHandler() {
		t.Errorf("ListImages names handler %q, containers %q", listed.GetRuntimeHandler(), want.GetRuntimeHandler())
	}
}
