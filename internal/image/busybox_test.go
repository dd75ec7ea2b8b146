package image

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crib-dev/crib/internal/testutil"
)

// TestLoadBusyboxScriptImage builds the busybox test image with
// scripts/build-busybox-image.sh and loads it.
func TestLoadBusyboxScriptImage(t *testing.T) {
	requiresRoot(t)
	if err := exec.Command("dpkg", "-s", "busybox-static").Run(); err != nil {
		t.Skip("busybox-static is not installed")
	}
	// Where Go is missing (the test VM), the harness hands in what the
	// script built on the host.
	out := os.Getenv(testutil.BusyboxTarballEnv)
	if out == "" {
		out = filepath.Join(t.TempDir(), "busybox.tar")
		cmd := exec.Command("bash", "../../scripts/build-busybox-image.sh", out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build image: %v\n%s", err, b)
		}
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := openStore(t, t.TempDir(), Config{})
	imgs, err := s.Load(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 1 {
		t.Fatalf("loaded %d images, want 1", len(imgs))
	}
	img, err := s.Resolve("busybox")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"docker.io/library/busybox:latest"}, img.RepoTags); diff != "" {
		t.Errorf("RepoTags (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sh"}, img.Config.Config.Cmd); diff != "" {
		t.Errorf("Cmd (-want +got):\n%s", diff)
	}
	dirs, err := s.LowerDirs(img)
	if err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(dirs[0], "bin", "sh")); err != nil || target != "busybox" {
		t.Errorf("bin/sh -> %q, %v", target, err)
	}
	st, err := os.Stat(filepath.Join(dirs[0], "tmp"))
	if err != nil || st.Mode()&os.ModeSticky == 0 {
		t.Errorf("tmp not sticky: %v %v", st, err)
	}
	if m := readTop(t, s, img, "etc/passwd"); !strings.Contains(m, "www:x:33:33:") {
		t.Errorf("etc/passwd = %q", m)
	}
	sh := exec.Command(filepath.Join(dirs[0], "bin", "sh"), "-c", "echo ok")
	if b, err := sh.Output(); err != nil || string(b) != "ok\n" {
		t.Errorf("unpacked busybox sh: %q, %v", b, err)
	}
}
