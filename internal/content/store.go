package content

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
)

// Store is a directory of blobs addressed by sha256 digest. It is safe for
// concurrent use: ingests of the same digest race harmlessly because the
// final step is an atomic rename of identical bytes.
type Store struct {
	root string
}

// Info describes one stored blob.
type Info struct {
	Digest digest.Digest
	Size   int64
}

// Open prepares the store under root, creating its directories and removing
// partial ingests left by a crash. It does no other I/O.
func Open(root string) (*Store, error) {
	s := &Store{root: root}
	for _, dir := range []string{s.blobDir(), s.ingestDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create content dir: %w", err)
		}
	}
	entries, err := os.ReadDir(s.ingestDir())
	if err != nil {
		return nil, fmt.Errorf("read ingest dir: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(s.ingestDir(), e.Name())); err != nil {
			return nil, fmt.Errorf("remove partial ingest %s: %w", e.Name(), err)
		}
	}
	return s, nil
}

// Root returns the directory the store lives in.
func (s *Store) Root() string { return s.root }

func (s *Store) blobDir() string   { return filepath.Join(s.root, "blobs", "sha256") }
func (s *Store) ingestDir() string { return filepath.Join(s.root, "ingest") }

// Path returns where the blob with digest d lives (whether or not it exists).
func (s *Store) Path(d digest.Digest) (string, error) {
	if err := validate(d); err != nil {
		return "", err
	}
	return filepath.Join(s.blobDir(), d.Encoded()), nil
}

// validate accepts only well-formed sha256 digests, so a digest can never
// name a path outside the blob directory.
func validate(d digest.Digest) error {
	if d.Algorithm() != digest.SHA256 {
		return fmt.Errorf("digest %q: unsupported algorithm: %w", d, errdefs.ErrInvalidArgument)
	}
	if err := d.Validate(); err != nil {
		return fmt.Errorf("digest %q: %v: %w", d, err, errdefs.ErrInvalidArgument)
	}
	return nil
}

// Ingest copies r into the store as the blob with digest expected. When
// size is >= 0 the blob must also be exactly that long. If the blob is
// already present r is not read and Ingest reports existed=true. On any
// error nothing is left in the store.
func (s *Store) Ingest(ctx context.Context, expected digest.Digest, size int64, r io.Reader) (existed bool, err error) {
	target, err := s.Path(expected)
	if err != nil {
		return false, err
	}
	if _, err := os.Stat(target); err == nil {
		return true, nil
	}
	got, n, tmp, err := s.writeTemp(ctx, r, size)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	if size >= 0 && n != size {
		return false, fmt.Errorf("ingest %s: size mismatch: expected %d bytes, got %d: %w", expected, size, n, errdefs.ErrInvalidArgument)
	}
	if got != expected {
		return false, fmt.Errorf("ingest blob: digest mismatch: expected %s, got %s: %w", expected, got, errdefs.ErrInvalidArgument)
	}
	if err := os.Rename(tmp, target); err != nil {
		return false, fmt.Errorf("commit blob %s: %w", expected, err)
	}
	return false, nil
}

// IngestUnknown stores r under the digest of its bytes and returns that
// digest. It is for sources that do not name their blobs (docker-archive
// layer files); it leaves nothing on error.
func (s *Store) IngestUnknown(ctx context.Context, r io.Reader) (Info, error) {
	got, n, tmp, err := s.writeTemp(ctx, r, -1)
	if err != nil {
		return Info{}, err
	}
	defer os.Remove(tmp)
	target := filepath.Join(s.blobDir(), got.Encoded())
	if err := os.Rename(tmp, target); err != nil {
		return Info{}, fmt.Errorf("commit blob %s: %w", got, err)
	}
	return Info{Digest: got, Size: n}, nil
}

// writeTemp copies r to a new file in the ingest dir, hashing as it goes.
// When limit >= 0 it reads at most limit+1 bytes, so a source that is too
// long is detected without reading all of it. The caller removes the file;
// on error it is already gone.
func (s *Store) writeTemp(ctx context.Context, r io.Reader, limit int64) (digest.Digest, int64, string, error) {
	f, err := os.CreateTemp(s.ingestDir(), "blob-")
	if err != nil {
		return "", 0, "", fmt.Errorf("create ingest file: %w", err)
	}
	tmp := f.Name()
	fail := func(err error) (digest.Digest, int64, string, error) {
		f.Close()
		os.Remove(tmp)
		return "", 0, "", err
	}
	if limit >= 0 {
		r = io.LimitReader(r, limit+1)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), ctxReader{ctx: ctx, r: r})
	if err != nil {
		return fail(fmt.Errorf("write blob: %w", err))
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("sync blob: %w", err))
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", 0, "", fmt.Errorf("close blob: %w", err)
	}
	if err := os.Chmod(tmp, 0o444); err != nil {
		os.Remove(tmp)
		return "", 0, "", fmt.Errorf("chmod blob: %w", err)
	}
	return digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(h.Sum(nil))), n, tmp, nil
}

// Open opens the blob for reading. A missing blob is errdefs.ErrNotFound.
func (s *Store) Open(d digest.Digest) (*os.File, error) {
	p, err := s.Path(d)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open blob %s: %w", d, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("open blob %s: %w", d, err)
	}
	return f, nil
}

// ReadAll returns the whole blob; meant for small blobs (configs, manifests).
func (s *Store) ReadAll(d digest.Digest) ([]byte, error) {
	f, err := s.Open(d)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", d, err)
	}
	return b, nil
}

// Stat returns the blob's info. A missing blob is errdefs.ErrNotFound.
func (s *Store) Stat(d digest.Digest) (Info, error) {
	p, err := s.Path(d)
	if err != nil {
		return Info{}, err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("stat blob %s: %w", d, errdefs.ErrNotFound)
	}
	if err != nil {
		return Info{}, fmt.Errorf("stat blob %s: %w", d, err)
	}
	return Info{Digest: d, Size: fi.Size()}, nil
}

// Delete removes the blob. Deleting a missing blob is not an error.
func (s *Store) Delete(d digest.Digest) error {
	p, err := s.Path(d)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete blob %s: %w", d, err)
	}
	return nil
}

// Walk calls fn for every stored blob, in directory order. Files whose
// names are not sha256 hex digests are skipped. An error from fn stops the
// walk and is returned.
func (s *Store) Walk(fn func(Info) error) error {
	entries, err := os.ReadDir(s.blobDir())
	if err != nil {
		return fmt.Errorf("read blob dir: %w", err)
	}
	for _, e := range entries {
		d := digest.NewDigestFromEncoded(digest.SHA256, e.Name())
		if d.Validate() != nil || strings.ToLower(e.Name()) != e.Name() {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("stat blob %s: %w", d, err)
		}
		if err := fn(Info{Digest: d, Size: fi.Size()}); err != nil {
			return err
		}
	}
	return nil
}

// ContextReader returns r reading until ctx is done, so that a long copy
// stops with its caller.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx: ctx, r: r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
