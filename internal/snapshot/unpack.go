package snapshot

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/containerd/errdefs"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/opencontainers/go-digest"
)

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// Unpack extracts one layer (a tar stream, gzip, zstd or uncompressed,
// detected from its first bytes) as the snapshot whose parent chain is
// parent ("" for a bottom layer) and whose uncompressed digest must be
// diffID. blobSize is the size of the layer's blob as stored (compressed),
// which scales the bound on what it may expand to (Limits); 0 when
// unknown. If the snapshot already exists the layer is not read. On any
// error, a refused layer's included, nothing of the layer is kept.
func (s *Store) Unpack(ctx context.Context, parent, diffID digest.Digest, layer io.Reader, blobSize int64) (Info, error) {
	if parent != "" {
		if err := validChainID(parent); err != nil {
			return Info{}, err
		}
	}
	if err := validChainID(diffID); err != nil {
		return Info{}, fmt.Errorf("diff id: %w", err)
	}
	info := Info{ChainID: ChainID(parent, diffID), Parent: parent, DiffID: diffID}
	if have, err := s.Stat(info.ChainID); err == nil {
		return have, nil
	}
	tmp, err := os.MkdirTemp(s.dir, tmpPrefix)
	if err != nil {
		return Info{}, fmt.Errorf("create snapshot tmp dir: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			os.RemoveAll(tmp)
		}
	}()
	size, err := s.unpackInto(ctx, filepath.Join(tmp, fsDirName), diffID, layer, blobSize)
	if err != nil {
		return Info{}, fmt.Errorf("unpack diff id %s: %w", diffID, err)
	}
	info.Size = size
	if err := writeCommitted(tmp, info); err != nil {
		return Info{}, err
	}
	if err := os.Rename(tmp, s.snapDir(info.ChainID)); err != nil {
		if errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTEMPTY) {
			// Another unpack of the same chain won; use its copy.
			if have, serr := s.Stat(info.ChainID); serr == nil {
				return have, nil
			}
		}
		return Info{}, fmt.Errorf("commit snapshot %s: %w", info.ChainID, err)
	}
	committed = true
	return info, nil
}

// unpackInto decompresses and extracts layer into dir within the limits,
// returning the uncompressed size after checking the diffID.
func (s *Store) unpackInto(ctx context.Context, dir string, diffID digest.Digest, layer io.Reader, blobSize int64) (int64, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return 0, fmt.Errorf("create snapshot fs dir: %w", err)
	}
	g, err := newGuard(s.opts.Limits, s.dir, blobSize)
	if err != nil {
		return 0, err
	}
	plain, closeFn, err := decompress(layer)
	if err != nil {
		return 0, err
	}
	defer closeFn()
	h := sha256.New()
	stream := io.TeeReader(&countingReader{r: plain, g: g}, h)
	if err := extract(ctx, dir, tar.NewReader(stream), g); err != nil {
		return 0, err
	}
	// Trailing padding after the end-of-archive marker is part of the diffID.
	if _, err := io.Copy(io.Discard, stream); err != nil {
		return 0, fmt.Errorf("read layer tail: %w", err)
	}
	got := digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(h.Sum(nil)))
	if got != diffID {
		return 0, fmt.Errorf("diff id mismatch: expected %s, got %s: %w", diffID, got, errdefs.ErrInvalidArgument)
	}
	return g.streamed, nil
}

// decompress detects the layer's compression from its magic bytes.
func decompress(r io.Reader) (io.Reader, func(), error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(4)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("read layer header: %w", err)
	}
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("open gzip layer: %v: %w", err, errdefs.ErrInvalidArgument)
		}
		return zr, func() { zr.Close() }, nil
	case bytes.HasPrefix(head, zstdMagic):
		zr, err := zstd.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("open zstd layer: %v: %w", err, errdefs.ErrInvalidArgument)
		}
		return zr, zr.Close, nil
	default:
		return br, func() {}, nil
	}
}

func writeCommitted(dir string, info Info) error {
	b, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("encode snapshot info: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, committedName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write snapshot info: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write snapshot info: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync snapshot info: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close snapshot info: %w", err)
	}
	return nil
}
