package podconfig

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
)

// ContainerConfig builds CreateContainer's config for one container
// instance, as the kubelet's generateContainerConfig does: metadata with
// the restart count as attempt, the image, command and args with $(VAR)
// references expanded against the final environment, the environment
// (see makeEnv), working dir, mounts (see makeMounts), the log path
// <container>/<restart count>.log under the sandbox's LogDirectory,
// stdin/tty, the agent's labels and annotations, and the Linux resources
// and security context. Container ports are not part of it: they are the
// sandbox's port mappings.
func ContainerConfig(in ContainerInput, opts Options) (*runtimeapi.ContainerConfig, error) {
	if in.Container == nil {
		return nil, fmt.Errorf("container is nil: %w", errdefs.ErrInvalidArgument)
	}
	if err := checkIdentity(in.Pod); err != nil {
		return nil, err
	}
	c := in.Container
	switch in.Type {
	case labels.TypeInit, labels.TypeApp, labels.TypeEphemeral:
	default:
		return nil, fmt.Errorf("container %q: type %q is not init, app or ephemeral: %w", c.Name, in.Type, errdefs.ErrInvalidArgument)
	}
	env, err := makeEnv(in, opts)
	if err != nil {
		return nil, fmt.Errorf("container %q: %w", c.Name, err)
	}
	mounts, err := makeMounts(in, env)
	if err != nil {
		return nil, fmt.Errorf("container %q: %w", c.Name, err)
	}
	sc, err := containerSecurity(in, opts)
	if err != nil {
		return nil, err
	}
	lookup := lookupIn(env.values)
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: in.RestartCount},
		Image:       &runtimeapi.ImageSpec{Image: in.Image, UserSpecifiedImage: c.Image},
		Command:     expandAll(c.Command, lookup),
		Args:        expandAll(c.Args, lookup),
		WorkingDir:  c.WorkingDir,
		Envs:        make([]*runtimeapi.KeyValue, 0, len(env.names)),
		Mounts:      mounts,
		Labels:      containerLabels(in, opts.OwnerLabel()),
		Annotations: containerAnnotations(in),
		LogPath:     ContainerLogPath(c.Name, in.RestartCount),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       containerResources(in.Pod, c, QOSClass(in.Pod), opts.NodeMemoryBytes),
			SecurityContext: sc,
		},
	}
	for _, name := range env.names {
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: name, Value: []byte(env.values[name])})
	}
	return cfg, nil
}

// ContainerLogPath is the kubelet's container log path relative to the
// pod's log directory: <container>/<restart count>.log.
func ContainerLogPath(container string, restartCount uint32) string {
	return filepath.Join(container, strconv.FormatUint(uint64(restartCount), 10)+".log")
}

func expandAll(in []string, lookup func(string) (string, bool)) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, lookup)
	}
	return out
}

func containerLabels(in ContainerInput, owner string) map[string]string {
	return map[string]string{
		labels.PodName:       in.Pod.Name,
		labels.PodNamespace:  in.Pod.Namespace,
		labels.PodUID:        string(in.Pod.UID),
		labels.ContainerName: in.Container.Name,
		labels.ManagedBy:     owner,
	}
}

func containerAnnotations(in ContainerInput) map[string]string {
	a := map[string]string{
		labels.ContainerHash: in.Hash,
		labels.RestartCount:  strconv.FormatUint(uint64(in.RestartCount), 10),
		labels.ContainerType: in.Type,
	}
	if in.ResizeHash != "" {
		a[labels.ContainerResizeHash] = in.ResizeHash
	}
	if p := in.Container.TerminationMessagePath; p != "" {
		a[labels.TerminationMessagePath] = p
	}
	if g := in.Pod.Spec.TerminationGracePeriodSeconds; g != nil {
		a[labels.TerminationGracePeriod] = strconv.FormatInt(*g, 10)
	}
	return a
}
