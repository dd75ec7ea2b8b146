package image

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// waiting returns how many callers wait for the pull under key.
func (fs *flights) waiting(key string) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f := fs.m[key]; f != nil {
		return f.waiters
	}
	return 0
}

// gatedRegistry counts GETs of manifests and blobs and holds every layer
// blob GET until open is closed or the client goes away.
type gatedRegistry struct {
	*testRegistry
	layers map[string]bool
	open   chan struct{}
	// held is sent to, without blocking, when a layer GET is held.
	held chan string
	// cancelled is sent to when a held GET ended because its client went
	// away.
	cancelled chan string

	mu   sync.Mutex
	gets map[string]int // "manifests/<ref>" or "blobs/<digest>" -> GETs
}

func newGatedRegistry(t *testing.T, repoTag string, layers []string) *gatedRegistry {
	t.Helper()
	g := &gatedRegistry{
		testRegistry: newRegistry(t),
		layers:       map[string]bool{},
		open:         make(chan struct{}),
		held:         make(chan string, 16),
		cancelled:    make(chan string, 16),
		gets:         map[string]int{},
	}
	for _, l := range layers {
		g.layers[l] = true
	}
	g.wrap = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet {
			return false
		}
		var what string
		if i := strings.LastIndex(r.URL.Path, "/manifests/"); i >= 0 {
			what = r.URL.Path[i+1:]
		} else if i := strings.LastIndex(r.URL.Path, "/blobs/"); i >= 0 {
			what = r.URL.Path[i+1:]
		} else {
			return false
		}
		g.mu.Lock()
		g.gets[what]++
		g.mu.Unlock()
		d := strings.TrimPrefix(what, "blobs/")
		if !g.layers[d] {
			return false
		}
		select {
		case g.held <- d:
		default:
		}
		select {
		case <-g.open:
			return false
		case <-r.Context().Done():
			g.cancelled <- d
			return true
		}
	}
	return g
}

func (g *gatedRegistry) counts() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]int, len(g.gets))
	for k, v := range g.gets {
		out[k] = v
	}
	return out
}

// waitFor polls cond until it holds; the bound only keeps a broken test
// from hanging.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type pullResult struct {
	img Image
	err error
}

func TestConcurrentPullsShareOnePull(t *testing.T) {
	requiresRoot(t)
	img := testImage(t, "amd64", "flight")
	layers := layerDigests(t, img)
	reg := newGatedRegistry(t, "flight/app:1", layers)
	reg.push(t, "flight/app:1", img)
	ref := reg.host + "/flight/app:1"
	s := openStore(t, t.TempDir(), Config{})
	key := flightKey(ref, Auth{})

	var mu sync.Mutex
	final := map[int]map[string]bool{} // caller -> layers reported complete
	progress := func(caller int) PullOption {
		return WithProgress(func(p Progress) {
			if p.Done == p.Total {
				mu.Lock()
				if final[caller] == nil {
					final[caller] = map[string]bool{}
				}
				final[caller][p.Layer] = true
				mu.Unlock()
			}
		})
	}
	results := make(chan pullResult, 2)
	pull := func(caller int) {
		img, err := s.Pull(context.Background(), ref, Auth{}, progress(caller))
		results <- pullResult{img, err}
	}
	go pull(0)
	<-reg.held // the first pull is downloading
	go pull(1)
	waitFor(t, "the second pull to join the first", func() bool { return s.flights.waiting(key) == 2 })
	close(reg.open)
	var ids []string
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatalf("pull: %v", r.err)
		}
		ids = append(ids, r.img.ID)
	}
	if want := configDigest(t, img); ids[0] != want || ids[1] != want {
		t.Errorf("image ids %v, want both %s", ids, want)
	}
	want := map[string]int{
		"manifests/1":                   1,
		"blobs/" + configDigest(t, img): 1,
	}
	for _, l := range layers {
		want["blobs/"+l] = 1
	}
	if diff := cmp.Diff(want, reg.counts()); diff != "" {
		t.Errorf("registry GETs (-want +got):\n%s", diff)
	}
	wantFinal := map[string]bool{}
	for _, l := range layers {
		wantFinal[l] = true
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(map[int]map[string]bool{0: wantFinal, 1: wantFinal}, final); diff != "" {
		t.Errorf("layers each caller saw complete (-want +got):\n%s", diff)
	}
}

func TestCancelledPullWaiterLeavesOthersPulling(t *testing.T) {
	requiresRoot(t)
	img := testImage(t, "amd64", "leave")
	layers := layerDigests(t, img)
	reg := newGatedRegistry(t, "leave/app:1", layers)
	reg.push(t, "leave/app:1", img)
	ref := reg.host + "/leave/app:1"
	s := openStore(t, t.TempDir(), Config{})
	key := flightKey(ref, Auth{})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, second := make(chan pullResult, 1), make(chan pullResult, 1)
	go func() {
		img, err := s.Pull(ctx, ref, Auth{})
		first <- pullResult{img, err}
	}()
	<-reg.held
	go func() {
		img, err := s.Pull(context.Background(), ref, Auth{})
		second <- pullResult{img, err}
	}()
	waitFor(t, "the second pull to join the first", func() bool { return s.flights.waiting(key) == 2 })
	cancel()
	if r := <-first; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled pull returned %v, want context.Canceled", r.err)
	}
	if n := s.flights.waiting(key); n != 1 {
		t.Errorf("%d callers wait after one gave up, want 1", n)
	}
	close(reg.open)
	r := <-second
	if r.err != nil {
		t.Fatalf("the pull that kept waiting failed: %v", r.err)
	}
	if r.img.ID != configDigest(t, img) {
		t.Errorf("image id %s, want %s", r.img.ID, configDigest(t, img))
	}
	select {
	case d := <-reg.cancelled:
		t.Errorf("the download of %s was cancelled with one caller still waiting", d)
	default:
	}
}

func TestPullCancelledWhenEveryWaiterLeaves(t *testing.T) {
	requiresRoot(t)
	img := testImage(t, "amd64", "gone")
	layers := layerDigests(t, img)
	reg := newGatedRegistry(t, "gone/app:1", layers)
	reg.push(t, "gone/app:1", img)
	ref := reg.host + "/gone/app:1"
	s := openStore(t, t.TempDir(), Config{})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Pull(ctx, ref, Auth{})
		done <- err
	}()
	<-reg.held
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("pull returned %v, want context.Canceled", err)
	}
	// The shared pull stops: its held download is abandoned.
	select {
	case <-reg.cancelled:
	case <-time.After(30 * time.Second):
		t.Fatal("the download went on after its only caller left")
	}
	// A new caller starts afresh rather than joining the cancelled pull.
	close(reg.open)
	got, err := s.Pull(context.Background(), ref, Auth{})
	if err != nil {
		t.Fatalf("pull after the cancelled one: %v", err)
	}
	if got.ID != configDigest(t, img) {
		t.Errorf("image id %s, want %s", got.ID, configDigest(t, img))
	}
}

func TestFlightKey(t *testing.T) {
	anon := flightKey("docker.io/library/busybox:latest", Auth{})
	tests := []struct {
		name string
		ref  string
		auth Auth
		same bool
	}{
		{name: "same reference, anonymous", ref: "docker.io/library/busybox:latest", same: true},
		{name: "other tag", ref: "docker.io/library/busybox:1.36"},
		{name: "a credential", ref: "docker.io/library/busybox:latest", auth: Auth{Username: "u", Password: "p"}},
		{name: "fields do not run together", ref: "docker.io/library/busybox:latest", auth: Auth{Username: "up"}},
		{name: "a token", ref: "docker.io/library/busybox:latest", auth: Auth{RegistryToken: "t"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := flightKey(tt.ref, tt.auth) == anon; got != tt.same {
				t.Errorf("same flight as an anonymous pull of busybox:latest: %v, want %v", got, tt.same)
			}
		})
	}
	if flightKey("r", Auth{Username: "up"}) == flightKey("r", Auth{Username: "u", Password: "p"}) {
		t.Error("username \"up\" and username \"u\" with password \"p\" share a flight")
	}
	if strings.Contains(flightKey("r", Auth{Password: "secret"}), "secret") {
		t.Error("the flight key holds the password in clear")
	}
}

func TestPullsShowsAPullInFlight(t *testing.T) {
	requiresRoot(t)
	img := testImage(t, "amd64", "inflight")
	layers := layerDigests(t, img)
	reg := newGatedRegistry(t, "inflight/app:1", layers)
	reg.push(t, "inflight/app:1", img)
	ref := reg.host + "/inflight/app:1"
	s := openStore(t, t.TempDir(), Config{})
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	go func() {
		_, err := s.Pull(context.Background(), ref, Auth{})
		done <- err
	}()
	<-reg.held
	// Every layer is listed with its size from the manifest on, held
	// downloads or not.
	got := s.Pulls()
	if len(got) != 1 || got[0].Ref != ref || got[0].Waiters != 1 {
		t.Fatalf("pulls in flight = %+v, want one of %s", got, ref)
	}
	var names []string
	var wantTotal int64
	for i, l := range got[0].Layers {
		names = append(names, l.Layer)
		if l.Total != m.Layers[i].Size || l.Done >= l.Total {
			t.Errorf("layer %s at %d/%d bytes while held, want 0 <= done < %d", l.Layer, l.Done, l.Total, m.Layers[i].Size)
		}
		wantTotal += m.Layers[i].Size
	}
	if diff := cmp.Diff(layers, names); diff != "" {
		t.Errorf("layers listed (-want +got):\n%s", diff)
	}
	if _, total := got[0].Bytes(); total != wantTotal {
		t.Errorf("total %d bytes, want %d", total, wantTotal)
	}
	close(reg.open)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := s.Pulls(); len(got) != 0 {
		t.Errorf("pulls in flight after the pull: %+v", got)
	}
}
