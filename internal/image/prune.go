package image

import (
	"context"
	"fmt"
)

// PruneReport says what PruneImages removed.
type PruneReport struct {
	// Images are the IDs of the images removed.
	Images []string
	// BytesFreed is how much less disk the store uses afterwards.
	BytesFreed uint64
}

// PruneImages removes every image that is not pinned, not mounted as a
// volume and whose layers no container retains (an image is in use when its
// top chain ID is retained), then deletes every blob and snapshot nothing references.
func (s *Store) PruneImages(ctx context.Context) (PruneReport, error) {
	var rep PruneReport
	before, err := s.FsInfo()
	if err != nil {
		return rep, err
	}
	s.refMu.Lock()
	var victims []string
	s.mu.RLock()
	for id, r := range s.images {
		if r.Pinned || len(s.mountedBy[id]) > 0 {
			continue
		}
		if n := len(r.ChainIDs); n > 0 && s.retainedChains[r.ChainIDs[n-1]] > 0 {
			continue
		}
		victims = append(victims, id)
	}
	s.mu.RUnlock()
	for _, id := range victims {
		if err := ctx.Err(); err != nil {
			s.refMu.Unlock()
			return rep, err
		}
		gone, err := s.removeRecord(id)
		if err != nil {
			s.refMu.Unlock()
			return rep, fmt.Errorf("prune images: %w", err)
		}
		if gone != nil {
			rep.Images = append(rep.Images, gone.ID)
		}
	}
	s.refMu.Unlock()
	if err := s.Prune(ctx); err != nil {
		return rep, fmt.Errorf("prune images: %w", err)
	}
	after, err := s.FsInfo()
	if err != nil {
		return rep, err
	}
	if before.UsedBytes > after.UsedBytes {
		rep.BytesFreed = before.UsedBytes - after.UsedBytes
	}
	return rep, nil
}
