package image

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// layerDigests lists an image's layer blob digests, bottom first.
func layerDigests(t *testing.T, img v1.Image) []string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d.String())
	}
	return out
}

func TestPullStalledDownloadAbandoned(t *testing.T) {
	requiresRoot(t)
	tests := []struct {
		name string
		// sendBytes is how much of the blob the handler writes before it
		// stalls; -1 stalls before sending headers.
		sendBytes int
		// layer is the stalling layer: 0 is streamed into its snapshot,
		// 1 is fetched in the background.
		layer int
	}{
		{name: "streamed layer, no response", sendBytes: -1, layer: 0},
		{name: "streamed layer, stalls mid body", sendBytes: 10, layer: 0},
		{name: "background layer, no response", sendBytes: -1, layer: 1},
		{name: "background layer, stalls mid body", sendBytes: 10, layer: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := newRegistry(t)
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			img := testImage(t, "amd64", "stall")
			reg.push(t, "stall/app:1", img)
			top := layerDigests(t, img)[tc.layer]
			reg.wrap = func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+top) {
					return false
				}
				if tc.sendBytes >= 0 {
					w.Header().Set("Content-Length", "100000")
					w.WriteHeader(http.StatusOK)
					w.Write(make([]byte, tc.sendBytes))
					w.(http.Flusher).Flush()
				}
				select {
				case <-r.Context().Done():
				case <-release:
				}
				return true
			}
			root := t.TempDir()
			s := openStore(t, root, Config{PullProgressTimeout: 100 * time.Millisecond})
			// The outer deadline only keeps a broken watchdog from hanging
			// the test; the pull must fail on its own.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := s.Pull(ctx, reg.host+"/stall/app:1", Auth{})
			if ctx.Err() != nil {
				t.Fatalf("pull was not abandoned by the progress timeout: %v", err)
			}
			if !errdefs.IsDeadlineExceeded(err) {
				t.Fatalf("Pull error = %v, want deadline exceeded", err)
			}
			if !strings.Contains(err.Error(), "no progress for 100ms") || !strings.Contains(err.Error(), top) {
				t.Errorf("error %q does not say the layer stalled", err)
			}
			if got := dirNames(t, filepath.Join(root, "blobs", "sha256")); len(got) != 0 {
				t.Errorf("blobs left after a stalled pull: %v", got)
			}
			for _, d := range []string{"ingest", "snapshots", "images"} {
				if left := dirNames(t, filepath.Join(root, d)); len(left) != 0 {
					t.Errorf("%s not empty after a stalled pull: %v", d, left)
				}
			}
		})
	}
}

func TestConcurrentPullsShareLayers(t *testing.T) {
	requiresRoot(t)
	reg := newRegistry(t)
	a := testImage(t, "amd64", "a")
	b := testImage(t, "amd64", "b")
	reg.push(t, "share/a:1", a)
	reg.push(t, "share/b:1", b)
	la, lb := layerDigests(t, a), layerDigests(t, b)
	if la[0] != lb[0] {
		t.Fatalf("test images do not share their base layer: %s vs %s", la[0], lb[0])
	}
	var mu sync.Mutex
	hits := map[string]int{}
	reg.wrap = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet {
			if i := strings.LastIndex(r.URL.Path, "/blobs/"); i >= 0 {
				mu.Lock()
				hits[r.URL.Path[i+len("/blobs/"):]]++
				mu.Unlock()
			}
		}
		return false
	}
	root := t.TempDir()
	s := openStore(t, root, Config{PullConcurrency: 2})
	refs := []string{"share/a:1", "share/b:1", "share/a:1", "share/b:1"}
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	for i, ref := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Pull(context.Background(), reg.host+"/"+ref, Auth{})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("pull %s: %v", refs[i], err)
		}
	}
	want := map[string]int{la[0]: 1, la[1]: 1, lb[1]: 1}
	got := map[string]int{}
	for d := range want {
		got[d] = hits[d]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layer blob GETs (-want +got):\n%s", diff)
	}
	// Three distinct layers: one shared base and two tops.
	if n := len(dirNames(t, filepath.Join(root, "snapshots"))); n != 3 {
		t.Errorf("%d snapshots, want 3", n)
	}
	for _, ref := range []string{"share/a:1", "share/b:1"} {
		img, err := s.Resolve(reg.host + "/" + ref)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSuffix(strings.TrimPrefix(ref, "share/"), ":1")
		if m := readTop(t, s, img, "etc/marker"); m != want {
			t.Errorf("%s: etc/marker = %q, want %q", ref, m, want)
		}
	}
}
