package checkpoint

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/checkpoint/archive"
	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/ociruntime"
)

// readTar returns a tar's regular files by name, and its names in order.
func readTar(t *testing.T, r io.Reader) (map[string]string, []string) {
	t.Helper()
	files := map[string]string{}
	var names []string
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files, names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		if hdr.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[hdr.Name] = string(data)
		}
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// overlayLayers makes, in real directories, what overlayfs leaves in a
// container's upper dir over one image layer: a new file, a hard link, a
// whiteout (a 0/0 character device), an opaque directory and a mount
// point's stub. Whiteouts and trusted xattrs need root.
func overlayLayers(t *testing.T) (upper, lower string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("whiteouts and trusted.overlay xattrs need root")
	}
	dir := t.TempDir()
	upper, lower = filepath.Join(dir, "upper"), filepath.Join(dir, "lower")
	write(t, filepath.Join(lower, "etc", "motd"), "hi")
	write(t, filepath.Join(lower, "etc", "group"), "root:x:0:")
	write(t, filepath.Join(lower, "data", "old"), "old")
	write(t, filepath.Join(lower, "data", "kept"), "image's")
	write(t, filepath.Join(upper, "written.txt"), "kept")
	if err := os.Link(filepath.Join(upper, "written.txt"), filepath.Join(upper, "linked.txt")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(filepath.Join(upper, "etc", "motd"), unix.S_IFCHR, 0); err != nil {
		if os.MkdirAll(filepath.Join(upper, "etc"), 0o755) != nil || unix.Mknod(filepath.Join(upper, "etc", "motd"), unix.S_IFCHR, 0) != nil {
			t.Fatalf("mknod a whiteout: %v", err)
		}
	}
	write(t, filepath.Join(upper, "data", "kept"), "container's")
	if err := unix.Setxattr(filepath.Join(upper, "data"), "trusted.overlay.opaque", []byte("y"), 0); err != nil {
		t.Skipf("no trusted xattrs on %s: %v", upper, err)
	}
	write(t, filepath.Join(upper, "etc", "hostname"), "") // runc's stub of a bind mount
	return upper, lower
}

func TestWriteRootfsDiff(t *testing.T) {
	upper, lower := overlayLayers(t)
	var buf bytes.Buffer
	deleted, err := writeRootfsDiff(context.Background(), &buf, upper, []string{lower}, map[string]bool{"/etc/hostname": true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/data/old", "/etc/motd"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted = %v, want %v", deleted, want)
	}
	files, names := readTar(t, &buf)
	// Walked in lexical order, linked.txt comes first: it carries the
	// content, written.txt is its hard link.
	if files["linked.txt"] != "kept" || files["data/kept"] != "container's" {
		t.Errorf("tar files = %v, want linked.txt and data/kept with the container's content", files)
	}
	for _, n := range names {
		switch n {
		case "etc/hostname", "etc/motd":
			t.Errorf("the tar holds %s (a mount point's stub or a whiteout): %v", n, names)
		}
	}
	if !slices.Contains(names, "written.txt") || !slices.Contains(names, "data/") {
		t.Errorf("tar names = %v, want written.txt (a hard link) and data/", names)
	}
}

func TestWriteArchive(t *testing.T) {
	upper, lower := overlayLayers(t)
	work := t.TempDir()
	write(t, filepath.Join(work, archive.CheckpointDirectory, "inventory.img"), "criu")
	write(t, filepath.Join(work, archive.DumpLogFile), "dumped")
	write(t, filepath.Join(work, intentFile), "{}")
	logPath := filepath.Join(t.TempDir(), "c.log")
	write(t, logPath, "2026-01-01T00:00:00Z stdout F up\n")
	spec, _ := json.Marshal(map[string]any{
		"ociVersion":  "1.2.0",
		"annotations": map[string]string{"io.kubernetes.cri.container-name": "counter", "io.kubernetes.cri.sandbox-name": "pod", "io.kubernetes.cri.sandbox-namespace": "ns"},
		"mounts":      []map[string]string{{"destination": "/etc/hostname", "source": "/x", "type": "bind"}},
	})
	live := container.Live{
		Container: container.Container{
			ID:        strings.Repeat("ab", 32),
			Config:    &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "counter"}, Image: &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:latest"}},
			ImageRef:  "docker.io/library/busybox@sha256:" + strings.Repeat("0", 64),
			CreatedAt: time.Unix(1700000000, 0),
			Pid:       42,
			LogPath:   logPath,
		},
		Runtime:       &ociruntime.Runtime{Binary: "/usr/bin/runc"},
		WritableLayer: upper,
		LowerDirs:     []string{lower},
	}
	if err := writeDiff(context.Background(), work, live, spec); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "c.tar")
	req := Request{ContainerID: live.Container.ID, Location: out, Status: []byte(`{"id":"x"}`)}
	if err := writeArchive(context.Background(), out, work, live, req, spec, true); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files, names := readTar(t, f)
	for _, want := range []string{archive.ConfigDumpFile, archive.SpecDumpFile, archive.StatusDumpFile, archive.StatusFile, archive.RootFsDiffTar, archive.DeletedFilesFile, archive.DumpLogFile, archive.ContainerLogFile, "checkpoint/inventory.img"} {
		if _, ok := files[want]; !ok {
			t.Errorf("the archive has no %s: %v", want, names)
		}
	}
	if _, ok := files[intentFile]; ok {
		t.Errorf("the archive holds the intent record")
	}
	var cfg archive.ContainerConfig
	if err := json.Unmarshal([]byte(files[archive.ConfigDumpFile]), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.ID != live.Container.ID || cfg.Name != "counter" || cfg.OCIRuntime != "runc" || cfg.RootfsImageName != "docker.io/library/busybox:latest" || !cfg.CreatedTime.Equal(live.Container.CreatedAt) {
		t.Errorf("config.dump = %+v", cfg)
	}
	var deleted []string
	if err := json.Unmarshal([]byte(files[archive.DeletedFilesFile]), &deleted); err != nil || !slices.Contains(deleted, "/etc/motd") {
		t.Errorf("deleted.files = %s (%v), want /etc/motd in it", files[archive.DeletedFilesFile], err)
	}

	// checkpointctl's own reading of the metadata (show needs no CRIU
	// image but the checkpoint directory).
	bin := os.Getenv("CRIB_CHECKPOINTCTL")
	if bin == "" {
		bin, _ = exec.LookPath("checkpointctl")
	}
	if bin == "" {
		t.Log("SKIP checkpointctl show: no checkpointctl ($CRIB_CHECKPOINTCTL or in PATH)")
		return
	}
	shown, err := exec.Command(bin, "show", out).CombinedOutput()
	if err != nil {
		t.Fatalf("checkpointctl show: %v\n%s", err, shown)
	}
	for _, want := range []string{"counter", "containerd", "busybox", "runc", "abababababab"} {
		if !strings.Contains(string(shown), want) {
			t.Errorf("checkpointctl show does not show %q:\n%s", want, shown)
		}
	}
	t.Logf("checkpointctl show:\n%s", shown)
}
