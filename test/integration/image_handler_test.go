package integration

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// TestImageRuntimeHandler (KEP-4216): an image RPC that names a runtime
// handler the node lacks is InvalidArgument naming image.runtime_handler
// and changes nothing; one that names a known handler pulls into the one
// store every handler shares, so a pod of the default handler runs the
// image, and removing it for that handler removes it for all.
func TestImageRuntimeHandler(t *testing.T) {
	testutil.RequiresRoot(t)
	t.Parallel()
	testutil.RequireRegistry(t)
	d := testutil.StartDaemon(t, testutil.Options{
		Registries:  map[string][]string{"registry.k8s.io": {testutil.LoopbackRegistry}},
		ExtraConfig: "[runtimes.alt]\npath = \"runc\"\n",
	})
	img := testutil.TestImage{Ref: testutil.RegistryBusyboxRef}
	e := &env{t: t, d: d, img: img}
	spec := func(handler string) *runtimeapi.ImageSpec {
		return &runtimeapi.ImageSpec{Image: img.Ref, RuntimeHandler: handler}
	}
	imageStatus := func(handler string) *runtimeapi.Image {
		t.Helper()
		resp, err := d.Images.ImageStatus(e.ctx(), &runtimeapi.ImageStatusRequest{Image: spec(handler)})
		if err != nil {
			t.Fatalf("ImageStatus for handler %q: %v", handler, err)
		}
		return resp.GetImage()
	}
	refused := func(what string, err error) {
		t.Helper()
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `image.runtime_handler: "kata" is not configured`) {
			t.Errorf("%s for handler kata: %v, want InvalidArgument naming image.runtime_handler", what, err)
		}
	}

	_, err := d.Images.PullImage(e.ctx(), &runtimeapi.PullImageRequest{Image: spec("kata")})
	refused("PullImage", err)
	_, err = d.Images.ImageStatus(e.ctx(), &runtimeapi.ImageStatusRequest{Image: spec("kata")})
	refused("ImageStatus", err)
	_, err = d.Images.ListImages(e.ctx(), &runtimeapi.ListImagesRequest{Filter: &runtimeapi.ImageFilter{Image: spec("kata")}})
	refused("ListImages", err)
	if got := imageStatus(""); got != nil {
		t.Fatalf("the refused pull left image %s", got.GetId())
	}

	pulled, err := d.Images.PullImage(e.ctx(), &runtimeapi.PullImageRequest{Image: spec("alt")})
	if err != nil {
		t.Fatalf("PullImage for handler alt: %v", err)
	}
	id := pulled.GetImageRef()
	for _, h := range []string{"alt", "", "runc"} {
		got := imageStatus(h)
		if got.GetId() != id || got.GetSpec().GetRuntimeHandler() != h {
			t.Errorf("ImageStatus for handler %q: id %q, spec %v; want id %s, the handler echoed", h, got.GetId(), got.GetSpec(), id)
		}
	}
	list, err := d.Images.ListImages(e.ctx(), &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(list.GetImages()); n != 1 || list.Images[0].GetId() != id || list.Images[0].GetSpec().GetRuntimeHandler() != "" {
		t.Errorf("ListImages: %v, want %s once, for no handler in particular", list.GetImages(), id)
	}

	// A pod of the default handler runs the image pulled for alt.
	pod := e.podConfig("image-handler")
	podID := e.runPod(pod)
	ctr := e.run(podID, pod, e.ctrConfig("sleeper", "sleep", "3600"))
	if st := e.waitState(ctr, runtimeapi.ContainerState_CONTAINER_RUNNING, 30*time.Second); st.GetImageId() != id {
		t.Errorf("the container's image is %s, want %s", st.GetImageId(), id)
	}
	if _, err := e.rt().StopPodSandbox(e.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt().RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatal(err)
	}

	_, err = d.Images.RemoveImage(e.ctx(), &runtimeapi.RemoveImageRequest{Image: spec("kata")})
	refused("RemoveImage", err)
	if imageStatus("") == nil {
		t.Fatal("the refused RemoveImage removed the image")
	}
	if _, err := d.Images.RemoveImage(e.ctx(), &runtimeapi.RemoveImageRequest{Image: spec("alt")}); err != nil {
		t.Fatalf("RemoveImage for handler alt: %v", err)
	}
	if got := imageStatus(""); got != nil {
		t.Errorf("image %s is still there for the default handler after its removal for alt", got.GetId())
	}
}
