package container

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imageTree makes a small image root: dirs, a file, and symlinks that stay
// in it or leave it.
func imageTree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "image")
	for _, d := range []string{"usr/share/data", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "etc/file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"data":      "/usr/share/data",     // absolute: from the image's root
		"rel":       "usr/share",           // relative, inside
		"up":        "../../..",            // leaves through ..
		"deep/loop": "loop",                // itself
		"etc/abs":   "/../../usr/../etc",   // .. at the root of an absolute link
		"etc/back":  "../usr/share/../../", // back to the root: fine
	}
	for l, target := range links {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(l)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestSubPathIn(t *testing.T) {
	root := imageTree(t)
	for _, tt := range []struct {
		sub, want, wantErr string
	}{
		{sub: "", want: ""},
		{sub: ".", want: ""},
		{sub: "usr/share/data", want: "usr/share/data"},
		{sub: "/usr/share/", want: "usr/share"},
		{sub: "etc/file", want: "etc/file"},
		{sub: "data", want: "usr/share/data"},
		{sub: "rel/data", want: "usr/share/data"},
		{sub: "usr/../etc", want: "etc"},
		{sub: "etc/back", want: ""},
		{sub: "..", wantErr: "leaves the image"},
		{sub: "usr/../../etc", wantErr: "leaves the image"},
		{sub: "up", wantErr: "leaves the image"},
		{sub: "up/etc", wantErr: "leaves the image"},
		{sub: "etc/abs", wantErr: "leaves the image"},
		{sub: "deep/loop", wantErr: "too many symlinks"},
		{sub: "missing", wantErr: "does not exist"},
		{sub: "etc/file/x", wantErr: "does not exist"},
	} {
		got, err := subPathIn(root, tt.sub, "config.mounts[0].image_sub_path")
		if tt.wantErr != "" {
			if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), tt.wantErr) ||
				!strings.Contains(err.Error(), "config.mounts[0].image_sub_path") {
				t.Errorf("subPathIn(%q) = %q, %v; want InvalidArgument naming the field, %q", tt.sub, got, err, tt.wantErr)
			}
			continue
		}
		if want := filepath.Join(root, tt.want); err != nil || got != want {
			t.Errorf("subPathIn(%q) = %q, %v; want %q", tt.sub, got, err, want)
		}
	}
}

func TestValidateImageMount(t *testing.T) {
	img := &runtimeapi.ImageSpec{Image: "sha256:abc"}
	for _, tt := range []struct {
		m       *runtimeapi.Mount
		wantErr string
	}{
		{m: &runtimeapi.Mount{ContainerPath: "/a", Image: img}},
		{m: &runtimeapi.Mount{ContainerPath: "/a", Image: img, ImageSubPath: "a/../b"}},
		{m: &runtimeapi.Mount{ContainerPath: "/a", HostPath: "/tmp"}},
		{m: &runtimeapi.Mount{ContainerPath: "/a", Image: img, ImageSubPath: "a/../../b"}, wantErr: "mounts[0].image_sub_path \"a/../../b\" leaves the image"},
		{m: &runtimeapi.Mount{ContainerPath: "/a", Image: img, ImageSubPath: ".."}, wantErr: "leaves the image"},
		{m: &runtimeapi.Mount{ContainerPath: "/a", HostPath: "/tmp", ImageSubPath: "x"}, wantErr: "mounts[0].image_sub_path is set without an image"},
		{m: &runtimeapi.Mount{ContainerPath: "/a", HostPath: "/tmp", Image: img}, wantErr: "mounts[0].image and host_path are both set"},
		{m: &runtimeapi.Mount{ContainerPath: "/a", Image: img, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER}, wantErr: "mounts[0].propagation"},
		{m: &runtimeapi.Mount{ContainerPath: "/a", HostPath: "/tmp", Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL}},
	} {
		err := validateImageMount(0, tt.m)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (!errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("validateImageMount(%v) = %v, want %q", tt.m, err, tt.wantErr)
		}
	}
}

func TestStatusMountsCarryImageRef(t *testing.T) {
	cfg := &runtimeapi.ContainerConfig{Mounts: []*runtimeapi.Mount{
		{ContainerPath: "/host", HostPath: "/tmp"},
		{ContainerPath: "/img", Image: &runtimeapi.ImageSpec{Image: "sha256:abc"}, ImageSubPath: "etc"},
	}}
	c := Container{Config: cfg, ImageVolumes: []ImageVolume{{Mount: 1, ImageID: "sha256:abc", ImageRef: "example.com/a@sha256:def"}}}
	got := c.StatusMounts()
	if len(got) != 2 || got[0] != cfg.Mounts[0] {
		t.Fatalf("StatusMounts = %v, want the host mount as is", got)
	}
	if got[1].GetImage().GetImageRef() != "example.com/a@sha256:def" || got[1].GetImage().GetImage() != "sha256:abc" ||
		got[1].GetImageSubPath() != "etc" || got[1].GetContainerPath() != "/img" {
		t.Errorf("image mount in status = %v", got[1])
	}
	if cfg.Mounts[1].GetImage().GetImageRef() != "" {
		t.Errorf("StatusMounts modified the config: %v", cfg.Mounts[1])
	}
}
