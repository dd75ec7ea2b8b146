package image

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"

	"github.com/crib-dev/crib/internal/failpoint"
	"github.com/crib-dev/crib/internal/snapshot"
)

// streamLayer downloads one layer and unpacks it in the same pass: the
// bytes feed the unpacker and, through a pipe, content's ingest. Both
// checks still hold: the unpacker verifies the diff ID before it commits
// the snapshot, and content verifies the blob digest before it commits the
// blob; the layer counts as done only when both succeed. When the blob is
// already stored it is unpacked from content instead.
func (s *Store) streamLayer(ctx context.Context, parent, diffID digest.Digest, l layerSource, created *createdSet) error {
	chainID := snapshot.ChainID(parent, diffID)
	// Lock order: chain before blob, everywhere.
	unlockChain, err := s.pulls.lock(ctx, "chain:"+chainID.String())
	if err != nil {
		return err
	}
	defer unlockChain()
	if s.snaps.Exists(chainID) {
		return nil
	}
	unlockBlob, err := s.pulls.lock(ctx, "blob:"+l.desc.Digest.String())
	if err != nil {
		return err
	}
	defer unlockBlob()
	if _, err := s.content.Stat(l.desc.Digest); err == nil {
		return s.unpackStored(ctx, parent, diffID, l, created)
	} else if !errors.Is(err, errdefs.ErrNotFound) {
		return err
	}

	rc, err := openWatched(ctx, s.progressTimeout(), l.open)
	if err != nil {
		return fmt.Errorf("fetch layer %s: %w", l.desc.Digest, err)
	}
	defer rc.Close()
	pr, pw := io.Pipe()
	type result struct {
		existed bool
		err     error
	}
	ingested := make(chan result, 1)
	go func() {
		existed, err := s.content.Ingest(ctx, l.desc.Digest, l.desc.Size, pr)
		// Unblock the writer whatever happened; it ignores write errors.
		pr.CloseWithError(errIngestEnded)
		ingested <- result{existed, err}
	}()
	sink := &detachableWriter{w: pw}
	src := io.TeeReader(rc, sink)
	_, uerr := s.snaps.Unpack(ctx, parent, diffID, src, l.desc.Size)
	if uerr == nil {
		created.addChain(chainID.String())
		uerr = failpoint.Check("PullImage/unpack")
	}
	if uerr == nil {
		// The unpacker may stop before the blob's end (tar padding, a
		// compression trailer); content needs every byte.
		_, uerr = io.Copy(io.Discard, src)
	}
	pw.CloseWithError(uerr)
	res := <-ingested
	if uerr != nil {
		return fmt.Errorf("fetch and unpack layer %s: %w", l.desc.Digest, uerr)
	}
	if res.err != nil {
		return fmt.Errorf("fetch layer %s: %w", l.desc.Digest, res.err)
	}
	if !res.existed {
		created.addBlob(l.desc.Digest.String())
	}
	return failpoint.Check("PullImage/blob")
}

// errIngestEnded tells a writer that content stopped reading.
var errIngestEnded = errors.New("ingest ended")

// detachableWriter forwards to w until a write fails and then swallows
// writes, so the unpacker keeps its own pace when content stops reading
// (content reports its own error).
type detachableWriter struct {
	w      io.Writer
	failed bool
}

func (d *detachableWriter) Write(p []byte) (int, error) {
	if !d.failed {
		if _, err := d.w.Write(p); err != nil {
			d.failed = true
		}
	}
	return len(p), nil
}
