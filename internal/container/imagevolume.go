package container

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/containerd/errdefs"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/mount"
	"github.com/crib-dev/crib/internal/ocispec"
)

// ImageVolume is an image a container mounts read-only: a CRI mount with
// its image field set (KEP-4639). While the container exists the image
// store holds the image (image.Store.Hold), so it cannot be removed.
type ImageVolume struct {
	// Mount is the index of the CRI mount in Config.Mounts.
	Mount int
	// ImageID is the image's id; ImageRef the reference the kubelet shows
	// for it, as for the container's own image.
	ImageID  string
	ImageRef string
}

// volumeImage is an image volume resolved before anything is made.
type volumeImage struct {
	mount int
	img   image.Image
}

// resolveImageVolumes finds the images of cfg's image mounts. The kubelet
// pulls them first: an absent one is NotFound naming the mount.
func (m *Manager) resolveImageVolumes(cfg *runtimeapi.ContainerConfig) ([]volumeImage, error) {
	var out []volumeImage
	for i, mt := range cfg.GetMounts() {
		ref := mt.GetImage().GetImage()
		if ref == "" {
			continue
		}
		img, err := m.images.Resolve(ref)
		if err != nil {
			return nil, fmt.Errorf("config.mounts[%d].image.image %q: %w", i, ref, err)
		}
		out = append(out, volumeImage{mount: i, img: img})
	}
	return out, nil
}

// volumeDir is where image volume i of container id is mounted on the host:
// in the bundle, which teardown unmounts before it removes it.
func (m *Manager) volumeDir(id string, i int) string {
	return filepath.Join(m.bundle(id), "volumes", strconv.Itoa(i))
}

// mountImageVolume mounts img's file system read-only on dir: an overlay
// of its layers with no upper dir. Overlayfs wants two lower dirs for that,
// so a single layer is paired with an empty one (a read-only bind would do
// too, but a bind is writable until its remount, and a crash in between
// would leave the layer writable under the bundle). An image without
// layers is the empty dir itself. For a pod of its own user namespace the
// layers are seen through its id mapping, as the rootfs's are.
func (m *Manager) mountImageVolume(dir string, img image.Image, userns *ocispec.UserNamespace) error {
	lower, err := m.images.LowerDirs(img)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if len(lower) == 0 {
		return nil
	}
	if len(lower) == 1 {
		empty := dir + ".empty"
		if err := os.MkdirAll(empty, 0o755); err != nil {
			return err
		}
		lower = append(lower, empty)
	}
	if userns != nil {
		// The bind of an overlay cannot be id-mapped: its layers are.
		f, err := os.Open(userns.Path)
		if err != nil {
			return fmt.Errorf("open the pod's user namespace: %w", err)
		}
		defer f.Close()
		return mount.IDMappedOverlay(lower, "", "", dir, dir+".mapped", f)
	}
	ov := mount.Mount{Type: "overlay", Source: "overlay", Options: []string{"ro", "lowerdir=" + strings.Join(lower, ":")}}
	return ov.Mount(dir)
}

// subPathIn resolves sub inside root, the mounted image, as the image sees
// itself: symlinks are followed, an absolute one from the image's root. A
// sub path that does not exist, or that leaves the image (".." above its
// root, directly or through a symlink), is InvalidArgument naming field.
// The image is mounted read-only, so what this resolved cannot change
// before the runtime binds it.
func subPathIn(root, sub, field string) (string, error) {
	var parts []string
	todo := strings.Split(sub, "/")
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(parts) == 0 {
				return "", fmt.Errorf("%s %q leaves the image: %w", field, sub, errdefs.ErrInvalidArgument)
			}
			parts = parts[:len(parts)-1]
			continue
		}
		p := filepath.Join(root, filepath.Join(parts...), c)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return "", fmt.Errorf("%s %q does not exist in the image: %w", field, sub, errdefs.ErrInvalidArgument)
		}
		if err != nil {
			return "", fmt.Errorf("%s %q: %w", field, sub, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			parts = append(parts, c)
			continue
		}
		if links++; links > 40 {
			return "", fmt.Errorf("%s %q: too many symlinks: %w", field, sub, errdefs.ErrInvalidArgument)
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", fmt.Errorf("%s %q: %w", field, sub, err)
		}
		if filepath.IsAbs(target) {
			parts = nil
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return filepath.Join(root, filepath.Join(parts...)), nil
}

// StatusMounts are the container's CRI mounts as ContainerStatus reports
// them: an image mount carries the digest of the image it mounts.
func (c Container) StatusMounts() []*runtimeapi.Mount {
	mounts := c.Config.GetMounts()
	if len(c.ImageVolumes) == 0 {
		return mounts
	}
	out := append([]*runtimeapi.Mount(nil), mounts...)
	for _, v := range c.ImageVolumes {
		if v.Mount >= len(out) {
			continue
		}
		mt := proto.Clone(out[v.Mount]).(*runtimeapi.Mount)
		if mt.Image == nil {
			mt.Image = &runtimeapi.ImageSpec{}
		}
		mt.Image.ImageRef = v.ImageRef
		out[v.Mount] = mt
	}
	return out
}
