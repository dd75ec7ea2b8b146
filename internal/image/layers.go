package image

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"

	"github.com/crib-dev/crib/internal/failpoint"
	"github.com/crib-dev/crib/internal/snapshot"
)

// DefaultPullConcurrency is how many layer blobs one pull downloads at once
// when Config.PullConcurrency is 0.
const DefaultPullConcurrency = 3

// ensureLayers makes sure every layer's snapshot exists. Snapshots are
// unpacked strictly bottom-up. The layer next in line is streamed: its
// download is unpacked as it arrives while the same bytes go into content.
// Later layers download in the background, in parallel, into content, so
// that each is ready to unpack once its parent is; a layer whose download
// has not begun by the time its turn comes is streamed instead. At most the
// configured number of downloads run at once. Work on one blob or one chain
// ID is done once across concurrent pulls: a second pull waits for the
// first and then finds the result.
func (s *Store) ensureLayers(ctx context.Context, diffIDs, chain []digest.Digest, layers []layerSource, created *createdSet) error {
	ctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel(nil) // fetchers still queued give up
		wg.Wait()
	}()

	// The unpacker's own download is one of the allowed; background
	// fetchers share the rest, so with a bound of 1 layers simply stream
	// one after another.
	background := s.pullConcurrency() - 1
	sem := make(chan struct{}, max(background, 1))
	jobs := make([]*layerJob, len(layers))
	first := true
	for i, l := range layers {
		if s.snaps.Exists(chain[i]) {
			continue
		}
		j := &layerJob{done: make(chan error, 1)}
		jobs[i] = j
		if first || background == 0 {
			// The unpacker streams this one when its turn comes.
			first = false
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			if !j.claimed.CompareAndSwap(false, true) {
				return // the unpacker got to it first and streams it
			}
			err := s.fetchBlob(ctx, l, created)
			if err != nil {
				cancel(err)
			}
			j.done <- err
		}()
	}

	var parent digest.Digest
	for i, l := range layers {
		if j := jobs[i]; j != nil {
			if err := s.ensureLayer(ctx, j, parent, diffIDs[i], l, created); err != nil {
				if ctx.Err() != nil {
					// Another layer's failure stopped this one; report that.
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

// layerJob is one layer whose snapshot is missing. Whoever claims it first
// downloads it: a background fetcher (which reports on done) or the
// unpacker (which streams it).
type layerJob struct {
	claimed atomic.Bool
	done    chan error
}

// ensureLayer unpacks one layer once its parent exists: from content when
// a background fetcher has stored it, streamed from the source otherwise.
func (s *Store) ensureLayer(ctx context.Context, j *layerJob, parent, diffID digest.Digest, l layerSource, created *createdSet) error {
	if j.claimed.CompareAndSwap(false, true) {
		return s.streamLayer(ctx, parent, diffID, l, created)
	}
	select {
	case err := <-j.done:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return s.unpackLayer(ctx, parent, diffID, l, created)
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
	return failpoint.Check("PullImage/background-blob")
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
	return s.unpackStored(ctx, parent, diffID, l, created)
}

// unpackStored unpacks a layer blob from content; the caller holds the
// chain ID's lock.
func (s *Store) unpackStored(ctx context.Context, parent, diffID digest.Digest, l layerSource, created *createdSet) error {
	chainID := snapshot.ChainID(parent, diffID)
	f, err := s.content.Open(l.desc.Digest)
	if err != nil {
		return fmt.Errorf("unpack layer %s: %w", l.desc.Digest, err)
	}
	defer f.Close()
	if _, err := s.snaps.Unpack(ctx, parent, diffID, f, l.desc.Size); err != nil {
		return fmt.Errorf("unpack layer %s: %w", l.desc.Digest, err)
	}
	created.addChain(chainID.String())
	return failpoint.Check("PullImage/unpack-stored")
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
