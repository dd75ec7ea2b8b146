package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"sync"
	"time"
)

// flights lets concurrent pulls of one reference with one credential share
// a single pull: the first caller starts it, later callers wait for the
// same result. The shared pull does not run on any one caller's context:
// a caller that gives up only stops waiting, and the pull is cancelled when
// the last of its callers has given up. (Stalled downloads still end by the
// progress timeout.) The zero value is ready to use.
type flights struct {
	mu sync.Mutex
	m  map[string]*flight
}

// flight is one shared pull, and the store's only record of it: while it
// is in the map it is in flight, and its layers say how far it got.
type flight struct {
	key string
	// ref is the normalized reference pulled; started is when the pull
	// began.
	ref     string
	started time.Time
	cancel  context.CancelFunc
	// done is closed once img and err are set.
	done chan struct{}
	img  Image
	err  error
	// waiters counts the callers still waiting; guarded by flights.mu.
	waiters int

	// subsMu guards subs, the progress callbacks of the waiters that
	// asked for progress.
	subsMu sync.Mutex
	subs   map[*subscriber]struct{}
	// progressMu guards layers, the newest report of each layer in the
	// order they were first reported (index: position by digest). It is
	// never held while a subscriber runs, so that a slow subscriber does
	// not hold up Pulls.
	progressMu sync.Mutex
	layers     []Progress
	index      map[string]int
}

type subscriber struct{ fn func(Progress) }

// pullFunc does one pull on ctx, reporting to progress.
type pullFunc func(ctx context.Context, progress func(Progress)) (Image, error)

// do returns the result of the pull in flight under key, starting fn as
// that pull when there is none. progress, when not nil, receives the
// shared pull's reports from the moment the caller joins. do returns
// ctx's error as soon as ctx is done.
func (fs *flights) do(ctx context.Context, key, ref string, progress func(Progress), fn pullFunc) (Image, error) {
	if err := ctx.Err(); err != nil {
		return Image{}, err
	}
	fs.mu.Lock()
	if fs.m == nil {
		fs.m = map[string]*flight{}
	}
	f := fs.m[key]
	if f == nil {
		// Values of the first caller's context (loggers, traces) carry
		// over; its cancellation and deadline do not.
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{
			key: key, ref: ref, started: time.Now(), cancel: cancel, done: make(chan struct{}),
			subs: map[*subscriber]struct{}{}, index: map[string]int{},
		}
		fs.m[key] = f
		go fs.run(fctx, f, fn)
	}
	f.waiters++
	var sub *subscriber
	if progress != nil {
		sub = &subscriber{fn: progress}
		f.subsMu.Lock()
		f.subs[sub] = struct{}{}
		f.subsMu.Unlock()
	}
	fs.mu.Unlock()

	select {
	case <-f.done:
		return f.img, f.err
	case <-ctx.Done():
		fs.leave(f, sub)
		return Image{}, ctx.Err()
	}
}

// run does the pull and publishes its result.
func (fs *flights) run(ctx context.Context, f *flight, fn pullFunc) {
	img, err := fn(ctx, f.report)
	f.cancel()
	fs.mu.Lock()
	if fs.m[f.key] == f {
		delete(fs.m, f.key)
	}
	f.img, f.err = img, err
	close(f.done)
	fs.mu.Unlock()
}

// leave drops a waiter that gave up; the last one to go cancels the pull
// and takes it out of the map, so that a new caller starts afresh rather
// than joining a pull that is being cancelled.
func (fs *flights) leave(f *flight, sub *subscriber) {
	if sub != nil {
		f.subsMu.Lock()
		delete(f.subs, sub)
		f.subsMu.Unlock()
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f.waiters--
	if f.waiters > 0 {
		return
	}
	if fs.m[f.key] == f {
		delete(fs.m, f.key)
	}
	f.cancel()
}

// report records one progress report and passes it to every subscribed
// waiter.
func (f *flight) report(p Progress) {
	f.progressMu.Lock()
	if i, ok := f.index[p.Layer]; ok {
		f.layers[i] = p
	} else {
		f.index[p.Layer] = len(f.layers)
		f.layers = append(f.layers, p)
	}
	f.progressMu.Unlock()
	f.subsMu.Lock()
	defer f.subsMu.Unlock()
	for s := range f.subs {
		s.fn(p)
	}
}

// PullStatus is one pull in flight as Pulls shows it.
type PullStatus struct {
	// Ref is the normalized reference being pulled.
	Ref string
	// Started is when the pull began.
	Started time.Time
	// Waiters counts the callers waiting for it (concurrent pulls of one
	// reference share one pull).
	Waiters int
	// Layers are the layer blobs' progress, in manifest order once the
	// manifest is read; none before.
	Layers []Progress
}

// Bytes sums the layers' bytes fetched and their sizes.
func (p PullStatus) Bytes() (done, total int64) {
	for _, l := range p.Layers {
		done += l.Done
		total += l.Total
	}
	return done, total
}

// snapshot lists the pulls in flight, oldest first.
func (fs *flights) snapshot() []PullStatus {
	fs.mu.Lock()
	out := make([]PullStatus, 0, len(fs.m))
	flying := make([]*flight, 0, len(fs.m))
	for _, f := range fs.m {
		out = append(out, PullStatus{Ref: f.ref, Started: f.started, Waiters: f.waiters})
		flying = append(flying, f)
	}
	fs.mu.Unlock()
	for i, f := range flying {
		f.progressMu.Lock()
		out[i].Layers = append([]Progress(nil), f.layers...)
		f.progressMu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.Before(out[j].Started)
		}
		return out[i].Ref < out[j].Ref
	})
	return out
}

// flightKey is what makes two pulls the same: the normalized reference and
// who asks for it (a digest of the credential, so that a caller never gets
// an image through someone else's credential).
func flightKey(norm string, a Auth) string {
	h := sha256.New()
	for _, f := range []string{a.Username, a.Password, a.Auth, a.IdentityToken, a.RegistryToken} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return norm + " " + hex.EncodeToString(h.Sum(nil))
}
