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

// FuzzExtract unpacks layers the fuzzer writes entry by entry (see
// fuzzLayer): names and link targets are what a hostile layer plays
// with, so the fuzzer gets them directly rather than through tar's
// checksummed headers. extract must never panic, and whatever it accepts
// or refuses, nothing outside the root is written, linked or created.
func FuzzExtract(f *testing.F) {
	for _, seed := range []string{
		"detc\nfetc/passwd|root:x:0:0\nlbin|usr/bin\nhetc/pw|etc/passwd",
		"f../outside/secret|x",
		"levil|../outside\nfevil/pwned|x",
		"labs|/\nfabs/outside/secret|x",
		"hhl|../outside/secret",
		"dd\nfd/.wh.gone|\nfd/.wh..wh..opq|",
		"fa|x\nfa|y\nda\npa",
		"da\nla/b|../../outside\nfa/b/c|x\nha/h|a/b/secret",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		layer := fuzzLayer(data)
		if layer == nil {
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
		_ = extract(context.Background(), root, tar.NewReader(bytes.NewReader(layer)), unbounded(t, root))

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

// fuzzLayer turns the fuzzer's bytes into a layer tar: one entry a line,
// "<kind><name>|<link target or body>", kind d (dir), f (file), l
// (symlink), h (hard link) or p (fifo). It returns nil when tar refuses
// an entry.
func fuzzLayer(data []byte) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		name, second, _ := bytes.Cut(line[1:], []byte("|"))
		h := tar.Header{Name: string(name), ModTime: epoch, Mode: 0o644, Typeflag: tar.TypeReg}
		switch line[0] {
		case 'd':
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		case 'l':
			h.Typeflag, h.Linkname = tar.TypeSymlink, string(second)
		case 'h':
			h.Typeflag, h.Linkname = tar.TypeLink, string(second)
		case 'p':
			h.Typeflag = tar.TypeFifo
		default:
			h.Size = int64(len(second))
		}
		if tw.WriteHeader(&h) != nil {
			return nil
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(second); err != nil {
				return nil
			}
		}
	}
	if tw.Close() != nil {
		return nil
	}
	return buf.Bytes()
}

func fuzzNlink(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}

// TestFuzzLayer checks the fuzzer's encoding: a plain layer written in it
// extracts to what it says.
func TestFuzzLayer(t *testing.T) {
	requiresRoot(t) // lchown to the headers' owners
	layer := fuzzLayer([]byte("detc\nfetc/passwd|root\nlbin|usr/bin\nhetc/pw|etc/passwd\npfifo"))
	if layer == nil {
		t.Fatal("fuzzLayer refused a plain layer")
	}
	root := t.TempDir()
	if err := extract(context.Background(), root, tar.NewReader(bytes.NewReader(layer)), unbounded(t, root)); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/pw")); err != nil || string(b) != "root" {
		t.Errorf("etc/pw = %q, %v; want the hard link's content", b, err)
	}
	if l, err := os.Readlink(filepath.Join(root, "bin")); err != nil || l != "usr/bin" {
		t.Errorf("bin -> %q, %v", l, err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "fifo")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("fifo: %v, %v", fi, err)
	}
}

// unbounded is a guard with no limits: the fuzzer looks for escapes and
// crashes, which the limits' own tests do not cover.
func unbounded(t *testing.T, dir string) *guard {
	t.Helper()
	g, err := newGuard(Limits{}, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
