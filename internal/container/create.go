package container

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/cdi"
	"github.com/crib-dev/crib/internal/checkpoint/archive"
	"github.com/crib-dev/crib/internal/failpoint"
	"github.com/crib-dev/crib/internal/ids"
	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/lifecycle"
	"github.com/crib-dev/crib/internal/mount"
	"github.com/crib-dev/crib/internal/ocispec"
	"github.com/crib-dev/crib/internal/resclass"
	"github.com/crib-dev/crib/internal/sandbox"
	"github.com/crib-dev/crib/internal/undo"
)

// Create makes a container in a ready sandbox and returns its id. The
// container is created by the OCI runtime, under its monitor, but not
// started. A kubelet retry of a Create that timed out gets the first
// attempt's container.
func (m *Manager) Create(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig) (string, error) {
	if err := validate(cfg); err != nil {
		return "", err
	}
	sb, err := m.sandboxes.Get(sandboxID)
	if err != nil {
		return "", err
	}
	if sb.State != sandbox.Ready {
		return "", fmt.Errorf("sandbox %s is %s, not ready: %w", sb.ID, sb.State, errdefs.ErrFailedPrecondition)
	}
	logFile, err := logPath(sb.Config.GetLogDirectory(), cfg.GetLogPath())
	if err != nil {
		return "", err
	}
	// CDI devices are resolved before anything is made: an unknown one
	// leaves no record behind.
	devices, err := m.cdiDevices(cfg)
	if err != nil {
		return "", err
	}
	classes, err := m.cfg.Classes.FromAnnotations(cfg.GetMetadata().GetName(), cfg.GetAnnotations(), sb.Config.GetAnnotations())
	if err != nil {
		// The class may come from the pod's annotations as well.
		return "", fmt.Errorf("config.annotations or sandbox_config.annotations: %w: %w", err, errdefs.ErrInvalidArgument)
	}
	began := time.Now()
	ref, restoreFrom, err := m.imageToCreate(cfg)
	if err != nil {
		return "", err
	}
	if restoreFrom != "" {
		cfg = restoredConfig(cfg, restoreFrom, cfg.GetImage().GetImage())
	}
	img, err := m.images.Resolve(ref)
	m.cfg.Tracer.PodPhase(sb.ID, phaseImageResolve, time.Since(began))
	if err != nil {
		if restoreFrom != "" {
			return "", fmt.Errorf("image %q of checkpoint archive %s (pull it first): %w", ref, restoreFrom, err)
		}
		return "", fmt.Errorf("resolve image %q: %w", cfg.GetImage().GetImage(), err)
	}
	vols, err := m.resolveImageVolumes(cfg)
	if err != nil {
		return "", err
	}
	id := ids.New()
	return m.names.Create(ctx, nameKey(sb.ID, cfg.GetMetadata()), id, func(ctx context.Context) error {
		return m.create(ctx, id, sb, cfg, img, vols, logFile, devices, classes, restoreFrom)
	})
}

// imageToCreate is the image the container's rootfs stands on: the one
// cfg names, or, when cfg names a checkpoint archive (a .tar path, as
// CRI-O takes one) or a checkpoint image (one whose manifest has the
// checkpoint annotation, its one layer the archive's files), the image the
// checkpointed container stood on, with the archive's path or the image's
// unpacked layer.
func (m *Manager) imageToCreate(cfg *runtimeapi.ContainerConfig) (ref, archivePath string, err error) {
	name := cfg.GetImage().GetImage()
	if !archive.IsArchive(name) {
		img, err := m.images.Resolve(name)
		if err != nil || !archive.IsImage(img.Annotations, img.Config.Config.Labels) {
			return name, "", nil
		}
		dirs, err := m.images.LowerDirs(img)
		if err != nil {
			return "", "", fmt.Errorf("checkpoint image %s: %w", name, err)
		}
		if len(dirs) != 1 {
			return "", "", fmt.Errorf("image: checkpoint image %s has %d layers, want the archive as one: %w", name, len(dirs), errdefs.ErrInvalidArgument)
		}
		return m.archiveImage(cfg, name, dirs[0])
	}
	return m.archiveImage(cfg, name, name)
}

// archiveImage is imageToCreate for the checkpoint archive at p (a tar
// or the directory of a checkpoint image's layer), named name.
func (m *Manager) archiveImage(cfg *runtimeapi.ContainerConfig, name, p string) (ref, archivePath string, err error) {
	if cfg.GetTty() {
		return "", "", fmt.Errorf("image %s: restoring a container with a tty is not supported: %w", name, errdefs.ErrInvalidArgument)
	}
	dump, err := archive.ReadConfig(p)
	if err != nil {
		return "", "", fmt.Errorf("image %s: %w: %w", name, err, errdefs.ErrInvalidArgument)
	}
	ref = dump.RootfsImageRef
	if ref == "" || strings.HasPrefix(ref, "sha256:") && dump.RootfsImageName != "" {
		ref = dump.RootfsImageName
	}
	return ref, p, nil
}

// restoredConfig is cfg with the annotations containerd gives a restored
// container, so that its status says so: restored, when the checkpoint
// was taken, and from which archive.
func restoredConfig(cfg *runtimeapi.ContainerConfig, archivePath, image string) *runtimeapi.ContainerConfig {
	cfg = proto.Clone(cfg).(*runtimeapi.ContainerConfig)
	if cfg.Annotations == nil {
		cfg.Annotations = map[string]string{}
	}
	cfg.Annotations["restored"] = "true"
	cfg.Annotations["checkpointImage"] = image
	if dump, err := archive.ReadConfig(archivePath); err == nil && !dump.CheckpointedAt.IsZero() {
		cfg.Annotations["checkpointedAt"] = dump.CheckpointedAt.Format(time.RFC3339Nano)
	}
	return cfg
}

func (m *Manager) create(ctx context.Context, id string, sb sandbox.Sandbox, cfg *runtimeapi.ContainerConfig, img image.Image, vols []volumeImage, logFile string, devices *cdi.Devices, classes resclass.Annotated, restoreFrom string) (err error) {
	rt, err := m.runtime(sb.RuntimeHandler)
	if err != nil {
		return err
	}
	if restoreFrom != "" && rt.Support.RestoreMissing != "" {
		return fmt.Errorf("image %s: %s: %w", restoreFrom, rt.Support.RestoreMissing, errdefs.ErrFailedPrecondition)
	}
	if m.cfg.Plugins != nil {
		// Until the container is listed, a plugin that connects waits
		// for its sync: it then sees the container, or its creation.
		defer m.cfg.Plugins.BlockSync()()
	}
	c := &Container{
		ID:             id,
		SandboxID:      sb.ID,
		Config:         cfg,
		ImageID:        img.ID,
		ImageRef:       imageRef(img),
		ImageName:      statusImage(cfg.GetImage(), img.ID, img.RepoTags),
		ChainIDs:       img.ChainIDs,
		RuntimeHandler: sb.RuntimeHandler,
		State:          Creating,
		CreatedAt:      time.Now(),
		LogPath:        logFile,
		StopSignal:     img.Config.Config.StopSignal,
	}
	for _, v := range vols {
		c.ImageVolumes = append(c.ImageVolumes, ImageVolume{Mount: v.mount, ImageID: v.img.ID, ImageRef: imageRef(v.img)})
	}
	var rollback undo.Stack
	defer func() {
		if err != nil {
			rollback.Run(ctx, m.log)
		}
	}()
	if err := m.save(c); err != nil {
		return err
	}
	rollback.Push("container", func(ctx context.Context) error {
		// The record goes only with the rest: if something cannot be
		// undone now, the next start finds the record and tries again.
		if err := m.teardown(ctx, c); err != nil {
			return err
		}
		return m.db.Delete(recordKind, id)
	})
	if err := failpoint.Check("CreateContainer/intent"); err != nil {
		return err
	}

	// The spec phase: the rootfs, the image volumes, the OCI spec and the
	// bundle.
	began := time.Now()
	ns, err := m.namespaces(sb, cfg)
	if err != nil {
		return err
	}
	if restoreFrom != "" && ns.User != nil {
		// CRIU (4.1.1) clones the restored process into a new user
		// namespace of its own, the checkpoint's, with the old pod's id
		// maps; from there it has no privilege over the pod's namespaces,
		// which the pod's user namespace owns, so its setns into the pod's
		// network namespace (runc's external netns), and into the pod's
		// user namespace (runc's join-ns), fail with EPERM: no order of
		// the namespaces and no owner of the network namespace avoids it
		// (checkpoint-restore/criu#2651). Refused before anything is made.
		return fmt.Errorf("image %s: restoring into a pod with its own user namespace is not supported: CRIU restores the process into a new user namespace, from which it cannot enter the pod's namespaces: %w", restoreFrom, errdefs.ErrNotImplemented)
	}
	rootfs, err := m.mountRootfs(id, img, ns.User)
	if err != nil {
		return err
	}
	if err := failpoint.Check("CreateContainer/rootfs"); err != nil {
		return err
	}
	if restoreFrom != "" {
		// Under the bundle, so the container's teardown removes them.
		c.RestoreImages = filepath.Join(m.bundle(id), "restore", "checkpoint")
		idmap, err := restoreIDMap(restoreFrom, ns.User)
		if err != nil {
			return err
		}
		if err := archive.Unpack(ctx, restoreFrom, c.RestoreImages, rootfs, m.cfg.LayerLimits, idmap); err != nil {
			return err
		}
		if err := failpoint.Check("RestoreContainer/unpacked"); err != nil {
			return err
		}
	}
	volumes, err := m.mountImageVolumes(id, cfg, vols, ns.User, &rollback)
	if err != nil {
		return err
	}
	if err := failpoint.Check("CreateContainer/image-volumes"); err != nil {
		return err
	}
	spec, err := ocispec.Build(ocispec.Input{
		ID:           id,
		SandboxID:    sb.ID,
		Container:    cfg,
		Sandbox:      sb.Config,
		Image:        img.Config.Config,
		RootfsPath:   rootfs,
		ImageVolumes: volumes,
		Namespaces:   ns,
		Files: ocispec.SandboxFiles{
			HostnamePath: sb.HostnamePath(),
			ResolvPath:   sb.ResolvPath(),
			HostsPath:    sb.HostsPath(),
			ShmPath:      sb.ShmPath,
		},
		CgroupsPath:                m.cgroupsPath(sb, id),
		CgroupV2:                   m.cfg.CgroupV2,
		OOMScoreAdjMin:             m.cfg.OOMScoreAdjMin,
		HostCaps:                   m.cfg.HostCaps,
		Hugetlb:                    m.cfg.Hugetlb,
		RecursiveReadOnlySupported: m.support(sb.RuntimeHandler).RecursiveReadOnly,
	})
	if err != nil {
		return fmt.Errorf("build OCI spec: %w", err)
	}
	spec.Root.Path = rootfs
	if restoreFrom != "" {
		if err := restoreCriuConfig(m.bundle(id), spec); err != nil {
			return err
		}
	}
	// The CDI edits come after the spec is built: device nodes take the
	// process's user.
	if err := devices.Apply(spec); err != nil {
		return err
	}
	classes.Apply(spec)
	if m.cfg.Plugins != nil {
		c.CgroupsPath = spec.Linux.CgroupsPath
		// The plugins see the spec whole and adjust it last, as under
		// containerd; once told, they are told of the undoing too, as
		// containerd's undo tells them: also when a plugin or the
		// validator refused it, or its adjustment failed, after the
		// plugins before had taken it (and, say, reserved CPUs for it).
		rollback.Push("plugins' view of the container", func(ctx context.Context) error {
			m.cfg.Plugins.RemoveContainer(ctx, *c)
			return nil
		})
		if err := m.cfg.Plugins.CreateContainer(ctx, sb, *c, spec); err != nil {
			return err
		}
	}
	c.User = spec.Process.User
	c.CgroupsPath = spec.Linux.CgroupsPath
	if err := writeSpec(m.bundle(id), spec); err != nil {
		return err
	}
	if err := failpoint.Check("CreateContainer/bundle"); err != nil {
		return err
	}
	m.cfg.Tracer.PodPhase(sb.ID, phaseSpec, time.Since(began))
	if logFile != "" {
		if err := os.MkdirAll(filepath.Dir(logFile), 0o755); err != nil {
			return fmt.Errorf("create log dir: %w", err)
		}
	}
	if err := os.MkdirAll(m.stateDir(id), 0o700); err != nil {
		return fmt.Errorf("create container state dir: %w", err)
	}
	// Like containerd, crib leaves the OCI runtime out of creation: Start
	// creates and starts the runtime's container in one call, which is
	// cheaper than two.
	c.State = Created
	if err := m.save(c); err != nil {
		return err
	}
	if err := failpoint.Check("CreateContainer/created"); err != nil {
		return err
	}
	m.images.Retain(c.ChainIDs)
	e := &entry{c: *c, exited: make(chan struct{})}
	m.mu.Lock()
	m.index(e)
	m.publish(lifecycle.Created, c)
	m.mu.Unlock()
	m.log.Info("container created", "container", id, "sandbox", sb.ID, "name", cfg.GetMetadata().GetName())
	if m.cfg.Plugins != nil {
		m.cfg.Plugins.PostCreateContainer(ctx, *c)
	}
	return nil
}

// mountImageVolumes holds and mounts the images of cfg's image mounts and
// returns, by mount index, what the OCI spec binds: the image's root or its
// image_sub_path. Each step pushes its undo; the container's own undo
// (teardown) would unmount them too, as restore does after a crash.
func (m *Manager) mountImageVolumes(id string, cfg *runtimeapi.ContainerConfig, vols []volumeImage, userns *ocispec.UserNamespace, rollback *undo.Stack) (map[int]string, error) {
	if len(vols) == 0 {
		return nil, nil
	}
	out := make(map[int]string, len(vols))
	for _, v := range vols {
		field := fmt.Sprintf("config.mounts[%d]", v.mount)
		if err := m.images.Hold(v.img.ID, id); err != nil {
			return nil, fmt.Errorf("%s.image.image: %w", field, err)
		}
		rollback.Push("hold of image "+v.img.ID, func(context.Context) error {
			m.images.Unhold(v.img.ID, id)
			return nil
		})
		dir := m.volumeDir(id, v.mount)
		if err := m.mountImageVolume(dir, v.img, userns); err != nil {
			return nil, fmt.Errorf("%s: mount image %s: %w", field, v.img.ID, err)
		}
		rollback.Push("image volume "+dir, func(context.Context) error { return mount.Unmount(dir) })
		src, err := subPathIn(dir, cfg.GetMounts()[v.mount].GetImageSubPath(), field+".image_sub_path")
		if err != nil {
			return nil, err
		}
		out[v.mount] = src
	}
	return out, nil
}

// statusImage is the image ContainerStatus names for a container created
// from spec, which resolved to the image id with tags: the kubelet sends the
// image's id as spec.image and the pod's own name for it as
// user_specified_image, and shows the status's image as the pod's; after a
// pod's image is changed it waits for the new name there. So the name the
// pod used comes first; then spec.image when it is a name, not the id or a
// checkpoint archive; then, as containerd answers, the image's first tag.
func statusImage(spec *runtimeapi.ImageSpec, id string, tags []string) string {
	if u := spec.GetUserSpecifiedImage(); u != "" {
		return u
	}
	name := spec.GetImage()
	isID := name == id || "sha256:"+name == id || strings.HasPrefix(name, "sha256:")
	// A checkpoint archive is named by its absolute .tar path (the shape
	// archive.IsArchive checks, without its stat: no I/O for a status).
	isArchive := filepath.IsAbs(name) && strings.HasSuffix(name, ".tar")
	if !isID && !isArchive {
		return name
	}
	if len(tags) > 0 {
		return tags[0]
	}
	return name
}

// StatusImage is the image ContainerStatus names (see statusImage).
func (c Container) StatusImage() string {
	if c.ImageName != "" {
		return c.ImageName
	}
	return statusImage(c.Config.GetImage(), c.ImageID, nil)
}

// imageRef is the reference the kubelet shows for the image: its first repo
// digest, else its id.
func imageRef(img image.Image) string {
	if len(img.RepoDigests) > 0 {
		return img.RepoDigests[0]
	}
	return img.ID
}

// mountRootfs mounts the container's overlay rootfs: the image's layers
// read-only under a writable upper dir in the bundle. In a pod of its own
// user namespace the layers are seen through its id mapping, and the
// upper dir's root belongs to the pod's root.
func (m *Manager) mountRootfs(id string, img image.Image, userns *ocispec.UserNamespace) (string, error) {
	lower, err := m.images.LowerDirs(img)
	if err != nil {
		return "", fmt.Errorf("prepare rootfs: %w", err)
	}
	b := m.bundle(id)
	rootfs, upper, work := filepath.Join(b, "rootfs"), filepath.Join(b, "fs"), filepath.Join(b, "work")
	for _, d := range []string{rootfs, upper, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", fmt.Errorf("prepare rootfs: %w", err)
		}
	}
	if len(lower) == 0 {
		// overlayfs needs a lower layer; an image without layers gets an
		// empty one.
		empty := filepath.Join(b, "empty")
		if err := os.MkdirAll(empty, 0o755); err != nil {
			return "", fmt.Errorf("prepare rootfs: %w", err)
		}
		lower = []string{empty}
	}
	if userns != nil {
		if err := mountMappedRootfs(lower, upper, work, rootfs, filepath.Join(b, "mapped"), userns); err != nil {
			return "", fmt.Errorf("mount rootfs: %w", err)
		}
		return rootfs, nil
	}
	ov := mount.Mount{Type: "overlay", Source: "overlay", Options: []string{
		"lowerdir=" + strings.Join(lower, ":"), "upperdir=" + upper, "workdir=" + work,
	}}
	if err := ov.Mount(rootfs); err != nil {
		return "", fmt.Errorf("mount rootfs: %w", err)
	}
	return rootfs, nil
}

// mountMappedRootfs mounts the overlay of id-mapped layers for a container
// in the user namespace userns. Only the (empty) upper dir is chowned, to
// the host ids of the pod's root: the merged root takes its owner.
func mountMappedRootfs(lower []string, upper, work, rootfs, scratch string, userns *ocispec.UserNamespace) error {
	if err := os.Lchown(upper, int(userns.UIDs[0].HostID), int(userns.GIDs[0].HostID)); err != nil {
		return fmt.Errorf("give the upper dir to the pod's root: %w", err)
	}
	f, err := os.Open(userns.Path)
	if err != nil {
		return fmt.Errorf("open the pod's user namespace: %w", err)
	}
	defer f.Close()
	return mount.IDMappedOverlay(lower, upper, work, rootfs, scratch, f)
}

func writeSpec(bundle string, spec any) error {
	data, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("encode OCI spec: %w", err)
	}
	tmp := filepath.Join(bundle, "config.json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write OCI spec: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(bundle, "config.json")); err != nil {
		return fmt.Errorf("write OCI spec: %w", err)
	}
	return nil
}

// namespaces are the sandbox namespaces the container joins.
func (m *Manager) namespaces(sb sandbox.Sandbox, cfg *runtimeapi.ContainerConfig) (ocispec.Namespaces, error) {
	podNS := sb.Config.GetLinux().GetSecurityContext().GetNamespaceOptions()
	ns := ocispec.Namespaces{
		NetNS:       sb.NetNS,
		IPCNS:       sb.IPCNS,
		UTSNS:       sb.UTSNS,
		HostNetwork: podNS.GetNetwork() == runtimeapi.NamespaceMode_NODE,
		HostIPC:     podNS.GetIpc() == runtimeapi.NamespaceMode_NODE,
	}
	ctrNS := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	user, err := userNamespace(sb, ctrNS.GetUsernsOptions())
	if err != nil {
		return ns, err
	}
	ns.User = user
	switch ctrNS.GetPid() {
	case runtimeapi.NamespaceMode_NODE:
		ns.HostPID = true
	case runtimeapi.NamespaceMode_POD:
		ns.PIDNS = sb.PIDNS()
	case runtimeapi.NamespaceMode_TARGET:
		t, err := m.Get(ctrNS.GetTargetId())
		if err != nil {
			return ns, fmt.Errorf("config.linux.security_context.namespace_options.target_id: %w", err)
		}
		if t.State != Running || t.Pid == 0 {
			return ns, fmt.Errorf("config.linux.security_context.namespace_options.target_id: container %s is %s, not running: %w",
				t.ID, t.State, errdefs.ErrFailedPrecondition)
		}
		ns.PIDNS = fmt.Sprintf("/proc/%d/ns/pid", t.Pid)
	}
	return ns, nil
}

// cgroupsPath is the container's cgroup under its pod's.
func (m *Manager) cgroupsPath(sb sandbox.Sandbox, id string) string {
	if m.cfg.CgroupDriver == "systemd" {
		return sb.CgroupParent + ":crib:" + id
	}
	return filepath.Join(sb.CgroupParent, id)
}

// userNamespace is the user namespace a container of sb joins: its pod's,
// if the pod has one. A container cannot choose another: userns_options,
// when given, must say what the pod's say.
func userNamespace(sb sandbox.Sandbox, opts *runtimeapi.UserNamespace) (*ocispec.UserNamespace, error) {
	const field = "config.linux.security_context.namespace_options.userns_options"
	podOpts := sb.Config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
	if opts != nil && !proto.Equal(opts, podOpts) {
		if sb.UserNS != "" || opts.GetMode() != runtimeapi.NamespaceMode_NODE {
			return nil, fmt.Errorf("%s differ from the pod's: a container joins its pod's user namespace: %w", field, errdefs.ErrInvalidArgument)
		}
	}
	if sb.UserNS == "" {
		return nil, nil
	}
	return &ocispec.UserNamespace{
		Path: sb.UserNS,
		UIDs: ocispec.IDMappings(podOpts.GetUids()),
		GIDs: ocispec.IDMappings(podOpts.GetGids()),
	}, nil
}

// restoreIDMap maps the owners of a checkpoint's writable layer, host ids
// of the checkpointed container's user namespace (none: its ids are the
// container's), to host ids of the new one's, userns (nil: the host's).
// It is nil when both use the host's users.
func restoreIDMap(archivePath string, userns *ocispec.UserNamespace) (func(uid, gid int) (int, int), error) {
	spec, err := archive.ReadSpec(archivePath)
	if err != nil {
		return nil, fmt.Errorf("image: %w: %w", err, errdefs.ErrInvalidArgument)
	}
	var fromU, fromG, toU, toG []specs.LinuxIDMapping
	if spec.Linux != nil {
		fromU, fromG = spec.Linux.UIDMappings, spec.Linux.GIDMappings
	}
	if userns != nil {
		toU, toG = userns.UIDs, userns.GIDs
	}
	if len(fromU)+len(fromG)+len(toU)+len(toG) == 0 {
		return nil, nil
	}
	return func(uid, gid int) (int, int) {
		return mapID(uid, fromU, toU), mapID(gid, fromG, toG)
	}, nil
}

// overflowID is the kernel's id for one a user namespace does not map.
const overflowID = 65534

// mapID maps the host id of one mapping (from; none: the id is the
// container's) to the host id of another (to; none: the container's).
func mapID(id int, from, to []specs.LinuxIDMapping) int {
	inside := id
	if len(from) > 0 {
		inside = overflowID
		for _, m := range from {
			if uint32(id) >= m.HostID && uint32(id)-m.HostID < m.Size {
				inside = int(m.ContainerID + uint32(id) - m.HostID)
				break
			}
		}
	}
	if len(to) == 0 {
		return inside
	}
	for _, m := range to {
		if uint32(inside) >= m.ContainerID && uint32(inside)-m.ContainerID < m.Size {
			return int(m.HostID + uint32(inside) - m.ContainerID)
		}
	}
	return int(to[0].HostID) + overflowID // outside the pod's range: its nobody
}

// criuConfigAnnotation names the CRIU config file runc gives CRIU.
const criuConfigAnnotation = "org.criu.config"

// restoreCriuConfig has CRIU restore with tcp-close, as CRI-O and Podman
// restore into a new pod: the pod has another IP, so a connection the
// checkpoint held comes back closed rather than failing the restore. A
// config the container's annotations name is left as it is.
func restoreCriuConfig(bundle string, spec *specs.Spec) error {
	if _, ok := spec.Annotations[criuConfigAnnotation]; ok {
		return nil
	}
	p := filepath.Join(bundle, "restore", "criu.conf")
	if err := os.WriteFile(p, []byte("tcp-close\n"), 0o600); err != nil {
		return fmt.Errorf("write CRIU's restore config: %w", err)
	}
	if spec.Annotations == nil {
		spec.Annotations = map[string]string{}
	}
	spec.Annotations[criuConfigAnnotation] = p
	return nil
}
