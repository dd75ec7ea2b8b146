package podconfig

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// makeMounts is the kubelet's makeMounts for one container: each
// volumeMount at the host path the volume package prepared, or for a
// subPath (or subPathExpr expanded against the container's environment) at
// the host path prepared for that mount in ContainerInput.SubPaths, then
// the termination-message file. recursiveReadOnly IfPossible is taken as
// Disabled: whether the runtime supports it is not known here.
// bindMountOptions go to the runtime as the mount's options; with an image
// volume they are refused, as the API server refuses them.
func makeMounts(in ContainerInput, env *envList) ([]*runtimeapi.Mount, error) {
	c := in.Container
	var mounts []*runtimeapi.Mount
	for i := range c.VolumeMounts {
		vm := &c.VolumeMounts[i]
		field := fmt.Sprintf("volumeMounts[%d] (%s)", i, vm.Name)
		if image, ok := in.ImageVolumes[vm.Name]; ok {
			m, err := imageMount(vm, image, env)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			mounts = append(mounts, m)
			continue
		}
		hostPath, ok := in.Volumes[vm.Name]
		if !ok || hostPath == "" {
			return nil, fmt.Errorf("%s: volume %q to mount into container %q: %w", field, vm.Name, c.Name, errdefs.ErrNotFound)
		}
		subPath, err := subPathOf(vm, env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		if subPath != "" {
			hostPath = in.SubPaths[i]
			if hostPath == "" {
				return nil, fmt.Errorf("%s: subPath %q of container %q was not prepared: %w", field, subPath, c.Name, errdefs.ErrFailedPrecondition)
			}
		}
		prop, err := propagation(vm.MountPropagation, c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		m := &runtimeapi.Mount{
			ContainerPath: vm.MountPath,
			HostPath:      hostPath,
			Readonly:      vm.ReadOnly || readOnlyVolume(in.Pod, vm.Name),
			Propagation:   prop,
			// The runtime refuses any but noexec, nodev and nosuid.
			MountOptions: vm.BindMountOptions,
		}
		if vm.RecursiveReadOnly != nil && *vm.RecursiveReadOnly == corev1.RecursiveReadOnlyEnabled {
			if !vm.ReadOnly || prop != runtimeapi.MountPropagation_PROPAGATION_PRIVATE {
				return nil, fmt.Errorf("%s: recursiveReadOnly Enabled needs readOnly and no mountPropagation: %w", field, errdefs.ErrInvalidArgument)
			}
			m.RecursiveReadOnly = true
		}
		mounts = append(mounts, m)
	}
	if in.TerminationMessageHostPath != "" && c.TerminationMessagePath != "" {
		mounts = append(mounts, &runtimeapi.Mount{
			ContainerPath: c.TerminationMessagePath,
			HostPath:      in.TerminationMessageHostPath,
		})
	}
	return mounts, nil
}

// imageMount is the CRI mount of an image volume: read-only, private, the
// subPath resolved by the runtime inside the image.
func imageMount(vm *corev1.VolumeMount, image string, env *envList) (*runtimeapi.Mount, error) {
	if image == "" {
		return nil, fmt.Errorf("image volume %q was not pulled: %w", vm.Name, errdefs.ErrFailedPrecondition)
	}
	if vm.MountPropagation != nil && *vm.MountPropagation != corev1.MountPropagationNone {
		return nil, fmt.Errorf("mountPropagation %q: an image volume is mounted private: %w", *vm.MountPropagation, errdefs.ErrInvalidArgument)
	}
	if len(vm.BindMountOptions) > 0 {
		return nil, fmt.Errorf("bindMountOptions: not supported with an image volume: %w", errdefs.ErrInvalidArgument)
	}
	sub, err := subPathOf(vm, env)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.Mount{
		ContainerPath: vm.MountPath,
		Image:         &runtimeapi.ImageSpec{Image: image},
		ImageSubPath:  sub,
		Readonly:      true,
	}, nil
}

// SubPaths returns, by index in the container's volumeMounts, the subPath
// of every volumeMount of a volume on the host (not an image volume) that
// has one: subPath as written, or subPathExpr
// expanded against the container's environment (so in needs what the
// environment needs: ConfigMaps, Secrets, pod IPs). Each is checked to be
// relative and free of "..". The caller prepares each on the host (the
// volume package resolves it safely) and puts the results in
// ContainerInput.SubPaths before calling ContainerConfig. A container
// without subPaths returns an empty map.
func SubPaths(in ContainerInput, opts Options) (map[int]string, error) {
	if in.Container == nil {
		return nil, fmt.Errorf("container is nil: %w", errdefs.ErrInvalidArgument)
	}
	c := in.Container
	env := &envList{}
	if slices.ContainsFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.SubPathExpr != "" }) {
		if err := checkIdentity(in.Pod); err != nil {
			return nil, err
		}
		var err error
		if env, err = makeEnv(in, opts); err != nil {
			return nil, fmt.Errorf("container %q: %w", c.Name, err)
		}
	}
	out := map[int]string{}
	for i := range c.VolumeMounts {
		vm := &c.VolumeMounts[i]
		if _, image := in.ImageVolumes[vm.Name]; image {
			continue
		}
		sub, err := subPathOf(vm, env)
		if err != nil {
			return nil, fmt.Errorf("container %q: volumeMounts[%d] (%s): %w", c.Name, i, vm.Name, err)
		}
		if sub != "" {
			out[i] = sub
		}
	}
	return out, nil
}

// subPathOf returns the checked subPath of vm, "" when it has none.
func subPathOf(vm *corev1.VolumeMount, env *envList) (string, error) {
	subPath := vm.SubPath
	if vm.SubPathExpr != "" {
		var err error
		if subPath, err = expandSubPath(vm.SubPathExpr, env); err != nil {
			return "", err
		}
	}
	if subPath != "" {
		if err := checkSubPath(subPath); err != nil {
			return "", err
		}
	}
	return subPath, nil
}

// expandSubPath expands subPathExpr; unlike command and args, a variable
// that is unset or empty is an error, since the mount would silently
// widen to the whole volume.
func expandSubPath(expr string, env *envList) (string, error) {
	var missing []string
	out := expand(expr, func(name string) (string, bool) {
		v := env.values[name]
		if v == "" {
			missing = append(missing, name)
		}
		return v, true
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("subPathExpr %q: no value for %s: %w", expr, strings.Join(missing, ", "), errdefs.ErrInvalidArgument)
	}
	return out, nil
}

// checkSubPath rejects a subPath that is absolute or steps out of its
// volume with "..".
func checkSubPath(p string) error {
	if filepath.IsAbs(p) {
		return fmt.Errorf("subPath %q must not be an absolute path: %w", p, errdefs.ErrInvalidArgument)
	}
	if slices.Contains(strings.Split(filepath.ToSlash(p), "/"), "..") {
		return fmt.Errorf("subPath %q must not contain '..': %w", p, errdefs.ErrInvalidArgument)
	}
	return nil
}

// propagation converts a mountPropagation mode; Bidirectional is for
// privileged containers only, as API validation insists.
func propagation(mode *corev1.MountPropagationMode, c *corev1.Container) (runtimeapi.MountPropagation, error) {
	if mode == nil {
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	}
	switch *mode {
	case corev1.MountPropagationNone:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	case corev1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, nil
	case corev1.MountPropagationBidirectional:
		if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
			return 0, fmt.Errorf("mountPropagation Bidirectional requires a privileged container: %w", errdefs.ErrInvalidArgument)
		}
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, nil
	}
	return 0, fmt.Errorf("mountPropagation %q is not valid: %w", *mode, errdefs.ErrInvalidArgument)
}

// readOnlyVolume reports whether the kubelet's volume plugin for the named
// volume mounts it read-only whatever the volumeMount says: configMap,
// secret, downwardAPI and projected volumes are.
func readOnlyVolume(pod *corev1.Pod, name string) bool {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.Name != name {
			continue
		}
		return v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil
	}
	return false
}
