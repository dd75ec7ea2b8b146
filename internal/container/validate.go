package container

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	securejoin "github.com/cyphar/filepath-securejoin"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	cv "github.com/crib-dev/crib/internal/crivalidate"
)

// validate checks what CreateContainer needs of its config and names the
// offending field.
func validate(cfg *runtimeapi.ContainerConfig) error {
	switch {
	case cfg == nil:
		return fmt.Errorf("config is missing: %w", errdefs.ErrInvalidArgument)
	case cfg.GetMetadata() == nil:
		return fmt.Errorf("config.metadata is missing: %w", errdefs.ErrInvalidArgument)
	case cfg.GetImage().GetImage() == "":
		return fmt.Errorf("config.image.image is empty: %w", errdefs.ErrInvalidArgument)
	}
	return validateFields(cfg)
}

// validateFields checks every field of the config crib reads, refusing
// unknown enum values and sizes beyond any real pod's.
func validateFields(cfg *runtimeapi.ContainerConfig) error {
	if err := cv.Name("config.metadata.name", cfg.GetMetadata().GetName(), true); err != nil {
		return err
	}
	if err := validateImageSpec("config.image", cfg.GetImage()); err != nil {
		return err
	}
	if err := validateProcess(cfg); err != nil {
		return err
	}
	if n := len(cfg.GetMounts()); n > cv.MaxStrings {
		return cv.Invalid("config.mounts", "%d mounts, more than %d", n, cv.MaxStrings)
	}
	for i, m := range cfg.GetMounts() {
		f := fmt.Sprintf("config.mounts[%d]", i)
		if err := cv.AbsPath(f+".container_path", m.GetContainerPath(), false); err != nil {
			return err
		}
		if err := cv.String(f+".host_path", m.GetHostPath(), cv.MaxPathLen); err != nil {
			return err
		}
		if err := cv.String(f+".image_sub_path", m.GetImageSubPath(), cv.MaxPathLen); err != nil {
			return err
		}
		if err := cv.Enum(f+".propagation", m.GetPropagation(), runtimeapi.MountPropagation_name); err != nil {
			return err
		}
		if err := cv.MountOptions(f+".mount_options", m.GetMountOptions()); err != nil {
			return err
		}
		if err := validateImageMount(i, m); err != nil {
			return err
		}
		if m.GetImage() != nil {
			if err := validateImageSpec(f+".image", m.GetImage()); err != nil {
				return err
			}
		}
	}
	if n := len(cfg.GetDevices()); n > cv.MaxStrings {
		return cv.Invalid("config.devices", "%d devices, more than %d", n, cv.MaxStrings)
	}
	for i, d := range cfg.GetDevices() {
		f := fmt.Sprintf("config.devices[%d]", i)
		if err := cv.AbsPath(f+".container_path", d.GetContainerPath(), false); err != nil {
			return err
		}
		if err := cv.AbsPath(f+".host_path", d.GetHostPath(), false); err != nil {
			return err
		}
		if p := d.GetPermissions(); len(p) > 3 || strings.Trim(p, "rwm") != "" {
			return cv.Invalid(f+".permissions", "%q is not made of r, w and m", p)
		}
	}
	if n := len(cfg.GetCDIDevices()); n > cv.MaxStrings {
		return cv.Invalid("config.CDI_devices", "%d devices, more than %d", n, cv.MaxStrings)
	}
	for i, d := range cfg.GetCDIDevices() {
		if err := cv.String(fmt.Sprintf("config.CDI_devices[%d].name", i), d.GetName(), cv.MaxPathLen); err != nil {
			return err
		}
	}
	if err := cv.Labels("config.labels", cfg.GetLabels()); err != nil {
		return err
	}
	if err := cv.Annotations("config.annotations", cfg.GetAnnotations()); err != nil {
		return err
	}
	if p := cfg.GetLogPath(); p != "" {
		if err := cv.RelPath("config.log_path", p); err != nil {
			return err
		}
	}
	if err := cv.Enum("config.stop_signal", cfg.GetStopSignal(), runtimeapi.Signal_name); err != nil {
		return err
	}
	return validateLinux(cfg.GetLinux())
}

func validateImageSpec(field string, img *runtimeapi.ImageSpec) error {
	if err := cv.String(field+".image", img.GetImage(), cv.MaxPathLen); err != nil {
		return err
	}
	if err := cv.String(field+".user_specified_image", img.GetUserSpecifiedImage(), cv.MaxPathLen); err != nil {
		return err
	}
	if err := cv.String(field+".runtime_handler", img.GetRuntimeHandler(), cv.MaxNameLen); err != nil {
		return err
	}
	return cv.Annotations(field+".annotations", img.GetAnnotations())
}

// validateProcess checks the process's command, arguments, environment
// and working directory within what execve and runc take.
func validateProcess(cfg *runtimeapi.ContainerConfig) error {
	cmd, err := cv.Argv("config.command", cfg.GetCommand())
	if err != nil {
		return err
	}
	args, err := cv.Argv("config.args", cfg.GetArgs())
	if err != nil {
		return err
	}
	env := make([]string, len(cfg.GetEnvs()))
	for i, kv := range cfg.GetEnvs() {
		if err := cv.EnvKey(fmt.Sprintf("config.envs[%d].key", i), kv.GetKey()); err != nil {
			return err
		}
		env[i] = kv.GetKey() + "=" + string(kv.GetValue())
	}
	envs, err := cv.Argv("config.envs", env)
	if err != nil {
		return err
	}
	if total := cmd + args + envs; total > cv.MaxArgsTotal {
		return cv.Invalid("config", "command, args and envs take %d bytes, more than %d", total, cv.MaxArgsTotal)
	}
	if wd := cfg.GetWorkingDir(); wd != "" {
		return cv.AbsPath("config.working_dir", wd, false)
	}
	return nil
}

func validateLinux(l *runtimeapi.LinuxContainerConfig) error {
	if err := cv.Resources("config.linux.resources", l.GetResources()); err != nil {
		return err
	}
	const field = "config.linux.security_context"
	sc := l.GetSecurityContext()
	ns := sc.GetNamespaceOptions()
	for f, mode := range map[string]runtimeapi.NamespaceMode{
		field + ".namespace_options.network": ns.GetNetwork(), field + ".namespace_options.pid": ns.GetPid(),
		field + ".namespace_options.ipc": ns.GetIpc(),
	} {
		if err := cv.Enum(f, mode, runtimeapi.NamespaceMode_name); err != nil {
			return err
		}
	}
	if ns.GetNetwork() == runtimeapi.NamespaceMode_TARGET || ns.GetIpc() == runtimeapi.NamespaceMode_TARGET {
		return cv.Invalid(field+".namespace_options", "TARGET is only valid for pid")
	}
	if ns.GetPid() == runtimeapi.NamespaceMode_TARGET && ns.GetTargetId() == "" {
		return cv.Invalid(field+".namespace_options.target_id", "is empty with pid TARGET")
	}
	if err := cv.Name(field+".namespace_options.target_id", ns.GetTargetId(), false); err != nil {
		return err
	}
	caps := sc.GetCapabilities()
	for f, list := range map[string][]string{
		field + ".capabilities.add_capabilities": caps.GetAddCapabilities(), field + ".capabilities.drop_capabilities": caps.GetDropCapabilities(),
		field + ".capabilities.add_ambient_capabilities": caps.GetAddAmbientCapabilities(),
	} {
		if err := cv.Strings(f, list, maxCapability); err != nil {
			return err
		}
	}
	for f, list := range map[string][]string{field + ".masked_paths": sc.GetMaskedPaths(), field + ".readonly_paths": sc.GetReadonlyPaths()} {
		if err := cv.Strings(f, list, cv.MaxPathLen); err != nil {
			return err
		}
		for i, p := range list {
			if err := cv.AbsPath(fmt.Sprintf("%s[%d]", f, i), p, false); err != nil {
				return err
			}
		}
	}
	if err := cv.String(field+".run_as_username", sc.GetRunAsUsername(), cv.MaxNameLen); err != nil {
		return err
	}
	return cv.SecurityContext(field, cv.SecurityFields{
		SELinux:                  sc.GetSelinuxOptions(),
		RunAsUser:                sc.GetRunAsUser(),
		RunAsGroup:               sc.GetRunAsGroup(),
		SupplementalGroups:       sc.GetSupplementalGroups(),
		SupplementalGroupsPolicy: sc.GetSupplementalGroupsPolicy(),
		Seccomp:                  sc.GetSeccomp(),
		Apparmor:                 sc.GetApparmor(),
	})
}

// maxCapability bounds a capability's name ("CAP_" and the longest,
// CAP_CHECKPOINT_RESTORE, with room to spare; "ALL" is a name too).
const maxCapability = 64

// validateImageMount checks what can be told of an image mount before its
// image is mounted; subPathIn checks the rest (symlinks) after.
func validateImageMount(i int, m *runtimeapi.Mount) error {
	sub := m.GetImageSubPath()
	switch {
	case m.GetImage().GetImage() == "" && sub != "":
		return fmt.Errorf("config.mounts[%d].image_sub_path is set without an image: %w", i, errdefs.ErrInvalidArgument)
	case m.GetImage().GetImage() != "" && m.GetHostPath() != "":
		return fmt.Errorf("config.mounts[%d].image and host_path are both set: %w", i, errdefs.ErrInvalidArgument)
	case m.GetImage().GetImage() != "" && m.GetPropagation() != runtimeapi.MountPropagation_PROPAGATION_PRIVATE:
		return fmt.Errorf("config.mounts[%d].propagation: an image mount must be private: %w", i, errdefs.ErrInvalidArgument)
	}
	if c := filepath.Clean(sub); c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Errorf("config.mounts[%d].image_sub_path %q leaves the image: %w", i, sub, errdefs.ErrInvalidArgument)
	}
	return nil
}

// logPath joins the sandbox's log directory and the container's log path,
// refusing a path that would land outside the directory, by ".." or by a
// symlink on the way: the monitor opens it as root.
func logPath(dir, rel string) (string, error) {
	if rel == "" {
		return "", nil
	}
	if dir == "" {
		return "", fmt.Errorf("config.log_path %q is set but the sandbox has no log_directory: %w", rel, errdefs.ErrInvalidArgument)
	}
	if err := cv.RelPath("config.log_path", rel); err != nil {
		return "", err
	}
	p := filepath.Join(dir, rel)
	// SecureJoin resolves the symlinks below dir as if dir were the root;
	// where one was followed, the result differs from the plain join.
	resolved, err := securejoin.SecureJoin(dir, rel)
	if err != nil {
		return "", fmt.Errorf("resolve config.log_path %q under %s: %w", rel, dir, err)
	}
	if resolved != p {
		return "", fmt.Errorf("config.log_path %q goes through a symlink under %s: %w", rel, dir, errdefs.ErrInvalidArgument)
	}
	return p, nil
}
