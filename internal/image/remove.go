package image

import (
	"context"
	"errors"
	"fmt"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"

	"github.com/crib-dev/crib/internal/content"
	"github.com/crib-dev/crib/internal/failpoint"
)

// Remove deletes an image name or a whole image. Given an ID (full, hex or
// unique prefix) it removes the image with all its names. Given a tag or
// digest reference it removes only that name; the image goes when it has
// no tag left (Docker's rule: digests do not keep an image). Blobs and
// snapshots that no remaining image references and nobody retains are
// deleted, with those an earlier removal failed to delete. An absent image
// or name is not an error; removing an image a container mounts as a
// volume (see Hold) is errdefs.ErrFailedPrecondition.
func (s *Store) Remove(ctx context.Context, ref string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.refMu.Lock()
	defer s.refMu.Unlock()
	gone, err := s.removeRecord(ref)
	if err != nil {
		return err
	}
	// What earlier removals failed to delete is tried again first. It
	// fails this call only when this call removed no image of its own
	// (the retry of that failed removal): one blob that cannot go must not
	// fail the removal of every other image.
	carriedChains, carriedBlobs := s.garbageChains, s.garbageBlobs
	s.garbageChains, s.garbageBlobs = nil, nil
	if len(carriedChains)+len(carriedBlobs) > 0 {
		if err := s.collectLocked(carriedChains, carriedBlobs); err != nil {
			s.garbageChains, s.garbageBlobs = carriedChains, carriedBlobs
			if gone == nil {
				return fmt.Errorf("remove image %q: what an earlier removal left: %w", ref, err)
			}
		}
	}
	if gone == nil || len(gone.ChainIDs)+len(gone.Blobs) == 0 {
		return nil
	}
	// The image is gone from the records; what it alone used goes next,
	// or, should that fail, at the next removal.
	err = failpoint.Check("RemoveImage/record")
	if err == nil {
		err = s.collectLocked(gone.ChainIDs, gone.Blobs)
	}
	if err != nil {
		s.garbageChains = dedupe(append(s.garbageChains, gone.ChainIDs...))
		s.garbageBlobs = dedupe(append(s.garbageBlobs, gone.Blobs...))
		return fmt.Errorf("remove image %q: %w", ref, err)
	}
	return failpoint.Check("RemoveImage/collect")
}

// removeRecord updates the index and records; it returns the removed
// record, or nil when the image stays (or never was). refMu must be held.
func (s *Store) removeRecord(ref string) (*record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, byName, err := s.resolveNameLocked(ref)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("remove image %q: %w", ref, err)
	}
	var next *record
	if byName != "" {
		next = r.clone()
		next.dropName(byName)
	}
	if next == nil || len(next.RepoTags) == 0 {
		if c := s.heldLocked(r.ID); c != "" {
			return nil, fmt.Errorf("remove image %q: image %s is mounted as a volume by container %s: %w",
				ref, r.ID, c, errdefs.ErrFailedPrecondition)
		}
	}
	if next != nil {
		if len(next.RepoTags) > 0 {
			if err := s.records.write(next); err != nil {
				return nil, err
			}
			s.images[next.ID] = next
			delete(s.names, byName)
			return nil, nil
		}
	}
	if err := s.records.remove(r.ID); err != nil {
		return nil, err
	}
	delete(s.images, r.ID)
	for _, n := range r.names() {
		delete(s.names, n)
	}
	return r, nil
}

// collect deletes those of the given snapshots and blobs that no record
// references and nobody retains.
func (s *Store) collect(chains, blobs []string) {
	s.refMu.Lock()
	defer s.refMu.Unlock()
	// Best effort: this runs on failure paths whose error is already
	// being returned.
	_ = s.collectLocked(chains, blobs)
}

// collectLocked is collect with refMu held by the caller.
func (s *Store) collectLocked(chains, blobs []string) error {
	usedChains, usedBlobs := map[string]bool{}, map[string]bool{}
	s.mu.RLock()
	for _, r := range s.images {
		for _, c := range r.ChainIDs {
			usedChains[c] = true
		}
		for _, b := range r.Blobs {
			usedBlobs[b] = true
		}
	}
	s.mu.RUnlock()
	var errs []error
	for _, c := range chains {
		if usedChains[c] || s.retainedChains[c] > 0 {
			continue
		}
		d, err := digest.Parse(c)
		if err == nil {
			err = s.snaps.Remove(d)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, b := range blobs {
		if usedBlobs[b] || s.retainedBlobs[b] > 0 {
			continue
		}
		d, err := digest.Parse(b)
		if err == nil {
			err = s.content.Delete(d)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("collect garbage: %w", err)
	}
	return nil
}

// Prune deletes every blob and snapshot that no image references and
// nobody retains: leftovers of crashed pulls or of images removed while
// their layers were in use.
func (s *Store) Prune(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.refMu.Lock()
	defer s.refMu.Unlock()
	ids, err := s.snaps.List()
	if err != nil {
		return err
	}
	chains := make([]string, len(ids))
	for i, id := range ids {
		chains[i] = id.String()
	}
	var blobs []string
	if err := s.content.Walk(func(i content.Info) error {
		blobs = append(blobs, i.Digest.String())
		return nil
	}); err != nil {
		return err
	}
	return s.collectLocked(chains, blobs)
}
