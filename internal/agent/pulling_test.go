package agent

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/crib-dev/crib/internal/agent/podstatus"
	"github.com/crib-dev/crib/internal/agent/statusapi"
)

// heldImages is a fake image service whose pulls wait until released.
type heldImages struct {
	*critest.FakeImageService
	started chan string
	release chan struct{}
}

func (h *heldImages) PullImage(ctx context.Context, spec *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, cfg *runtimeapi.PodSandboxConfig) (string, error) {
	h.started <- spec.Image
	select {
	case <-h.release:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return h.FakeImageService.PullImage(ctx, spec, auth, cfg)
}

// fakeProgress is a runtime that tells a pull's progress.
type fakeProgress struct {
	mu          sync.Mutex
	done, total int64
	asked       []string
}

func (p *fakeProgress) PullProgress(image string) (int64, int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, image)
	return p.done, p.total, p.total > 0
}

func (p *fakeProgress) set(done, total int64) {
	p.mu.Lock()
	p.done, p.total = done, total
	p.mu.Unlock()
}

func TestAgentShowsPullProgress(t *testing.T) {
	for _, tc := range []struct {
		name     string
		progress bool
	}{
		{name: "runtime tells progress", progress: true},
		{name: "runtime does not tell", progress: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRuntimeFakes(t)
			f.img.SetFakeImages(nil)
			images := &heldImages{FakeImageService: f.img, started: make(chan string, 1), release: make(chan struct{})}
			progress := &fakeProgress{}
			r := f.startConfigured(t, f.rt, func(c *Config) {
				c.Images = images
				if tc.progress {
					c.PullProgress = progress
				}
			})
			snap := only(loadPods(t, twoPods), "web")
			web := podNamed(t, snap, "web")
			r.send(t, snap)
			if img := <-images.started; img != "busybox:1.36" {
				t.Fatalf("pulling %q, want busybox:1.36", img)
			}
			waiting := func() (string, string) {
				c, ok := containerStatus(r, web, "app")
				if !ok || c.State.Waiting == nil {
					return "", ""
				}
				return c.State.Waiting.Reason, c.State.Waiting.Message
			}
			// At once, before the runtime said anything: the pod is known
			// and its container waits for the image.
			waitFor(t, "the pull shown", func() bool {
				reason, msg := waiting()
				return reason == podstatus.ReasonContainerCreating && msg == `Pulling image "busybox:1.36"`
			}, func() string { r, m := waiting(); return r + " " + m })

			progress.set(7_000_000, 28_000_000)
			want := `Pulling image "busybox:1.36" (25%: 7.0 of 28.0 MB)`
			if !tc.progress {
				want = `Pulling image "busybox:1.36"`
			}
			// The percent is refreshed every second of the agent's clock.
			ticks := 0
			waitFor(t, "the percent shown", func() bool {
				f.clk.Step(pullShowInterval)
				ticks++
				_, msg := waiting()
				return msg == want && ticks > 3
			}, func() string { r, m := waiting(); return r + " " + m })
			var table bytes.Buffer
			pods := r.a.Store().List()
			if err := statusapi.WritePods(&table, pods, f.clk.Now()); err != nil {
				t.Fatal(err)
			}
			wantStatus := "ContainerCreating (25%)"
			if !tc.progress {
				wantStatus = "ContainerCreating "
			}
			if !strings.Contains(table.String(), wantStatus) {
				t.Errorf("crib pods shows\n%s\nwithout %q", table.String(), wantStatus)
			}

			close(images.release)
			r.waitRunning(t, f, web)
			if reason, msg := waiting(); reason != "" || msg != "" {
				t.Errorf("running container still waits: %s %q", reason, msg)
			}
			progress.mu.Lock()
			defer progress.mu.Unlock()
			for _, img := range progress.asked {
				if img != "busybox:1.36" {
					t.Errorf("the runtime was asked about %q, want busybox:1.36", img)
				}
			}
			if tc.progress == (len(progress.asked) == 0) {
				t.Errorf("the runtime was asked %d times for progress", len(progress.asked))
			}
		})
	}
}
