package integration

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestContainerStatusNamesPodImage: the kubelet creates a container with
// the image's id as config.image.image and the pod's own name for the image
// as user_specified_image, and shows ContainerStatus's image as the pod's
// status image. When a pod's image is changed (the node conformance suite's
// Containers Lifecycle specs), it kills the container, creates the next
// attempt from the new image, and waits for the new name in the status:
// with the id there it would wait for ever. So the status names the image
// as the pod did, image_ref and image_id stay the image's, ListContainers
// still gives the id (the kubelet's image GC matches it against
// ListImages), and all of it holds across a daemon restart.
func TestContainerStatusNamesPodImage(t *testing.T) {
	e := newEnv(t)
	if e.img.Tarball == "" {
		t.Skip("the test image is not a tarball that can be rewritten")
	}
	const updated = "registry.k8s.io/e2e-test-images/crib-updated:2"
	// Another config (STOPSIGNAL), so another image id, under another tag.
	e.d.LoadImage(t, withStopSignal(t, e.img.Tarball, updated, "SIGUSR1"))
	first, second := e.imageStatus(e.img.Ref), e.imageStatus(updated)
	if first.GetId() == second.GetId() {
		t.Fatalf("both images have id %s", first.GetId())
	}

	pod := e.podConfig("imgname")
	podID := e.runPod(pod)
	attempt := func(n uint32, img *runtimeapi.Image, podName string) string {
		cfg := e.ctrConfig("app", "sleep", "300")
		cfg.Metadata.Attempt = n
		cfg.Image = &runtimeapi.ImageSpec{Image: img.GetId(), UserSpecifiedImage: podName}
		return e.run(podID, pod, cfg)
	}
	check := func(id, wantName string, img *runtimeapi.Image) {
		t.Helper()
		st := e.status(id)
		wantRef := img.GetId()
		if len(img.GetRepoDigests()) > 0 {
			wantRef = img.GetRepoDigests()[0]
		}
		if st.GetImage().GetImage() != wantName || st.GetImageId() != img.GetId() || st.GetImageRef() != wantRef {
			t.Errorf("container %s: status image %q, image_id %q, image_ref %q; want %q, %q, %q",
				id, st.GetImage().GetImage(), st.GetImageId(), st.GetImageRef(), wantName, img.GetId(), wantRef)
		}
	}

	old := attempt(0, first, e.img.Ref)
	check(old, e.img.Ref, first)
	// The pod's image is changed: the kubelet stops the container and
	// creates the next attempt from the new image.
	if _, err := e.rt().StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: old, Timeout: 0}); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	next := attempt(1, second, updated)
	check(next, updated, second)
	check(old, e.img.Ref, first)

	// A client that names the image by its id alone gets the image's tag,
	// as containerd answers.
	cfg := e.ctrConfig("byid", "sleep", "300")
	cfg.Image = &runtimeapi.ImageSpec{Image: second.GetId()}
	byID := e.create(podID, pod, cfg)
	check(byID, second.GetRepoTags()[0], second)

	listed := map[string]string{}
	resp, err := e.rt().ListContainers(e.ctx(), &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatalf("ListContainers: %v", err)
	}
	for _, c := range resp.GetContainers() {
		listed[c.GetId()] = c.GetImage().GetImage()
	}
	if listed[old] != first.GetId() || listed[next] != second.GetId() {
		t.Errorf("ListContainers images %q, %q; want the ids %q, %q", listed[old], listed[next], first.GetId(), second.GetId())
	}

	e.d.Restart(t)
	check(old, e.img.Ref, first)
	check(next, updated, second)
	check(byID, second.GetRepoTags()[0], second)
}

// imageStatus is the daemon's image named ref; the test fails without it.
func (e *env) imageStatus(ref string) *runtimeapi.Image {
	e.t.Helper()
	resp, err := e.d.Images.ImageStatus(e.ctx(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil || resp.GetImage() == nil {
		e.t.Fatalf("ImageStatus %s: %v (image %v)", ref, err, resp.GetImage())
	}
	return resp.GetImage()
}
