package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"time"

	"github.com/containerd/errdefs"
	"github.com/fsnotify/fsnotify"
	corev1 "k8s.io/api/core/v1"
)

const (
	defaultRescan = 20 * time.Second
	// settle is how long the directory must stay quiet after a change
	// before it is read; maxSettle bounds the wait under a steady stream.
	// It is short because it is on every pod start's path, and a file read
	// half-written does no harm: its pods keep their last valid version.
	settle    = 10 * time.Millisecond
	maxSettle = time.Second
	// removalSettle is how long a pod must stay missing before a snapshot
	// drops it: editors replace a file by renaming it away and writing a
	// new one, and that gap must not tear the pod down.
	removalSettle = 500 * time.Millisecond
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
	st.removalTimer = time.NewTimer(removalSettle)
	st.removalTimer.Stop()
	defer st.removalTimer.Stop()
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
				// A new pod needs no settling: take what is new at
				// once, and everything else when the burst is over.
				err = st.scanAdditions(ctx, out)
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
		case <-st.removalTimer.C:
			st.removalArmed = false
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
	// removalTimer rescans once pods missing from a scan have stayed
	// missing for removalSettle.
	removalTimer *time.Timer
	removalArmed bool
	missingSince map[string]time.Time // pod key -> when a scan first missed it
}

// scan makes sure the directory is watched if it exists, loads it, and
// sends the snapshot if it differs from the last one sent. Its only error
// is ctx's.
func (st *watchState) scan(ctx context.Context, out chan<- Snapshot) error {
	st.ensureWatch()
	snap := Load(st.w.dir, st.w.opts)
	if st.sent {
		keepLastGood(&snap, st.last)
		st.holdRemovals(&snap)
	}
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

// keepLastGood carries the pods a file defined in the last snapshot over
// into snap when that file is now rejected, as an API server keeps an
// object whose update failed validation: a file caught half-written, or an
// edit with a typo, must not tear its running pods down. A file that was
// deleted is not rejected, so its pods do go; nor is a pod carried over
// whose name another file now defines.
func keepLastGood(snap *Snapshot, last Snapshot) {
	rejected := map[string]*FileError{}
	for _, e := range snap.Errors {
		if !errdefs.IsAlreadyExists(e.Err) {
			rejected[e.Path] = e
		}
	}
	if len(rejected) == 0 {
		return
	}
	defined := map[string]bool{}
	for _, p := range snap.Pods {
		defined[Key(p.Namespace, p.Name)] = true
	}
	kept := false
	for _, p := range last.Pods {
		e := rejected[p.Annotations[AnnotationConfigFile]]
		if e == nil || defined[Key(p.Namespace, p.Name)] {
			continue
		}
		snap.Pods = append(snap.Pods, p)
		defined[Key(p.Namespace, p.Name)] = true
		kept = true
	}
	for k, cm := range last.ConfigMaps {
		if _, ok := snap.ConfigMaps[k]; !ok && rejected[cm.Annotations[AnnotationConfigFile]] != nil {
			snap.ConfigMaps[k] = cm
		}
	}
	for k, sec := range last.Secrets {
		if _, ok := snap.Secrets[k]; !ok && rejected[sec.Annotations[AnnotationConfigFile]] != nil {
			snap.Secrets[k] = sec
		}
	}
	if kept {
		snap.sort()
	}
}

// holdRemovals keeps the pods, ConfigMaps and Secrets of the last snapshot
// that this scan misses until they have been missing for removalSettle,
// and arms a rescan for then.
func (st *watchState) holdRemovals(snap *Snapshot) {
	now := time.Now()
	if st.missingSince == nil {
		st.missingSince = map[string]time.Time{}
	}
	present := map[string]bool{}
	for _, p := range snap.Pods {
		present["pod "+Key(p.Namespace, p.Name)] = true
	}
	for k := range snap.ConfigMaps {
		present["configmap "+k] = true
	}
	for k := range snap.Secrets {
		present["secret "+k] = true
	}
	for k := range st.missingSince {
		if present[k] {
			delete(st.missingSince, k)
		}
	}
	var wait time.Duration
	// hold reports whether the object under key is still to be kept.
	hold := func(key string) bool {
		if present[key] {
			return false
		}
		since, ok := st.missingSince[key]
		if !ok {
			since = now
			st.missingSince[key] = now
		}
		left := removalSettle - now.Sub(since)
		if left <= 0 {
			delete(st.missingSince, key)
			return false
		}
		if wait == 0 || left < wait {
			wait = left
		}
		return true
	}
	for _, p := range st.last.Pods {
		if hold("pod " + Key(p.Namespace, p.Name)) {
			snap.Pods = append(snap.Pods, p)
		}
	}
	for k, cm := range st.last.ConfigMaps {
		if hold("configmap " + k) {
			snap.ConfigMaps[k] = cm
		}
	}
	for k, sec := range st.last.Secrets {
		if hold("secret " + k) {
			snap.Secrets[k] = sec
		}
	}
	if wait > 0 {
		snap.sort()
		if !st.removalArmed {
			st.removalArmed = true
			st.removalTimer.Reset(wait)
		}
	}
}

// scanAdditions sends a snapshot that adds the pods, ConfigMaps and Secrets
// which appeared since the last one, and changes nothing else: at the
// start of a burst of changes, files may be half-written, so edits and
// removals wait for the burst to settle while a new pod starts at once.
func (st *watchState) scanAdditions(ctx context.Context, out chan<- Snapshot) error {
	if !st.sent {
		return nil
	}
	st.ensureWatch()
	snap := Load(st.w.dir, st.w.opts)
	next := Snapshot{
		Pods:       append([]*corev1.Pod(nil), st.last.Pods...),
		ConfigMaps: maps.Clone(st.last.ConfigMaps),
		Secrets:    maps.Clone(st.last.Secrets),
		Errors:     st.last.Errors,
	}
	known := map[string]bool{}
	for _, p := range st.last.Pods {
		known[Key(p.Namespace, p.Name)] = true
	}
	added := false
	for _, p := range snap.Pods {
		if !known[Key(p.Namespace, p.Name)] {
			next.Pods = append(next.Pods, p)
			added = true
		}
	}
	for k, v := range snap.ConfigMaps {
		if _, ok := next.ConfigMaps[k]; !ok {
			next.ConfigMaps[k] = v
			added = true
		}
	}
	for k, v := range snap.Secrets {
		if _, ok := next.Secrets[k]; !ok {
			next.Secrets[k] = v
			added = true
		}
	}
	if !added {
		return nil
	}
	next.sort()
	st.w.log.Debug("manifest additions", "dir", st.w.dir, "pods", len(next.Pods))
	select {
	case out <- next:
		st.last = next
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
