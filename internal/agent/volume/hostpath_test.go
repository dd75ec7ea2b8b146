package volume

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

func TestHostPathTypes(t *testing.T) {
	requireRoot(t) // mknod for the block device
	dir := t.TempDir()
	paths := map[string]string{
		"dir":     filepath.Join(dir, "dir"),
		"file":    filepath.Join(dir, "file"),
		"socket":  filepath.Join(dir, "sock"),
		"block":   filepath.Join(dir, "block"),
		"linkdir": filepath.Join(dir, "linkdir"),
		"missing": filepath.Join(dir, "missing"),
	}
	if err := os.Mkdir(paths["dir"], 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths["file"], nil, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", paths["socket"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := unix.Mknod(paths["block"], unix.S_IFBLK|0o600, int(unix.Mkdev(7, 200))); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(paths["dir"], paths["linkdir"]); err != nil {
		t.Fatal(err)
	}
	const chardev = "/dev/null"

	tests := []struct {
		name  string
		path  string
		typ   *corev1.HostPathType
		class error // nil: success
	}{
		{"unset type, missing path", paths["missing"], nil, nil},
		{"empty type, missing path", paths["missing"], ptr(corev1.HostPathUnset), nil},
		{"Directory", paths["dir"], ptr(corev1.HostPathDirectory), nil},
		{"Directory through a symlink", paths["linkdir"], ptr(corev1.HostPathDirectory), nil},
		{"Directory on a file", paths["file"], ptr(corev1.HostPathDirectory), errdefs.ErrInvalidArgument},
		{"Directory missing", paths["missing"], ptr(corev1.HostPathDirectory), errdefs.ErrNotFound},
		{"DirectoryOrCreate existing", paths["dir"], ptr(corev1.HostPathDirectoryOrCreate), nil},
		{"DirectoryOrCreate on a file", paths["file"], ptr(corev1.HostPathDirectoryOrCreate), errdefs.ErrInvalidArgument},
		{"File", paths["file"], ptr(corev1.HostPathFile), nil},
		{"File on a directory", paths["dir"], ptr(corev1.HostPathFile), errdefs.ErrInvalidArgument},
		{"File missing", paths["missing"], ptr(corev1.HostPathFile), errdefs.ErrNotFound},
		{"FileOrCreate existing", paths["file"], ptr(corev1.HostPathFileOrCreate), nil},
		{"FileOrCreate on a directory", paths["dir"], ptr(corev1.HostPathFileOrCreate), errdefs.ErrInvalidArgument},
		{"FileOrCreate without a parent", filepath.Join(dir, "nope", "f"), ptr(corev1.HostPathFileOrCreate), errdefs.ErrNotFound},
		{"Socket", paths["socket"], ptr(corev1.HostPathSocket), nil},
		{"Socket on a file", paths["file"], ptr(corev1.HostPathSocket), errdefs.ErrInvalidArgument},
		{"CharDevice", chardev, ptr(corev1.HostPathCharDev), nil},
		{"CharDevice on a block device", paths["block"], ptr(corev1.HostPathCharDev), errdefs.ErrInvalidArgument},
		{"BlockDevice", paths["block"], ptr(corev1.HostPathBlockDev), nil},
		{"BlockDevice on a char device", chardev, ptr(corev1.HostPathBlockDev), errdefs.ErrInvalidArgument},
		{"BlockDevice missing", paths["missing"], ptr(corev1.HostPathBlockDev), errdefs.ErrNotFound},
		{"unknown type", paths["dir"], ptr(corev1.HostPathType("Pipe")), errdefs.ErrInvalidArgument},
		{"relative path", "relative/dir", nil, errdefs.ErrInvalidArgument},
		{"path with ..", paths["dir"] + "/../dir", nil, errdefs.ErrInvalidArgument},
	}
	m, _ := newTestManager(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("uid-hp", vol("host", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: tc.path, Type: tc.typ}}))
			removeAtCleanup(t, m, "uid-hp")
			got, err := m.Prepare(context.Background(), pod, nil, nil)
			if tc.class == nil {
				if err != nil {
					t.Fatalf("Prepare: %v", err)
				}
				if got["host"] != tc.path {
					t.Errorf("path %q, want the host path %q", got["host"], tc.path)
				}
				return
			}
			mentions := []string{`"host"`}
			if tc.typ != nil && *tc.typ != "" {
				mentions = append(mentions, string(*tc.typ))
			}
			wantErrClass(t, err, tc.class, mentions...)
		})
	}
	if _, err := os.Stat(paths["missing"]); !os.IsNotExist(err) {
		t.Errorf("a check created %s: %v", paths["missing"], err)
	}
}

func TestHostPathCreates(t *testing.T) {
	m, _ := newTestManager(t)
	dir := t.TempDir()
	old := unix.Umask(0o077)
	t.Cleanup(func() { unix.Umask(old) })
	newDir := filepath.Join(dir, "a", "b", "c")
	newFile := filepath.Join(dir, "f")
	pod := testPod("uid-hpc",
		vol("d", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: newDir, Type: ptr(corev1.HostPathDirectoryOrCreate)}}),
		vol("f", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: newFile, Type: ptr(corev1.HostPathFileOrCreate)}}),
	)
	removeAtCleanup(t, m, "uid-hpc")
	for range 2 {
		if _, err := m.Prepare(context.Background(), pod, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(newDir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Errorf("DirectoryOrCreate made %v (err %v), want a 0755 directory", fi, err)
	}
	if fi, err := os.Stat(newFile); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 || fi.Size() != 0 {
		t.Errorf("FileOrCreate made %v (err %v), want an empty 0644 file", fi, err)
	}
}
