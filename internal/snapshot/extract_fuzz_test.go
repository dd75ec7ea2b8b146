package snapshot

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// maxFuzzEntry keeps the fuzzer's layers small: a header may claim any
// size (sparse files too), and the limits on a layer's total are
// Unpack's, not extract's.
const maxFuzzEntry = 1 << 20

// FuzzExtract unpacks arbitrary tar streams: extract must never panic,
// and whatever it accepts or refuses, nothing outside the root is
// written, linked or created.
func FuzzExtract(f *testing.F) {
	seeds := [][]entry{
		{dir("etc", 0o755), file("etc/passwd", "root:x:0:0::/root:/bin/sh\n", 0o644), symlink("bin", "usr/bin"), hardlink("etc/pw", "etc/passwd")},
		{file("../outside/secret", "x", 0o644)},
		{symlink("evil", "../outside"), file("evil/pwned", "x", 0o644)},
		{hardlink("hl", "../outside/secret")},
		{dir("d", 0o755), file("d/.wh.gone", "", 0o644), file("d/.wh..wh..opq", "", 0o644)},
		{file("a", "x", 0o4755), file("a", "y", 0o644), dir("a", 0o700)},
	}
	for _, s := range seeds {
		f.Add(tarOf(f, s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !smallEntries(data) {
			return
		}
		base := t.TempDir()
		root := filepath.Join(base, "root")
		outside := filepath.Join(base, "outside")
		secret := filepath.Join(outside, "secret")
		for _, d := range []string{root, outside} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		_ = extract(context.Background(), root, tar.NewReader(bytes.NewReader(data)))

		names, err := os.ReadDir(base)
		if err != nil || len(names) != 2 {
			t.Fatalf("the root's parent holds %v (%v), want root and outside only", names, err)
		}
		inOutside, err := os.ReadDir(outside)
		if err != nil || len(inOutside) != 1 {
			t.Fatalf("outside holds %v (%v), want the secret only", inOutside, err)
		}
		fi, err := os.Lstat(secret)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 || fuzzNlink(fi) != 1 {
			t.Fatalf("the secret outside changed: %v, %v", fi, err)
		}
		if b, err := os.ReadFile(secret); err != nil || string(b) != "secret" {
			t.Fatalf("the secret outside reads %q, %v", b, err)
		}
	})
}

// tarOf is makeTar for a fuzz seed.
func tarOf(f *testing.F, entries []entry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		if err := tw.WriteHeader(&h); err != nil {
			f.Fatalf("write header %s: %v", h.Name, err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			f.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		f.Fatal(err)
	}
	return buf.Bytes()
}

// smallEntries reports whether every entry of data is within
// maxFuzzEntry, reading as far as the tar reader can.
func smallEntries(data []byte) bool {
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err != nil { // the end, or as far as extract can read too
			return true
		}
		if hdr.Size > maxFuzzEntry {
			return false
		}
	}
}

func fuzzNlink(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}
