package snapshot

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	"golang.org/x/sys/unix"
)

// unpackWith unpacks layer (blob bytes) into a fresh store with limits and
// checks that a refusal leaves nothing in the snapshot dir.
func unpackWith(t *testing.T, root string, limits Limits, layer []byte, diffID digest.Digest) error {
	t.Helper()
	s, err := Open(root, Options{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Unpack(context.Background(), "", diffID, bytes.NewReader(layer), int64(len(layer)))
	if err != nil {
		if left := listNames(t, filepath.Join(root, "snapshots")); len(left) != 0 {
			t.Errorf("refused layer left %v in the snapshot dir", left)
		}
	}
	return err
}

// wantRefused checks that err is a *LimitError of class whose message
// names what to change.
func wantRefused(t *testing.T, err error, class error, mention string) {
	t.Helper()
	var le *LimitError
	if !errors.Is(err, class) || !errors.As(err, &le) {
		t.Fatalf("Unpack error = %v, want a *LimitError of class %v", err, class)
	}
	if !strings.Contains(err.Error(), mention) {
		t.Errorf("error %q does not mention %q", err, mention)
	}
	t.Logf("refused: %v", err)
}

func zeros(n int) string { return string(make([]byte, n)) }

func TestExpansionRatio(t *testing.T) {
	requiresRoot(t)
	raw, diffID := makeTar(t, file("zeros", zeros(4<<20), 0o644))
	blob := gzipBytes(t, raw) // a few KiB
	tests := []struct {
		name    string
		limits  Limits
		refused string // what the error names; "" when the layer fits
	}{
		{"ratio over the floor", Limits{ExpansionRatio: 10, ExpansionFloor: 1 << 20}, "expansion_ratio"},
		{"generous ratio", Limits{ExpansionRatio: 10_000}, ""},
		{"floor lets a small blob grow", Limits{ExpansionRatio: 1, ExpansionFloor: 8 << 20}, ""},
		{"absolute cap under the ratio", Limits{ExpansionRatio: 10_000, MaxSize: 1 << 20}, "max_layer_size"},
		{"absolute cap alone", Limits{MaxSize: 1 << 20}, "max_layer_size"},
		{"none", Limits{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := unpackWith(t, t.TempDir(), tc.limits, blob, diffID)
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("Unpack: %v", err)
				}
				return
			}
			wantRefused(t, err, errdefs.ErrResourceExhausted, tc.refused)
		})
	}
}

// TestExpansionRefusedAtHeader gives a layer whose one entry declares more
// than the bound and then ends: the refusal comes from the header, before
// any data is read or written (a truncated stream would otherwise fail
// with an unexpected EOF).
func TestExpansionRefusedAtHeader(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "huge", Mode: 0o644, Size: 20 << 30, ModTime: epoch}); err != nil {
		t.Fatal(err)
	}
	layer := gzipBytes(t, buf.Bytes())
	err := unpackWith(t, t.TempDir(), Limits{ExpansionRatio: 100, ExpansionFloor: 1 << 20}, layer, digest.FromString("never checked"))
	wantRefused(t, err, errdefs.ErrResourceExhausted, "expansion_ratio")
}

// TestDeclaredSizesCannotWrap gives a second entry whose size would wrap
// the sum of the sizes around past the largest int64.
func TestDeclaredSizesCannotWrap(t *testing.T) {
	requiresRoot(t) // "one" is chowned to its header's owner
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []tar.Header{
		{Typeflag: tar.TypeReg, Name: "one", Mode: 0o644, Size: 1, ModTime: epoch},
		{Typeflag: tar.TypeReg, Name: "huge", Mode: 0o644, Size: math.MaxInt64, ModTime: epoch},
	} {
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Size == 1 {
			if _, err := tw.Write([]byte("1")); err != nil {
				t.Fatal(err)
			}
		}
	}
	err := unpackWith(t, t.TempDir(), Limits{MaxSize: 1 << 20}, buf.Bytes(), digest.FromString("never checked"))
	wantRefused(t, err, errdefs.ErrResourceExhausted, "max_layer_size")
}

// TestNegativeBlobSize: a manifest's negative size counts as 0, so only
// the floor is allowed (here none).
func TestNegativeBlobSize(t *testing.T) {
	raw, diffID := makeTar(t, file("f", "data", 0o644))
	s, err := Open(t.TempDir(), Options{Limits: Limits{ExpansionRatio: 100}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Unpack(context.Background(), "", diffID, bytes.NewReader(raw), -1)
	wantRefused(t, err, errdefs.ErrResourceExhausted, "expansion_ratio")
}

// TestSparseEntryCountsItsSize unpacks a GNU sparse entry (PAX format 1.0)
// whose data is a few bytes but whose size is a gigabyte: the extractor
// would write the holes as zeros, so the entry's size, not its bytes in
// the stream, counts against the bound.
func TestSparseEntryCountsItsSize(t *testing.T) {
	const realSize = 1 << 30
	var raw bytes.Buffer
	pax := paxRecords(map[string]string{
		"GNU.sparse.major":    "1",
		"GNU.sparse.minor":    "0",
		"GNU.sparse.name":     "sparse",
		"GNU.sparse.realsize": "1073741824",
	})
	raw.Write(ustarHeader(t, "PaxHeaders/sparse", 'x', int64(len(pax))))
	raw.Write(padBlock([]byte(pax)))
	// The data: the sparse map (one 4-byte extent at the end), then it.
	sparseMap := padBlock([]byte("1\n1073741820\n4\n"))
	data := append(sparseMap, padBlock([]byte("tail"))...)
	raw.Write(ustarHeader(t, "GNUSparseFile.0/sparse", tar.TypeReg, int64(len(sparseMap))+4))
	raw.Write(data)
	raw.Write(make([]byte, 1024))

	// archive/tar reads it as one entry of realSize bytes.
	tr := tar.NewReader(bytes.NewReader(raw.Bytes()))
	hdr, err := tr.Next()
	if err != nil || hdr.Size != realSize {
		t.Fatalf("the crafted entry reads as %+v, %v; want a sparse entry of %d bytes", hdr, err, realSize)
	}
	blob := gzipBytes(t, raw.Bytes())
	err = unpackWith(t, t.TempDir(), Limits{ExpansionRatio: 100, ExpansionFloor: 1 << 20}, blob, digest.FromBytes(raw.Bytes()))
	wantRefused(t, err, errdefs.ErrResourceExhausted, "expansion_ratio")
}

func TestMaxEntries(t *testing.T) {
	requiresRoot(t)
	var entries []entry
	for i := range 10 {
		entries = append(entries, file("f"+strings.Repeat("x", i), "", 0o644))
	}
	raw, diffID := makeTar(t, entries...)
	if err := unpackWith(t, t.TempDir(), Limits{MaxEntries: 10}, raw, diffID); err != nil {
		t.Fatalf("10 entries with a bound of 10: %v", err)
	}
	err := unpackWith(t, t.TempDir(), Limits{MaxEntries: 9}, raw, diffID)
	wantRefused(t, err, errdefs.ErrResourceExhausted, "max_entries")
}

func TestNameLengths(t *testing.T) {
	requiresRoot(t)
	longest := strings.Repeat("n", maxNameLen)
	// Components of 255 bytes joined to a path of exactly PATH_MAX allowed.
	var parts []string
	for n := 0; n+maxNameLen+1 <= maxPathLen; n += maxNameLen + 1 {
		parts = append(parts, longest)
	}
	deep := strings.Join(parts, "/")
	deep += "/" + strings.Repeat("d", maxPathLen-len(deep)-1)
	if len(deep) != maxPathLen {
		t.Fatalf("test path is %d bytes", len(deep))
	}
	raw, diffID := makeTar(t, file(longest, "x", 0o644), symlink("deep-link", deep))
	if err := unpackWith(t, t.TempDir(), Limits{}, raw, diffID); err != nil {
		t.Fatalf("names at the limits: %v", err)
	}

	tests := []struct {
		name    string
		entries []entry
		mention string
	}{
		{"component over NAME_MAX", []entry{file(longest+"x", "x", 0o644)}, "NAME_MAX"},
		{"path over PATH_MAX", []entry{file(deep+"x", "x", 0o644)}, "PATH_MAX"},
		{"megabyte name", []entry{file(strings.Repeat("a/", 256<<10)+"f", "x", 0o644)}, "PATH_MAX"},
		{"symlink target over PATH_MAX", []entry{symlink("l", deep+"x")}, "PATH_MAX"},
		{"hard link target component", []entry{file("f", "x", 0o644), hardlink("l", longest+"x")}, "NAME_MAX"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, diffID := makeTar(t, tc.entries...)
			err := unpackWith(t, t.TempDir(), Limits{}, raw, diffID)
			wantRefused(t, err, errdefs.ErrInvalidArgument, tc.mention)
			if len(err.Error()) > 1024 {
				t.Errorf("the error quotes the whole name: %d bytes", len(err.Error()))
			}
		})
	}
}

// TestHardLinks checks what a tar's links can do: a hard link names an
// entry unpacked before it in the same layer, so links of links share one
// inode and cannot loop; one that names itself, a later entry or a
// directory is refused. Symlinks are stored, never followed (see
// TestHostileLayersRefused).
func TestHardLinks(t *testing.T) {
	requiresRoot(t)
	root := t.TempDir()
	raw, diffID := makeTar(t, file("a", "data", 0o644), hardlink("b", "a"), hardlink("c", "b"))
	s, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Unpack(context.Background(), "", diffID, bytes.NewReader(raw), 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Path(info.ChainID)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(p, "c"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Nlink != 3 {
		t.Errorf("a, b and c: %d links to the inode, want 3", st.Nlink)
	}

	for _, tc := range []struct {
		name    string
		entries []entry
	}{
		{"to itself", []entry{hardlink("self", "self")}},
		{"to a later entry", []entry{hardlink("early", "late"), file("late", "x", 0o644)}},
		{"to a directory", []entry{dir("d", 0o755), hardlink("l", "d")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, diffID := makeTar(t, tc.entries...)
			err := unpackWith(t, t.TempDir(), Limits{}, raw, diffID)
			if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "hard link") {
				t.Fatalf("Unpack error = %v, want an invalid hard link", err)
			}
		})
	}
}

// TestFreeSpaceReserve unpacks into a small tmpfs: a layer that would eat
// into the reserve is refused before it does, and a reserve larger than
// what is free refuses any layer at once.
func TestFreeSpaceReserve(t *testing.T) {
	requiresRoot(t)
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=16m"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	var entries []entry
	for i := range 12 {
		entries = append(entries, file("f"+strings.Repeat("x", i), zeros(1<<20), 0o644))
	}
	raw, diffID := makeTar(t, entries...)
	blob := gzipBytes(t, raw)

	err := unpackWith(t, filepath.Join(mnt, "a"), Limits{FreeSpaceReserve: 8 << 20}, blob, diffID)
	wantRefused(t, err, errdefs.ErrResourceExhausted, "free_space_reserve")
	err = unpackWith(t, filepath.Join(mnt, "b"), Limits{FreeSpaceReserve: 1 << 40}, blob, diffID)
	wantRefused(t, err, errdefs.ErrResourceExhausted, "free_space_reserve")
	// With room to spare the same layer fits.
	if err := unpackWith(t, filepath.Join(mnt, "c"), Limits{FreeSpaceReserve: 1 << 20}, blob, diffID); err != nil {
		t.Fatalf("12 MiB into 16 MiB keeping 1 MiB free: %v", err)
	}
}

// ustarHeader is one 512-byte ustar header block, for entries
// archive/tar's writer will not make (a PAX header with GNU.sparse
// records).
func ustarHeader(t *testing.T, name string, typ byte, size int64) []byte {
	t.Helper()
	b := make([]byte, 512)
	copy(b[0:100], name)
	copy(b[100:108], "0000644\x00")
	copy(b[108:116], "0000000\x00")
	copy(b[116:124], "0000000\x00")
	copy(b[124:136], octal(size, 11)+"\x00")
	copy(b[136:148], octal(epoch.Unix(), 11)+"\x00")
	b[156] = typ
	copy(b[257:265], "ustar\x0000")
	copy(b[148:156], "        ")
	var sum int64
	for _, c := range b {
		sum += int64(c)
	}
	copy(b[148:156], octal(sum, 6)+"\x00 ")
	return b
}

func octal(v int64, width int) string { return fmt.Sprintf("%0*o", width, v) }

// paxRecords encodes records as "<length> <key>=<value>\n" lines, the
// length counting itself.
func paxRecords(recs map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(recs)) {
		line := " " + k + "=" + recs[k] + "\n"
		size := len(line) + len(strconv.Itoa(len(line)))
		if len(strconv.Itoa(size)) != len(strconv.Itoa(len(line))) {
			size++
		}
		b.WriteString(strconv.Itoa(size) + line)
	}
	return b.String()
}

func padBlock(b []byte) []byte {
	if r := len(b) % 512; r != 0 {
		b = append(b, make([]byte, 512-r)...)
	}
	return b
}
