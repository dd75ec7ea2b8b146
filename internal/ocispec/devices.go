package ocispec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// devices fills linux.devices and the device cgroup rules: deny all, then
// allow each CRI device with its permissions. A privileged container gets
// every host device and a rule allowing all.
func (b *builder) devices() error {
	rules := []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}
	var devs []specs.LinuxDevice
	if b.privileged {
		dir := b.in.DevDir
		if dir == "" {
			dir = "/dev"
		}
		host, err := HostDevices(dir)
		if err != nil {
			return err
		}
		devs = host
		rules = append(rules, specs.LinuxDeviceCgroup{Allow: true, Access: "rwm"})
	}
	for i, d := range b.in.Container.GetDevices() {
		field := fmt.Sprintf("devices[%d]", i)
		perms, err := devicePermissions(field, d.GetPermissions())
		if err != nil {
			return err
		}
		ctrPath := d.GetContainerPath()
		if !filepath.IsAbs(ctrPath) {
			return fmt.Errorf("%s.container_path %q is not absolute: %w", field, ctrPath, errdefs.ErrInvalidArgument)
		}
		found, err := criDevices(field, d.GetHostPath(), ctrPath)
		if err != nil {
			return err
		}
		for _, dev := range found {
			devs = replaceDevice(devs, dev)
			rules = append(rules, specs.LinuxDeviceCgroup{
				Allow: true, Type: dev.Type, Major: ptr(dev.Major), Minor: ptr(dev.Minor), Access: perms,
			})
		}
	}
	b.spec.Linux.Devices = devs
	res := b.resourcesStruct()
	res.Devices = rules
	return nil
}

// criDevices stats hostPath; a device node gives one device, a directory
// gives every device node below it (like /dev/snd), mapped under ctrPath.
func criDevices(field, hostPath, ctrPath string) ([]specs.LinuxDevice, error) {
	fi, err := os.Stat(hostPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s.host_path %q does not exist: %w", field, hostPath, errdefs.ErrInvalidArgument)
	}
	if err != nil {
		return nil, fmt.Errorf("stat %s.host_path %q: %v: %w", field, hostPath, err, errdefs.ErrInvalidArgument)
	}
	if !fi.IsDir() {
		dev, ok := deviceFromInfo(ctrPath, fi)
		if !ok {
			return nil, fmt.Errorf("%s.host_path %q is not a device: %w", field, hostPath, errdefs.ErrInvalidArgument)
		}
		return []specs.LinuxDevice{dev}, nil
	}
	devs, err := walkDevices(hostPath, ctrPath, nil)
	if err != nil {
		return nil, fmt.Errorf("%s.host_path: %w", field, err)
	}
	return devs, nil
}

// hostDeviceSkip are /dev entries never handed to privileged containers:
// runc sets them up itself or they belong to the host only.
var hostDeviceSkip = map[string]bool{
	"pts": true, "shm": true, "fd": true, "mqueue": true, "console": true,
	".lxc": true, ".lxd-mounts": true, ".udev": true,
}

// HostDevices lists the device nodes under dir (normally /dev) as they
// should appear under /dev in a privileged container, in lexical order.
func HostDevices(dir string) ([]specs.LinuxDevice, error) {
	return walkDevices(dir, "/dev", hostDeviceSkip)
}

// walkDevices lists device nodes below root, not following symlinks,
// skipping top-level names in skip.
func walkDevices(root, ctrRoot string, skip map[string]bool) ([]specs.LinuxDevice, error) {
	var out []specs.LinuxDevice
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != root && errors.Is(err, fs.ErrPermission) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if skip[rel] {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || d.Type()&fs.ModeDevice == 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // vanished while walking
		}
		if dev, ok := deviceFromInfo(path.Join(ctrRoot, filepath.ToSlash(rel)), fi); ok {
			out = append(out, dev)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list devices in %s: %w", root, err)
	}
	return out, nil
}

// deviceFromInfo describes a device node; ok is false for other files.
func deviceFromInfo(ctrPath string, fi fs.FileInfo) (specs.LinuxDevice, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || fi.Mode()&fs.ModeDevice == 0 {
		return specs.LinuxDevice{}, false
	}
	typ := "b"
	if fi.Mode()&fs.ModeCharDevice != 0 {
		typ = "c"
	}
	return specs.LinuxDevice{
		Path:     ctrPath,
		Type:     typ,
		Major:    int64(unix.Major(uint64(st.Rdev))),
		Minor:    int64(unix.Minor(uint64(st.Rdev))),
		FileMode: ptr(fi.Mode().Perm()),
		UID:      ptr(st.Uid),
		GID:      ptr(st.Gid),
	}, true
}

// devicePermissions validates a cgroup access string; empty means "rwm".
func devicePermissions(field, p string) (string, error) {
	if p == "" {
		return "rwm", nil
	}
	for _, c := range p {
		if !strings.ContainsRune("rwm", c) || strings.Count(p, string(c)) > 1 {
			return "", fmt.Errorf("%s.permissions %q: want a combination of r, w and m: %w", field, p, errdefs.ErrInvalidArgument)
		}
	}
	return p, nil
}

// replaceDevice adds dev, replacing a device at the same container path.
func replaceDevice(devs []specs.LinuxDevice, dev specs.LinuxDevice) []specs.LinuxDevice {
	for i := range devs {
		if devs[i].Path == dev.Path {
			devs[i] = dev
			return devs
		}
	}
	return append(devs, dev)
}

func ptr[T any](v T) *T { return &v }
