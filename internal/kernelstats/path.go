package kernelstats

import (
	"fmt"
	"path"
	"strings"

	"github.com/containerd/errdefs"
)

// GroupPath turns an OCI linux.cgroupsPath, or a pod's cgroup parent, into
// the cgroup's path under a hierarchy's root ("/crib/pod/ctr").
//
// With the cgroupfs driver the path is used as it is. With the systemd
// driver a "slice:prefix:name" path names the unit prefix-name.scope (or
// the slice name, when name is one) under the expanded slice, and a bare
// "a-b.slice" parent expands to "/a.slice/a-b.slice". Paths relative to
// the runtime's own cgroup are treated as relative to the root.
func GroupPath(cgroupsPath string, systemd bool) (string, error) {
	if cgroupsPath == "" {
		return "", fmt.Errorf("cgroups path is empty: %w", errdefs.ErrInvalidArgument)
	}
	if systemd {
		if parts := strings.Split(cgroupsPath, ":"); len(parts) == 3 {
			return systemdUnitPath(parts[0], parts[1], parts[2])
		}
		if strings.HasSuffix(cgroupsPath, ".slice") && !strings.Contains(cgroupsPath, "/") {
			return ExpandSlice(cgroupsPath)
		}
	}
	if strings.Contains(cgroupsPath, ":") {
		return "", fmt.Errorf("cgroups path %q: systemd form without the systemd driver: %w", cgroupsPath, errdefs.ErrInvalidArgument)
	}
	return path.Clean("/" + cgroupsPath), nil
}

// systemdUnitPath is where systemd puts a runtime's unit under its slice.
func systemdUnitPath(slice, prefix, name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("systemd cgroups path %s:%s:%s names no unit: %w", slice, prefix, name, errdefs.ErrInvalidArgument)
	}
	if slice == "" {
		slice = "system.slice"
	}
	dir, err := ExpandSlice(slice)
	if err != nil {
		return "", err
	}
	unit := name
	if !strings.HasSuffix(name, ".slice") {
		unit = name + ".scope"
		if prefix != "" {
			unit = prefix + "-" + unit
		}
	}
	return path.Join(dir, unit), nil
}

// ExpandSlice turns a systemd slice name into its cgroup path: each dash
// names a parent slice, so "a-b-c.slice" lives at
// "/a.slice/a-b.slice/a-b-c.slice", and "-.slice" is the root.
func ExpandSlice(slice string) (string, error) {
	name, ok := strings.CutSuffix(slice, ".slice")
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("invalid systemd slice name %q: %w", slice, errdefs.ErrInvalidArgument)
	}
	if name == "-" {
		return "/", nil
	}
	if strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") || strings.Contains(name, "--") {
		return "", fmt.Errorf("invalid systemd slice name %q: %w", slice, errdefs.ErrInvalidArgument)
	}
	var b strings.Builder
	prefix := ""
	for _, part := range strings.Split(name, "-") {
		b.WriteString("/" + prefix + part + ".slice")
		prefix += part + "-"
	}
	return b.String(), nil
}
