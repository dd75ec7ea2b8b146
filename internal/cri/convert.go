package cri

import (
	"time"

	"golang.org/x/sys/unix"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/sandbox"
)

func sandboxState(sb sandbox.Sandbox) runtimeapi.PodSandboxState {
	if sb.State == sandbox.Ready {
		return runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return runtimeapi.PodSandboxState_SANDBOX_NOTREADY
}

func sandboxItem(sb sandbox.Sandbox) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{
		Id:             sb.ID,
		Metadata:       sb.Config.GetMetadata(),
		State:          sandboxState(sb),
		CreatedAt:      sb.CreatedAt.UnixNano(),
		Labels:         sb.Config.GetLabels(),
		Annotations:    sb.Config.GetAnnotations(),
		RuntimeHandler: sb.RuntimeHandler,
	}
}

func sandboxStatus(sb sandbox.Sandbox) *runtimeapi.PodSandboxStatus {
	ns := sb.Config.GetLinux().GetSecurityContext().GetNamespaceOptions()
	return &runtimeapi.PodSandboxStatus{
		Id:        sb.ID,
		Metadata:  sb.Config.GetMetadata(),
		State:     sandboxState(sb),
		CreatedAt: sb.CreatedAt.UnixNano(),
		Network:   sandboxNetwork(sb),
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{
			Network:  ns.GetNetwork(),
			Pid:      ns.GetPid(),
			Ipc:      ns.GetIpc(),
			TargetId: ns.GetTargetId(),
			// As containerd reports them: crictl inspectp shows the pod's
			// user namespace mapping.
			UsernsOptions: ns.GetUsernsOptions(),
		}}},
		Labels:         sb.Config.GetLabels(),
		Annotations:    sb.Config.GetAnnotations(),
		RuntimeHandler: sb.RuntimeHandler,
	}
}

func containerState(c container.Container) runtimeapi.ContainerState {
	switch c.State {
	case container.Created:
		return runtimeapi.ContainerState_CONTAINER_CREATED
	case container.Running:
		return runtimeapi.ContainerState_CONTAINER_RUNNING
	case container.Exited:
		return runtimeapi.ContainerState_CONTAINER_EXITED
	default:
		return runtimeapi.ContainerState_CONTAINER_UNKNOWN
	}
}

func containerItem(c container.Container) *runtimeapi.Container {
	return &runtimeapi.Container{
		Id:           c.ID,
		PodSandboxId: c.SandboxID,
		Metadata:     c.Config.GetMetadata(),
		Image:        imageSpec(c),
		ImageRef:     c.ImageRef,
		ImageId:      c.ImageID,
		State:        containerState(c),
		CreatedAt:    c.CreatedAt.UnixNano(),
		Labels:       c.Config.GetLabels(),
		Annotations:  c.Config.GetAnnotations(),
	}
}

// imageSpec is the image of c as its config named it, without a runtime
// handler: every handler shares one image store, and ListImages names
// none, so the kubelet's image GC (RuntimeClassInImageCriApi), which
// matches a container's image and handler against the listed images',
// sees the image in use.
func imageSpec(c container.Container) *runtimeapi.ImageSpec {
	img := c.Config.GetImage()
	return &runtimeapi.ImageSpec{
		Image:              img.GetImage(),
		Annotations:        img.GetAnnotations(),
		UserSpecifiedImage: img.GetUserSpecifiedImage(),
	}
}

// statusImageSpec is the image of c as ContainerStatus reports it: the
// name the pod gave it (the config's image is the id when the kubelet
// creates the container), so that the pod's status shows that name.
func statusImageSpec(c container.Container) *runtimeapi.ImageSpec {
	spec := imageSpec(c)
	spec.Image = c.StatusImage()
	return spec
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func containerStatus(c container.Container) *runtimeapi.ContainerStatus {
	st := &runtimeapi.ContainerStatus{
		Id:          c.ID,
		Metadata:    c.Config.GetMetadata(),
		State:       containerState(c),
		CreatedAt:   c.CreatedAt.UnixNano(),
		StartedAt:   unixNano(c.StartedAt),
		FinishedAt:  unixNano(c.FinishedAt),
		ExitCode:    c.ExitCode,
		Image:       statusImageSpec(c),
		ImageRef:    c.ImageRef,
		ImageId:     c.ImageID,
		Reason:      c.Reason,
		Message:     c.Message,
		Labels:      c.Config.GetLabels(),
		Annotations: c.Config.GetAnnotations(),
		Mounts:      c.StatusMounts(),
		LogPath:     c.LogPath,
		Resources:   &runtimeapi.ContainerResources{Linux: c.Config.GetLinux().GetResources()},
		StopSignal:  stopSignal(c),
		User:        containerUser(c),
	}
	return st
}

// matchLabels reports whether labels has every key and value of selector.
func matchLabels(selector, labels map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// criImage is img as the CRI reports it, its spec naming handler, the
// runtime handler the request asked about.
func criImage(img image.Image, handler string) *runtimeapi.Image {
	out := &runtimeapi.Image{
		Id:          img.ID,
		RepoTags:    img.RepoTags,
		RepoDigests: img.RepoDigests,
		Size:        uint64(img.Size),
		Pinned:      img.Pinned,
		Spec:        &runtimeapi.ImageSpec{Image: img.ID, RuntimeHandler: handler},
	}
	uid, name := imageUser(img.Config.Config.User)
	out.Uid, out.Username = uid, name
	return out
}

// stopSignal is the signal StopContainer sends c, as the CRI enum.
func stopSignal(c container.Container) runtimeapi.Signal {
	sig := c.EffectiveStopSignal()
	if sig == 0 {
		return runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT
	}
	return runtimeapi.Signal(runtimeapi.Signal_value["SIGNAL_"+unix.SignalName(sig)])
}

// containerUser is the identity of the container's first process.
func containerUser(c container.Container) *runtimeapi.ContainerUser {
	groups := make([]int64, len(c.User.AdditionalGids))
	for i, g := range c.User.AdditionalGids {
		groups[i] = int64(g)
	}
	return &runtimeapi.ContainerUser{Linux: &runtimeapi.LinuxContainerUser{
		Uid:                int64(c.User.UID),
		Gid:                int64(c.User.GID),
		SupplementalGroups: groups,
	}}
}

// sandboxNetwork is the pod's IPs, the primary first.
func sandboxNetwork(sb sandbox.Sandbox) *runtimeapi.PodSandboxNetworkStatus {
	st := &runtimeapi.PodSandboxNetworkStatus{}
	for i, ip := range sb.IPs {
		if i == 0 {
			st.Ip = ip
			continue
		}
		st.AdditionalIps = append(st.AdditionalIps, &runtimeapi.PodIP{Ip: ip})
	}
	return st
}
