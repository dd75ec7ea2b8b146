package image

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"

	"github.com/crib-dev/crib/internal/snapshot"
)

// DefaultPullConcurrency is how many layer blobs one pull downloads at once
// when Config.PullConcurrency is 0.
const DefaultPullConcurrency = 3

// ensureLayers makes sure every layer's snapshot exists. Missing blobs are
// downloaded in parallel (at most the configured number at a time) while
// the snapshots are unpacked strictly bottom-up, each as soon as its blob
// is stored and its parent is unpacked. Work on one blob or one chain ID is
// done once across all concurrent pulls: a second pull waits for the first
// and then finds the result.
func (s *Store) ensureLayers(ctx context.Context, diffIDs, chain []digest.Digest, layers []layerSource, created *createdSet) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	// Only layers whose snapshot is missing need their blob.
	fetched := make([]chan error, len(layers))
	sem := make(chan struct{}, s.pullConcurrency())
	var wg sync.WaitGroup
	defer wg.Wait()
	for i, l := range layers {
		if s.snaps.Exists(chain[i]) {
			continue
		}
		done := make(chan error, 1)
		fetched[i] = done
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				done <- context.Cause(ctx)
				return
			}
			err := s.fetchBlob(ctx, l, created)
			<-sem
			if err != nil {
				cancel(err)
			}
			done <- err
		}()
	}

	var parent digest.Digest
	for i, l := range layers {
		if fetched[i] != nil {
			var err error
			select {
			case err = <-fetched[i]:
			case <-ctx.Done():
				err = context.Cause(ctx)
			}
			if err != nil {
				cancel(err)
				return err
			}
			if err := s.unpackLayer(ctx, parent, diffIDs[i], l, created); err != nil {
				if ctx.Err() != nil {
					// A failed download stopped this unpack; report that.
					return context.Cause(ctx)
				}
				cancel(err)
				return err
			}
		}
		parent = chain[i]
	}
	return nil
}

func (s *Store) pullConcurrency() int {
	if s.cfg.PullConcurrency > 0 {
		return s.cfg.PullConcurrency
	}
	return DefaultPullConcurrency
}

// fetchBlob stores one layer blob in content unless it is there already.
// The blob's lock makes concurrent pulls of a shared layer download it
// once.
func (s *Store) fetchBlob(ctx context.Context, l layerSource, created *createdSet) error {
	unlock, err := s.pulls.lock(ctx, "blob:"+l.desc.Digest.String())
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := s.content.Stat(l.desc.Digest); err == nil {
		return nil
	} else if !errors.Is(err, errdefs.ErrNotFound) {
		return err
	}
	rc, err := openWatched(ctx, s.progressTimeout(), l.open)
	if err != nil {
		return fmt.Errorf("fetch layer %s: %w", l.desc.Digest, err)
	}
	existed, err := s.content.Ingest(ctx, l.desc.Digest, l.desc.Size, rc)
	rc.Close()
	if err != nil {
		return fmt.Errorf("fetch layer %s: %w", l.desc.Digest, err)
	}
	if !existed {
		created.addBlob(l.desc.Digest.String())
	}
	return nil
}

// unpackLayer unpacks one stored layer blob onto parent unless its
// snapshot exists. The chain ID's lock makes concurrent pulls unpack it
// once.
func (s *Store) unpackLayer(ctx context.Context, parent, diffID digest.Digest, l layerSource, created *createdSet) error {
	chainID := snapshot.ChainID(parent, diffID)
	unlock, err := s.pulls.lock(ctx, "chain:"+chainID.String())
	if err != nil {
		return err
	}
	defer unlock()
	if s.snaps.Exists(chainID) {
		return nil
	}
	f, err := s.content.Open(l.desc.Digest)
	if err != nil {
		return fmt.Errorf("unpack layer %s: %w", l.desc.Digest, err)
	}
	defer f.Close()
	if _, err := s.snaps.Unpack(ctx, parent, diffID, f); err != nil {
		return fmt.Errorf("unpack layer %s: %w", l.desc.Digest, err)
	}
	created.addChain(chainID.String())
	return nil
}

// createdSet lists what one import added, for cleanup on failure. It is
// safe for concurrent use.
type createdSet struct {
	mu     sync.Mutex
	chains []string
	blobs  []string
}

func (c *createdSet) addBlob(d string) {
	c.mu.Lock()
	c.blobs = append(c.blobs, d)
	c.mu.Unlock()
}

func (c *createdSet) addChain(id string) {
	c.mu.Lock()
	c.chains = append(c.chains, id)
	c.mu.Unlock()
}
