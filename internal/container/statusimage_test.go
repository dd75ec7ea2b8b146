package container

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestStatusImage: ContainerStatus names the image the way the pod did,
// whatever the config's image is (the kubelet sends the id there), and
// falls back to the image's first tag, as containerd does, only when the
// config gives no name at all.
func TestStatusImage(t *testing.T) {
	const id = "sha256:0123abcd"
	tags := []string{"registry.k8s.io/e2e-test-images/busybox:1.37.0-2", "example.com/other:1"}
	for _, tc := range []struct {
		what string
		spec *runtimeapi.ImageSpec
		tags []string
		want string
	}{
		{"kubelet: id and the pod's name", &runtimeapi.ImageSpec{Image: id, UserSpecifiedImage: "busybox:updated"}, tags, "busybox:updated"},
		{"a name, as crictl sends it", &runtimeapi.ImageSpec{Image: "busybox:1"}, tags, "busybox:1"},
		{"the id alone: the first tag", &runtimeapi.ImageSpec{Image: id}, tags, tags[0]},
		{"the bare hex id: the first tag", &runtimeapi.ImageSpec{Image: "0123abcd"}, tags, tags[0]},
		{"the id of an untagged image", &runtimeapi.ImageSpec{Image: id}, nil, id},
		{"a checkpoint archive: the image's tag", &runtimeapi.ImageSpec{Image: "/var/lib/ckpt/app.tar"}, tags, tags[0]},
		{"no spec", nil, nil, ""},
	} {
		if got := statusImage(tc.spec, id, tc.tags); got != tc.want {
			t.Errorf("%s: statusImage = %q, want %q", tc.what, got, tc.want)
		}
	}
}

// TestStatusImageOfOldRecord: a record written before ImageName was kept
// still reports the pod's name for its image, from its config.
func TestStatusImageOfOldRecord(t *testing.T) {
	c := Container{ImageID: "sha256:ab", Config: &runtimeapi.ContainerConfig{
		Image: &runtimeapi.ImageSpec{Image: "sha256:ab", UserSpecifiedImage: "busybox:1"},
	}}
	if got := c.StatusImage(); got != "busybox:1" {
		t.Errorf("StatusImage = %q, want busybox:1", got)
	}
	c.ImageName = "busybox:2"
	if got := c.StatusImage(); got != "busybox:2" {
		t.Errorf("StatusImage with ImageName = %q, want busybox:2", got)
	}
}
