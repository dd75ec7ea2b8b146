package image

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	imagespec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/crib-dev/crib/internal/failpoint"
	"github.com/crib-dev/crib/internal/snapshot"
)

// importSpec is one image ready to be stored, whatever its source.
type importSpec struct {
	// names are normalized tag and digest references to give the image.
	names []string
	// smallBlobs are manifests and indexes to keep, by digest; their bytes
	// are verified against the digest on ingest.
	smallBlobs   map[digest.Digest][]byte
	configDigest digest.Digest
	config       []byte
	layers       []layerSource
	// annotations are the manifest's (a checkpoint image says so in one).
	annotations map[string]string
}

// layerSource is one compressed (or plain) layer blob and how to read it.
type layerSource struct {
	desc imagespec.Descriptor
	open func(ctx context.Context) (io.ReadCloser, error)
}

// commit stores an image: blobs verified into content, each missing layer
// unpacked once, then the record written and indexed. On failure, blobs and
// snapshots it created that nothing else references are deleted again.
func (s *Store) commit(ctx context.Context, spec importSpec) (img Image, err error) {
	var cfg imagespec.Image
	if err := json.Unmarshal(spec.config, &cfg); err != nil {
		return Image{}, fmt.Errorf("decode image config %s: %v: %w", spec.configDigest, err, errdefs.ErrInvalidArgument)
	}
	if len(cfg.RootFS.DiffIDs) != len(spec.layers) {
		return Image{}, fmt.Errorf("image config %s: %d diff ids for %d layers: %w", spec.configDigest, len(cfg.RootFS.DiffIDs), len(spec.layers), errdefs.ErrInvalidArgument)
	}
	for _, l := range spec.layers {
		// A negative size would leave the blob's download unbounded
		// (content checks sizes from 0 up) and its expansion bounded by
		// the floor alone.
		if l.desc.Size < 0 {
			return Image{}, fmt.Errorf("layer %s: size %d in the manifest: %w", l.desc.Digest, l.desc.Size, errdefs.ErrInvalidArgument)
		}
	}
	chain := snapshot.ChainIDs(cfg.RootFS.DiffIDs)
	rec := &record{
		ID:     spec.configDigest.String(),
		Size:   int64(len(spec.config)),
		Config: cfg,
		// Only the manifest's: what tells a checkpoint image.
		Annotations: spec.annotations,
	}
	rec.Blobs = append(rec.Blobs, spec.configDigest.String())
	for d := range spec.smallBlobs {
		rec.Blobs = append(rec.Blobs, d.String())
	}
	for i, l := range spec.layers {
		rec.Size += l.desc.Size
		rec.Blobs = append(rec.Blobs, l.desc.Digest.String())
		rec.ChainIDs = append(rec.ChainIDs, chain[i].String())
	}
	rec.Blobs = dedupe(rec.Blobs)

	// Hold references while working so a concurrent Remove leaves alone
	// what this import is about to rely on.
	s.retain(rec.ChainIDs, rec.Blobs)
	var created createdSet
	defer func() {
		s.refMu.Lock()
		release(s.retainedChains, rec.ChainIDs)
		release(s.retainedBlobs, rec.Blobs)
		s.refMu.Unlock()
		if err != nil {
			s.collect(created.chains, created.blobs)
		}
	}()

	if err := s.ingestBytes(ctx, spec.configDigest, spec.config, &created); err != nil {
		return Image{}, fmt.Errorf("store image config: %w", err)
	}
	if err := failpoint.Check("PullImage/config"); err != nil {
		return Image{}, err
	}
	for d, b := range spec.smallBlobs {
		if err := s.ingestBytes(ctx, d, b, &created); err != nil {
			return Image{}, fmt.Errorf("store manifest: %w", err)
		}
	}
	if err := s.ensureLayers(ctx, cfg.RootFS.DiffIDs, chain, spec.layers, &created); err != nil {
		return Image{}, err
	}
	if err := failpoint.Check("PullImage/layers"); err != nil {
		return Image{}, err
	}
	for _, n := range spec.names {
		rec.addName(n)
	}
	return s.index(rec)
}

func (s *Store) retain(chains, blobs []string) {
	s.refMu.Lock()
	defer s.refMu.Unlock()
	for _, c := range chains {
		s.retainedChains[c]++
	}
	for _, b := range blobs {
		s.retainedBlobs[b]++
	}
}

func (s *Store) ingestBytes(ctx context.Context, d digest.Digest, b []byte, created *createdSet) error {
	existed, err := s.content.Ingest(ctx, d, int64(len(b)), bytes.NewReader(b))
	if err != nil {
		return err
	}
	if !existed {
		created.addBlob(d.String())
	}
	return nil
}

// index writes the record and adds it to the in-memory index, merging with
// an existing record of the same image and moving names that pointed at
// other images. Records losing a name are rewritten before the new record
// is written, so a crash in between loses a name rather than doubling it.
func (s *Store) index(rec *record) (Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if have, ok := s.images[rec.ID]; ok {
		merged := have.clone()
		for _, n := range rec.names() {
			merged.addName(n)
		}
		merged.Blobs = dedupe(append(merged.Blobs, rec.Blobs...))
		if merged.Annotations == nil {
			merged.Annotations = rec.Annotations
		}
		rec = merged
	}
	for _, n := range rec.names() {
		otherID, ok := s.names[n]
		if !ok || otherID == rec.ID {
			continue
		}
		other := s.images[otherID].clone()
		other.dropName(n)
		if err := s.records.write(other); err != nil {
			return Image{}, err
		}
		s.images[otherID] = other
		delete(s.names, n)
	}
	if err := s.records.write(rec); err != nil {
		return Image{}, err
	}
	s.images[rec.ID] = rec
	for _, n := range rec.names() {
		s.names[n] = rec.ID
	}
	return rec.image(), nil
}

func dedupe(in []string) []string {
	seen := make(map[string]struct{}, len(in))
	out := in[:0:0]
	for _, v := range in {
		if _, ok := seen[v]; ok {
			continue
		}
		seen[v] = struct{}{}
		out = append(out, v)
	}
	return out
}
