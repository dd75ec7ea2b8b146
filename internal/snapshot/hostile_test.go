package snapshot

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
)

// TestHostileLayersRefused unpacks layers that try to write outside the
// snapshot and checks each is refused, nothing is written outside, and no
// half-unpacked directory is kept.
func TestHostileLayersRefused(t *testing.T) {
	requiresRoot(t) // lchown to the headers' owners
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	// From <base>/store/snapshots/tmp-x/fs/<entry>, four ".." reach <base>.
	const up = "../../../../outside"
	tests := []struct {
		name    string
		entries []entry
	}{
		{"dotdot file", []entry{file("../../../../outside/passwd", "x", 0o644)}},
		{"dotdot deep", []entry{file("a/../../../../../outside/passwd", "x", 0o644)}},
		{"absolute file", []entry{file(filepath.Join(outside, "abs"), "x", 0o644)}},
		{"absolute dir", []entry{dir("/etc", 0o755)}},
		{"symlink escape then write through", []entry{
			symlink("evil", up),
			file("evil/pwned", "x", 0o644),
		}},
		{"symlink escape then mkdir through", []entry{
			symlink("evil", up),
			dir("evil/newdir", 0o755),
		}},
		{"absolute symlink then file inside", []entry{
			symlink("abs", outside),
			file("abs/pwned", "x", 0o644),
		}},
		{"absolute symlink to root then file inside", []entry{
			symlink("rootlink", "/"),
			file("rootlink"+outside+"/pwned", "x", 0o644),
		}},
		{"nested symlink then write", []entry{
			dir("a", 0o755),
			symlink("a/b", "../"+up),
			file("a/b/c/pwned", "x", 0o644),
		}},
		{"hardlink dotdot", []entry{hardlink("hl", up+"/secret")}},
		{"hardlink absolute", []entry{hardlink("hl", filepath.Join(outside, "secret"))}},
		{"hardlink through symlink", []entry{
			symlink("evil", up),
			hardlink("hl", "evil/secret"),
		}},
		{"hardlink to missing", []entry{hardlink("hl", "nothere")}},
		{"whiteout through symlink", []entry{
			symlink("evil", up),
			file("evil/.wh.secret", "", 0o644),
		}},
		{"opaque through symlink", []entry{
			symlink("evil", up),
			file("evil/.wh..wh..opq", "", 0o644),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.RemoveAll(outside); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600); err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(base, "store")
			t.Cleanup(func() { os.RemoveAll(root) })
			s, err := Open(root, Options{})
			if err != nil {
				t.Fatal(err)
			}
			layer, diffID := makeTar(t, tc.entries...)
			_, err = s.Unpack(context.Background(), "", diffID, bytes.NewReader(layer), 0)
			t.Logf("error: %v", err)
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("Unpack error = %v, want invalid argument", err)
			}
			if got := listNames(t, outside); len(got) != 1 || got[0] != "secret" {
				t.Errorf("outside dir changed: %v", got)
			}
			if left := listNames(t, filepath.Join(root, "snapshots")); len(left) != 0 {
				t.Errorf("snapshot dir not cleaned: %v", left)
			}
			if s.Exists(diffID) {
				t.Error("refused layer exists as a snapshot")
			}
		})
	}
}

func TestUnsupportedEntryType(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	layer, diffID := makeTar(t, entry{hdr: tar.Header{Typeflag: 'V', Name: "vol", ModTime: epoch}})
	_, err = s.Unpack(context.Background(), "", diffID, bytes.NewReader(layer), 0)
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("Unpack error = %v, want invalid argument", err)
	}
}
