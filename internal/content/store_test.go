package content

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	"github.com/opencontainers/go-digest"
)

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestIngest(t *testing.T) {
	data := []byte("hello, blob")
	good := digest.FromBytes(data)
	other := digest.FromBytes([]byte("something else"))
	tests := []struct {
		name    string
		digest  digest.Digest
		size    int64
		wantErr error
	}{
		{"match", good, int64(len(data)), nil},
		{"match unknown size", good, -1, nil},
		{"digest mismatch", other, -1, errdefs.ErrInvalidArgument},
		{"size too small", good, 3, errdefs.ErrInvalidArgument},
		{"size too large", good, 100, errdefs.ErrInvalidArgument},
		{"bad digest", digest.Digest("sha256:../../etc"), -1, errdefs.ErrInvalidArgument},
		{"bad algorithm", digest.Digest("md5:d41d8cd98f00b204e9800998ecf8427e"), -1, errdefs.ErrInvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			s, err := Open(root)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Ingest(context.Background(), tc.digest, tc.size, bytes.NewReader(data))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Ingest error = %v, want %v", err, tc.wantErr)
			}
			if len(listDir(t, filepath.Join(root, "ingest"))) != 0 {
				t.Errorf("ingest dir not empty: %v", listDir(t, filepath.Join(root, "ingest")))
			}
			blobs := listDir(t, filepath.Join(root, "blobs", "sha256"))
			if tc.wantErr != nil {
				if len(blobs) != 0 {
					t.Errorf("blobs left after failed ingest: %v", blobs)
				}
				return
			}
			if diff := cmp.Diff([]string{good.Encoded()}, blobs); diff != "" {
				t.Errorf("blobs (-want +got):\n%s", diff)
			}
			got, err := s.ReadAll(good)
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("ReadAll = %q, %v", got, err)
			}
		})
	}
}

func TestMismatchMessageNamesDigests(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := digest.FromString("a")
	_, err = s.Ingest(context.Background(), want, -1, bytes.NewReader([]byte("b")))
	if err == nil {
		t.Fatal("no error")
	}
	for _, d := range []digest.Digest{want, digest.FromString("b")} {
		if !bytes.Contains([]byte(err.Error()), []byte(d.String())) {
			t.Errorf("error %q does not name %s", err, d)
		}
	}
}

func TestIngestExisting(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := digest.FromString("x")
	ctx := context.Background()
	if existed, err := s.Ingest(ctx, d, 1, bytes.NewReader([]byte("x"))); err != nil || existed {
		t.Fatalf("first ingest: existed=%v err=%v", existed, err)
	}
	// The reader is not consulted when the blob exists.
	if existed, err := s.Ingest(ctx, d, 1, errReader{}); err != nil || !existed {
		t.Fatalf("second ingest: existed=%v err=%v", existed, err)
	}
}

func TestCrashLeftoversRemoved(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "ingest"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "ingest", "blob-123"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(root); err != nil {
		t.Fatal(err)
	}
	if left := listDir(t, filepath.Join(root, "ingest")); len(left) != 0 {
		t.Errorf("partial ingest not removed: %v", left)
	}
}

func TestStatDeleteWalk(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, b := digest.FromString("aa"), digest.FromString("bbb")
	for d, v := range map[digest.Digest]string{a: "aa", b: "bbb"} {
		if _, err := s.Ingest(ctx, d, -1, bytes.NewReader([]byte(v))); err != nil {
			t.Fatal(err)
		}
	}
	if info, err := s.Stat(b); err != nil || info.Size != 3 {
		t.Fatalf("Stat = %+v, %v", info, err)
	}
	got := map[digest.Digest]int64{}
	if err := s.Walk(func(i Info) error { got[i.Digest] = i.Size; return nil }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[digest.Digest]int64{a: 2, b: 3}, got); diff != "" {
		t.Errorf("Walk (-want +got):\n%s", diff)
	}
	if err := s.Delete(a); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(a); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := s.Stat(a); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Stat after delete = %v, want not found", err)
	}
	if _, err := s.Open(a); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Open after delete = %v, want not found", err)
	}
}

func TestIngestUnknown(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.IngestUnknown(context.Background(), bytes.NewReader([]byte("layer")))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Info{Digest: digest.FromString("layer"), Size: 5}, info); diff != "" {
		t.Errorf("IngestUnknown (-want +got):\n%s", diff)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("must not be read") }
