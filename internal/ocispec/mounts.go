package ocispec

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// mounts fills spec.mounts: the standard kernel file systems, the sandbox's
// files, then the CRI mounts. A CRI mount replaces a standard or sandbox
// mount at the same destination, and a CRI mount at /dev replaces every
// standard mount under /dev too. CRI mounts are ordered parents first.
func (b *builder) mounts() error {
	cri, err := b.criMounts()
	if err != nil {
		return err
	}
	taken := map[string]bool{}
	for _, m := range cri {
		taken[m.Destination] = true
	}
	std := standardMounts(b.privileged)
	if b.in.Namespaces.User != nil && b.in.Namespaces.HostNetwork {
		std = b.hostSys(std)
	}
	var out []specs.Mount
	for _, m := range append(std, b.sandboxMounts()...) {
		if taken[m.Destination] || (taken["/dev"] && strings.HasPrefix(m.Destination, "/dev/")) {
			continue
		}
		out = append(out, m)
	}
	slices.SortStableFunc(cri, func(x, y specs.Mount) int {
		return depth(x.Destination) - depth(y.Destination)
	})
	b.spec.Mounts = append(out, cri...)
	return nil
}

// standardMounts are the kernel file systems every container gets. /sys
// and /sys/fs/cgroup are read-only unless the container is privileged.
func standardMounts(privileged bool) []specs.Mount {
	sysMode := "ro"
	if privileged {
		sysMode = "rw"
	}
	return []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", sysMode}},
		{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", sysMode}},
	}
}

// hostSys replaces the sysfs mount of std by a read-only bind of the
// host's /sys, for a container in its pod's user namespace on the host
// network, as containerd does: sysfs shows the network devices of the
// network namespace it is mounted in, so the kernel lets only a user
// namespace that owns that namespace mount one, and the host's belongs to
// the host. The bind is recursive (the host's mounts under /sys are locked
// to it in a user namespace) and read-only all the way down where the
// runtime can ("rro"); elsewhere the mounts under it keep their own mode,
// and only the host's root, which the pod does not map, may write there.
func (b *builder) hostSys(std []specs.Mount) []specs.Mount {
	mode := "ro"
	if b.in.RecursiveReadOnlySupported {
		mode = "rro"
	}
	out := slices.Clone(std)
	for i, m := range out {
		if m.Destination == "/sys" {
			out[i] = specs.Mount{Destination: "/sys", Type: "bind", Source: "/sys", Options: []string{"rbind", mode, "nosuid", "nodev", "noexec"}}
		}
	}
	return out
}

// sandboxMounts binds the files the sandbox prepared. The /etc files are
// read-only when the rootfs is. They are never id-mapped: in a pod of its
// own user namespace the sandbox made them the pod's root's already.
func (b *builder) sandboxMounts() []specs.Mount {
	mode := "rw"
	if b.sc.GetReadonlyRootfs() {
		mode = "ro"
	}
	f := b.in.Files
	var out []specs.Mount
	bind := func(dst, src string, opts ...string) {
		if src != "" {
			out = append(out, specs.Mount{Destination: dst, Type: "bind", Source: src, Options: opts})
		}
	}
	bind("/etc/hostname", f.HostnamePath, "rbind", "rprivate", mode)
	bind("/etc/resolv.conf", f.ResolvPath, "rbind", "rprivate", mode)
	bind("/etc/hosts", f.HostsPath, "rbind", "rprivate", mode)
	bind("/dev/shm", f.ShmPath, "rbind", "rprivate", "nosuid", "nodev", "noexec", "rw")
	return out
}

// criMounts converts the CRI mounts and sets the rootfs propagation they
// need: rshared when any mount is bidirectional, else rslave when any mount
// receives host mounts.
func (b *builder) criMounts() ([]specs.Mount, error) {
	var out []specs.Mount
	seen := map[string]int{}
	for i, m := range b.in.Container.GetMounts() {
		var sm specs.Mount
		var err error
		if m.GetImage().GetImage() != "" {
			sm, err = imageMount(i, m, b.in.ImageVolumes[i], b.in.Namespaces.User != nil)
		} else {
			sm, err = convertMount(i, m, b.in.RecursiveReadOnlySupported, b.in.Namespaces.User)
		}
		if err != nil {
			return nil, err
		}
		if j, dup := seen[sm.Destination]; dup {
			return nil, fmt.Errorf("mounts[%d].container_path %q duplicates mounts[%d]: %w", i, m.GetContainerPath(), j, errdefs.ErrInvalidArgument)
		}
		seen[sm.Destination] = i
		switch m.GetPropagation() {
		case runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL:
			b.spec.Linux.RootfsPropagation = "rshared"
		case runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER:
			if b.spec.Linux.RootfsPropagation != "rshared" {
				b.spec.Linux.RootfsPropagation = "rslave"
			}
		}
		out = append(out, sm)
	}
	return out, nil
}

// convertMount turns CRI mount i into a bind mount. The source must exist;
// symlinks in it are resolved on the host. The mount's options (noexec,
// nodev, nosuid: the container package refused any other) come after its
// access mode: they only add flags, which the OCI runtime applies to the
// bind, id-mapped or not.
func convertMount(i int, m *runtimeapi.Mount, rroSupported bool, userns *UserNamespace) (specs.Mount, error) {
	field := func(name string) string { return fmt.Sprintf("mounts[%d].%s", i, name) }
	dst := m.GetContainerPath()
	if !filepath.IsAbs(dst) {
		return specs.Mount{}, fmt.Errorf("%s %q is not absolute: %w", field("container_path"), dst, errdefs.ErrInvalidArgument)
	}
	uids, gids, err := mountMappings(i, m, userns)
	if err != nil {
		return specs.Mount{}, err
	}
	src := m.GetHostPath()
	if src == "" {
		return specs.Mount{}, fmt.Errorf("%s is empty: %w", field("host_path"), errdefs.ErrInvalidArgument)
	}
	resolved, err := filepath.EvalSymlinks(src)
	if errors.Is(err, fs.ErrNotExist) {
		return specs.Mount{}, fmt.Errorf("%s %q does not exist: %w", field("host_path"), src, errdefs.ErrInvalidArgument)
	}
	if err != nil {
		return specs.Mount{}, fmt.Errorf("resolve %s %q: %v: %w", field("host_path"), src, err, errdefs.ErrInvalidArgument)
	}
	opts := []string{"rbind", propagationOption(m.GetPropagation())}
	switch {
	case m.GetRecursiveReadOnly():
		if !m.GetReadonly() {
			return specs.Mount{}, fmt.Errorf("%s requires readonly: %w", field("recursive_read_only"), errdefs.ErrInvalidArgument)
		}
		if m.GetPropagation() != runtimeapi.MountPropagation_PROPAGATION_PRIVATE {
			return specs.Mount{}, fmt.Errorf("%s requires private propagation: %w", field("recursive_read_only"), errdefs.ErrInvalidArgument)
		}
		if !rroSupported {
			return specs.Mount{}, fmt.Errorf("%s: recursive read-only mounts are not supported on this node: %w", field("recursive_read_only"), errdefs.ErrInvalidArgument)
		}
		opts = append(opts, "rro")
	case m.GetReadonly():
		opts = append(opts, "ro")
	default:
		opts = append(opts, "rw")
	}
	opts = append(opts, m.GetMountOptions()...)
	return specs.Mount{Destination: filepath.Clean(dst), Type: "bind", Source: resolved, Options: opts, UIDMappings: uids, GIDMappings: gids}, nil
}

// mountMappings are the id mappings of CRI mount i: its own, which the
// kubelet sends (the pod's range), else, in a pod of its own user
// namespace, the pod's; none with the host's users. Only a container in its
// pod's own user namespace can name mappings, and then both.
func mountMappings(i int, m *runtimeapi.Mount, userns *UserNamespace) (uids, gids []specs.LinuxIDMapping, err error) {
	if len(m.GetUidMappings()) == 0 && len(m.GetGidMappings()) == 0 {
		if userns == nil {
			return nil, nil, nil
		}
		return userns.UIDs, userns.GIDs, nil
	}
	switch {
	case userns == nil:
		return nil, nil, fmt.Errorf("mounts[%d].uidMappings: an id-mapped mount needs a pod in its own user namespace: %w", i, errdefs.ErrInvalidArgument)
	case len(m.GetUidMappings()) == 0 || len(m.GetGidMappings()) == 0:
		return nil, nil, fmt.Errorf("mounts[%d]: an id-mapped mount needs both uidMappings and gidMappings: %w", i, errdefs.ErrInvalidArgument)
	}
	return IDMappings(m.GetUidMappings()), IDMappings(m.GetGidMappings()), nil
}

// IDMappings converts CRI id mappings to the OCI spec's.
func IDMappings(ms []*runtimeapi.IDMapping) []specs.LinuxIDMapping {
	out := make([]specs.LinuxIDMapping, 0, len(ms))
	for _, m := range ms {
		out = append(out, specs.LinuxIDMapping{ContainerID: m.GetContainerId(), HostID: m.GetHostId(), Size: m.GetLength()})
	}
	return out
}

// imageMount turns CRI mount i, which names an image, into a read-only
// bind of src, where the caller mounted the image. An image mount is
// read-only and private whatever the CRI mount asks. In a pod of its own
// user namespace the caller mounted the image's layers id-mapped already
// (an overlay cannot be id-mapped again): the bind is not mapped, and the
// mappings the kubelet sends with it are not used. Mount options apply as
// to a host path's (the kubelet sends none for an image volume).
func imageMount(i int, m *runtimeapi.Mount, src string, userns bool) (specs.Mount, error) {
	field := func(name string) string { return fmt.Sprintf("mounts[%d].%s", i, name) }
	dst := m.GetContainerPath()
	switch {
	case !filepath.IsAbs(dst):
		return specs.Mount{}, fmt.Errorf("%s %q is not absolute: %w", field("container_path"), dst, errdefs.ErrInvalidArgument)
	case m.GetHostPath() != "":
		return specs.Mount{}, fmt.Errorf("%s and %s are both set: %w", field("image"), field("host_path"), errdefs.ErrInvalidArgument)
	case !userns && (len(m.GetUidMappings()) > 0 || len(m.GetGidMappings()) > 0):
		return specs.Mount{}, fmt.Errorf("%s: an id-mapped mount needs a pod in its own user namespace: %w", field("uidMappings"), errdefs.ErrInvalidArgument)
	case m.GetPropagation() != runtimeapi.MountPropagation_PROPAGATION_PRIVATE:
		return specs.Mount{}, fmt.Errorf("%s: an image mount must be private: %w", field("propagation"), errdefs.ErrInvalidArgument)
	case src == "":
		return specs.Mount{}, fmt.Errorf("%s %q: the image is not mounted: %w", field("image"), m.GetImage().GetImage(), errdefs.ErrInvalidArgument)
	}
	opts := append([]string{"rbind", "rprivate", "ro"}, m.GetMountOptions()...)
	return specs.Mount{Destination: filepath.Clean(dst), Type: "bind", Source: src, Options: opts}, nil
}

func propagationOption(p runtimeapi.MountPropagation) string {
	switch p {
	case runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER:
		return "rslave"
	case runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL:
		return "rshared"
	default:
		return "rprivate"
	}
}

// depth counts the elements of a clean absolute path ("/" is 0).
func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}
