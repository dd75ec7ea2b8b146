package ocispec

import (
	"fmt"

	"github.com/containerd/errdefs"
	imagespec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Namespaces says which namespaces a container joins. A path joins that
// namespace; a Host flag shares the host's (the namespace is left out of the
// spec); neither creates a new one. The caller resolves CRI namespace modes
// into these: POD and TARGET PID modes become PIDNS paths, NODE becomes
// HostPID, CONTAINER leaves both empty. The UTS namespace follows the
// network: with HostNetwork the host UTS namespace is shared too.
type Namespaces struct {
	NetNS string
	IPCNS string
	UTSNS string
	PIDNS string

	HostNetwork bool
	HostIPC     bool
	HostPID     bool

	// User, when set, is the pod's own user namespace, which the container
	// joins; nil runs it with the host's users.
	User *UserNamespace
}

// UserNamespace is a pinned user namespace and its id mappings. Every bind
// mount of a container in it is id-mapped the same way, so that a file
// owned by 0 on the host is owned by the pod's root, as containerd does.
type UserNamespace struct {
	Path string
	UIDs []specs.LinuxIDMapping
	GIDs []specs.LinuxIDMapping
}

// SandboxFiles are host paths the sandbox prepared for its containers. Each
// non-empty path is bind mounted into the container: HostnamePath at
// /etc/hostname, ResolvPath at /etc/resolv.conf, HostsPath at /etc/hosts and
// ShmPath at /dev/shm. An empty path leaves that mount out (for /dev/shm the
// container then gets no /dev/shm at all).
type SandboxFiles struct {
	HostnamePath string
	ResolvPath   string
	HostsPath    string
	ShmPath      string
}

// Input is everything Build needs. Container and Sandbox are required; the
// zero value of every other field is usable and documented.
type Input struct {
	// ID is the container ID; it only appears in annotations.
	ID string
	// SandboxID is the pod sandbox ID, for the io.kubernetes.cri.sandbox-id
	// annotation.
	SandboxID string

	Container *runtimeapi.ContainerConfig
	Sandbox   *runtimeapi.PodSandboxConfig
	Image     imagespec.ImageConfig

	// RootfsPath is the container's rootfs on the host (already mounted).
	// Users and groups are resolved from its /etc/passwd and /etc/group;
	// a missing file counts as empty.
	RootfsPath string

	// ImageVolumes are, by index in Container.Mounts, the host directories
	// (or files) that CRI mounts with an image stand for: the image's file
	// system already mounted read-only, with the image_sub_path applied.
	ImageVolumes map[int]string

	Namespaces Namespaces
	Files      SandboxFiles

	// CgroupsPath is copied to linux.cgroupsPath as is.
	CgroupsPath string
	// CgroupV2 says the host uses the unified hierarchy: only then does the
	// container get a private cgroup namespace.
	CgroupV2 bool

	// Hugetlb says the hugetlb cgroup controller is available. Without it
	// (the zero value, as containerd's default) hugepage limits are left
	// out: the kubelet sends one for every page size the kernel has, and
	// runc fails on limits it cannot apply.
	Hugetlb bool

	// OOMScoreAdjMin is the lowest oom_score_adj the daemon may set; lower
	// CRI values are raised to it rather than failing the container.
	OOMScoreAdjMin int

	// HostCaps bounds the capabilities containers may get (see
	// ReadHostCaps); privileged containers get all of them. The zero value
	// means every capability crib knows.
	HostCaps HostCaps

	// NodeHostname is the HOSTNAME env value for host-network pods whose
	// sandbox config names no hostname.
	NodeHostname string

	// DevDir is the host device directory given whole to privileged
	// containers; empty means "/dev".
	DevDir string

	// RecursiveReadOnlySupported says the OCI runtime and kernel support
	// "rro" mounts; without it a CRI mount asking for recursive read-only
	// is rejected.
	RecursiveReadOnlySupported bool
}

// ociVersion is the spec version crib writes: the newest that every runtime
// it supports accepts (crun 1.8, Debian 12's, refuses 1.2 and later). crib
// uses nothing of the later versions that older runtimes would misread.
const ociVersion = "1.1.0"

// Build returns the OCI runtime spec for in. It reads only the files named in
// the package documentation and never changes anything.
func Build(in Input) (*specs.Spec, error) {
	if in.Container == nil {
		return nil, fmt.Errorf("build spec: container config is required: %w", errdefs.ErrInvalidArgument)
	}
	if in.Sandbox == nil {
		return nil, fmt.Errorf("build spec: sandbox config is required: %w", errdefs.ErrInvalidArgument)
	}
	b := &builder{in: in, sc: in.Container.GetLinux().GetSecurityContext()}
	b.privileged = b.sc.GetPrivileged()
	steps := []func() error{
		b.process,
		b.user,
		b.capabilities,
		b.namespaces,
		b.mounts,
		b.devices,
		b.security,
		b.sysctls,
		b.resources,
		b.seccomp,
	}
	b.spec = &specs.Spec{
		Version: ociVersion,
		Process: &specs.Process{},
		Root: &specs.Root{
			Path:     in.RootfsPath,
			Readonly: b.sc.GetReadonlyRootfs(),
		},
		Linux: &specs.Linux{CgroupsPath: in.CgroupsPath},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("build spec for container %q: %w", in.Container.GetMetadata().GetName(), err)
		}
	}
	b.spec.Annotations = annotations(in)
	return b.spec, nil
}

// builder carries the spec under construction between the steps of Build.
type builder struct {
	in         Input
	sc         *runtimeapi.LinuxContainerSecurityContext
	privileged bool
	spec       *specs.Spec
}
