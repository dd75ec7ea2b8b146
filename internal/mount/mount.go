package mount

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Mount describes one filesystem to mount. Options are mount(8)-style
// strings ("ro", "bind", "rbind", "nosuid", "size=64m", "lowerdir=..."):
// the ones that map to mount flags become flags, the rest are passed to the
// filesystem as data.
type Mount struct {
	Type    string
	Source  string
	Options []string
}

var flagOptions = map[string]struct {
	clear bool
	flag  uintptr
}{
	"ro":          {false, unix.MS_RDONLY},
	"rw":          {true, unix.MS_RDONLY},
	"bind":        {false, unix.MS_BIND},
	"rbind":       {false, unix.MS_BIND | unix.MS_REC},
	"nosuid":      {false, unix.MS_NOSUID},
	"suid":        {true, unix.MS_NOSUID},
	"nodev":       {false, unix.MS_NODEV},
	"dev":         {true, unix.MS_NODEV},
	"noexec":      {false, unix.MS_NOEXEC},
	"exec":        {true, unix.MS_NOEXEC},
	"relatime":    {false, unix.MS_RELATIME},
	"noatime":     {false, unix.MS_NOATIME},
	"strictatime": {false, unix.MS_STRICTATIME},
}

// parseOptions splits options into mount flags and filesystem data.
func parseOptions(options []string) (uintptr, string) {
	var flags uintptr
	var data []string
	for _, o := range options {
		if f, ok := flagOptions[o]; ok {
			if f.clear {
				flags &^= f.flag
			} else {
				flags |= f.flag
			}
			continue
		}
		data = append(data, o)
	}
	return flags, strings.Join(data, ",")
}

// Mount mounts m on target. A read-only bind mount needs a second remount
// call, which this does.
func (m Mount) Mount(target string) error {
	flags, data := parseOptions(m.Options)
	if err := unix.Mount(m.Source, target, m.Type, flags, data); err != nil {
		return fmt.Errorf("mount %s (%s) on %s: %w", m.Source, m.Type, target, err)
	}
	if flags&unix.MS_BIND != 0 && flags&unix.MS_RDONLY != 0 {
		remount := flags | unix.MS_REMOUNT
		if err := unix.Mount("", target, "", remount, ""); err != nil {
			_ = Unmount(target)
			return fmt.Errorf("remount %s read-only: %w", target, err)
		}
	}
	return nil
}

// Bind bind-mounts source on target.
func Bind(source, target string) error {
	return Mount{Source: source, Options: []string{"bind"}}.Mount(target)
}

// Unmount detaches whatever is mounted on target, layer by layer, until
// nothing is. A target that is not a mount point or does not exist is fine.
func Unmount(target string) error {
	for i := 0; i < 64; i++ {
		err := unix.Unmount(target, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		switch {
		case err == nil:
			continue
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			return nil
		default:
			return fmt.Errorf("unmount %s: %w", target, err)
		}
	}
	return fmt.Errorf("unmount %s: still mounted after 64 unmounts", target)
}

// UnmountUnder unmounts every mount point at or below each of dirs,
// deepest first. Cleanup uses it so that a crash between mount and record
// never leaks a mount under crib's roots.
func UnmountUnder(dirs ...string) error {
	points, err := Under(dirs...)
	if err != nil {
		return err
	}
	return UnmountAll(points)
}

// UnmountAll unmounts points in their order (Under lists them deepest
// first), each until nothing is mounted there, and joins the failures.
func UnmountAll(points []string) error {
	var errs []error
	for _, p := range points {
		if err := Unmount(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// isAtOrBelow reports whether path p is dir or below it; neither ends in a
// slash.
func isAtOrBelow(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// Under lists the mount points at or below each of dirs, deepest first,
// from one reading of the mount table. It reads /proc/self/mountstats, not
// mountinfo: the same mounts, seen from the same root and escaped the same
// way, but without each one's options, which the kernel spends most of a
// mountinfo reading on (an overlay's layer paths): on a node of a thousand
// containers mountinfo is half a megabyte, several milliseconds of kernel
// time for each teardown that reads it.
func Under(dirs ...string) ([]string, error) {
	f, err := os.Open("/proc/self/mountstats")
	if err != nil {
		return nil, fmt.Errorf("read the mount table: %w", err)
	}
	defer f.Close()
	trimmed := make([]string, len(dirs))
	for i, dir := range dirs {
		trimmed[i] = strings.TrimSuffix(dir, "/")
	}
	var points []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		field, ok := mountPointField(sc.Bytes())
		if !ok {
			continue
		}
		for _, dir := range trimmed {
			// An escaped point (a space in it, say) is compared unescaped.
			if !bytes.HasPrefix(field, []byte(dir)) && !bytes.Contains(field, []byte{'\\'}) {
				continue
			}
			if p := unescape(string(field)); isAtOrBelow(p, dir) {
				points = append(points, p)
				break
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the mount table: %w", err)
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	return points, nil
}

// IsMountPoint reports whether path is itself a mount point: by its statx,
// or on a kernel that cannot tell, by the mount table. A path that does
// not exist is none.
func IsMountPoint(path string) (bool, error) {
	root, ok, err := isMountRoot(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("is %s a mount point: %w", path, err)
	}
	if ok {
		return root, nil
	}
	points, err := Under(path)
	if err != nil {
		return false, err
	}
	path = strings.TrimSuffix(path, "/")
	for _, p := range points {
		if p == path {
			return true, nil
		}
	}
	return false, nil
}

// mountsOn separates a mountstats line's device from its mount point.
var mountsOn = []byte(" mounted on ")

// mountPointField is the mount point (escaped) of a mountstats line,
// "device DEV mounted on POINT with fstype TYPE ...", without copying it.
// The device is escaped, so the first " mounted on " ends it; the
// statistics lines some file systems add (NFS) have none.
func mountPointField(line []byte) ([]byte, bool) {
	i := bytes.Index(line, mountsOn)
	if i < 0 {
		return nil, false
	}
	line = line[i+len(mountsOn):]
	if i := bytes.IndexByte(line, ' '); i >= 0 {
		line = line[:i]
	}
	return line, len(line) > 0
}

// unescape decodes the octal escapes (\040 for a space) of the mount table.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + byte(c-'0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// BindFD bind-mounts the file or directory that the open descriptor fd
// refers to on target, through its /proc/self/fd link. The caller opened fd
// without following symlinks, so what gets mounted is exactly the object it
// checked, whatever has been renamed or replaced by a symlink since. fd may
// be an O_PATH descriptor. The mount is not recursive.
func BindFD(fd int, target string) error {
	if fd < 0 {
		return fmt.Errorf("bind fd %d on %s: %w", fd, target, unix.EBADF)
	}
	return Bind("/proc/self/fd/"+strconv.Itoa(fd), target)
}
