package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/fsnotify/fsnotify"
)

const (
	defaultRescan = 20 * time.Second
	// settle is how long the directory must stay quiet after a change
	// before it is read; maxSettle bounds the wait under a steady stream.
	settle    = 100 * time.Millisecond
	maxSettle = time.Second
	// pollMissing is how often a missing directory is looked for.
	pollMissing = time.Second
)

// Watcher follows a manifest directory and sends a Snapshot whenever its
// content changes.
type Watcher struct {
	dir  string
	opts Options
	log  *slog.Logger
}

// NewWatcher does no I/O. A nil log discards.
func NewWatcher(dir string, opts Options, log *slog.Logger) *Watcher {
	if opts.RescanInterval <= 0 {
		opts.RescanInterval = defaultRescan
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Watcher{dir: absPath(dir), opts: opts, log: log}
}

// Run sends the directory's snapshot at once, then a new one after each
// settled burst of changes and whenever a periodic rescan finds the
// content changed. It never sends two equal snapshots in a row. The
// directory need not exist: it is looked for every second (and never
// created), and while it is missing the snapshot holds only that error.
// Run returns nil when ctx is done, or an error if no watch can be set up.
func (w *Watcher) Run(ctx context.Context, out chan<- Snapshot) error {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch manifest directory %s: %w", w.dir, err)
	}
	defer fsw.Close()

	st := &watchState{w: w, fsw: fsw}
	if err := st.scan(ctx, out); err != nil {
		return nil
	}

	rescan := time.NewTicker(w.opts.RescanInterval)
	defer rescan.Stop()
	poll := time.NewTicker(pollMissing)
	defer poll.Stop()
	settleTimer := time.NewTimer(settle)
	settleTimer.Stop()
	defer settleTimer.Stop()
	var burstStart time.Time // zero when no change is pending

	for {
		var err error
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fsw.Events:
			if !ok {
				return errors.New("watch manifest directory: watcher closed")
			}
			if ev.Name == w.dir && ev.Has(fsnotify.Remove|fsnotify.Rename) {
				st.unwatch()
			}
			now := time.Now()
			if burstStart.IsZero() {
				burstStart = now
			}
			if now.Sub(burstStart) < maxSettle {
				settleTimer.Reset(settle)
			}
		case err, ok := <-fsw.Errors:
			if !ok {
				return errors.New("watch manifest directory: watcher closed")
			}
			// An overflow lost events; the rescan below makes up for it.
			w.log.Warn("manifest directory watch error", "dir", w.dir, "err", err)
			if burstStart.IsZero() {
				burstStart = time.Now()
				settleTimer.Reset(settle)
			}
		case <-settleTimer.C:
			burstStart = time.Time{}
			err = st.scan(ctx, out)
		case <-rescan.C:
			err = st.scan(ctx, out)
		case <-poll.C:
			if !st.watching {
				err = st.scan(ctx, out)
			}
		}
		if err != nil {
			return nil // ctx done while sending
		}
	}
}

// watchState is what Run remembers between scans.
type watchState struct {
	w        *Watcher
	fsw      *fsnotify.Watcher
	watching bool
	missing  bool // logged that the directory is missing
	sent     bool
	last     Snapshot
}

// scan makes sure the directory is watched if it exists, loads it, and
// sends the snapshot if it differs from the last one sent. Its only error
// is ctx's.
func (st *watchState) scan(ctx context.Context, out chan<- Snapshot) error {
	st.ensureWatch()
	snap := Load(st.w.dir, st.w.opts)
	if st.sent && snap.Equal(st.last) {
		return nil
	}
	st.w.log.Debug("manifest snapshot", "dir", st.w.dir, "pods", len(snap.Pods), "errors", len(snap.Errors))
	select {
	case out <- snap:
		st.sent, st.last = true, snap
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ensureWatch adds the watch before the directory is read, so that no
// change between the read and the watch goes unseen.
func (st *watchState) ensureWatch() {
	fi, err := os.Stat(st.w.dir)
	if err != nil || !fi.IsDir() {
		st.unwatch()
		if !st.missing {
			st.missing = true
			st.w.log.Info("manifest directory missing, waiting for it", "dir", st.w.dir)
		}
		return
	}
	if st.watching {
		return
	}
	if err := st.fsw.Add(st.w.dir); err != nil {
		st.w.log.Warn("watch manifest directory", "dir", st.w.dir, "err", err)
		return
	}
	st.watching = true
	if st.missing {
		st.missing = false
		st.w.log.Info("manifest directory appeared", "dir", st.w.dir)
	}
}

func (st *watchState) unwatch() {
	if st.watching {
		_ = st.fsw.Remove(st.w.dir) // gone already when the directory was deleted
		st.watching = false
	}
}
