package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/term"

	"github.com/crib-dev/crib/internal/api"
	"github.com/crib-dev/crib/internal/image"
)

func imagePull(env imageEnv, args []string) error {
	// Interrupting the CLI ends the request, which cancels the daemon's
	// pull.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ref := args[0]
	auth, err := dockerAuth(ref)
	if err != nil {
		return err
	}
	var show func(api.PullEvent)
	if f, ok := env.stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		show = newPullBars(env.stdout, time.Now).update
	} else {
		show = newPlainProgress(env.stdout).update
	}
	id, err := env.client.PullImage(ctx, ref, auth, show)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "pulled %s %s\n", ref, id)
	return nil
}

// dockerAuth finds the user's credential for ref's registry in the docker
// config (~/.docker/config.json, $DOCKER_CONFIG, credential helpers); nil
// means anonymous.
func dockerAuth(ref string) (*image.Auth, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("parse image reference %q: %w", ref, err)
	}
	a, err := authn.DefaultKeychain.Resolve(r.Context())
	if err != nil {
		return nil, fmt.Errorf("read docker credentials for %s: %w", r.Context().RegistryStr(), err)
	}
	if a == authn.Anonymous {
		return nil, nil
	}
	cfg, err := a.Authorization()
	if err != nil {
		return nil, fmt.Errorf("read docker credentials for %s: %w", r.Context().RegistryStr(), err)
	}
	auth := image.Auth{
		Username:      cfg.Username,
		Password:      cfg.Password,
		Auth:          cfg.Auth,
		IdentityToken: cfg.IdentityToken,
		RegistryToken: cfg.RegistryToken,
	}
	if auth == (image.Auth{}) {
		return nil, nil
	}
	return &auth, nil
}

// plainProgress prints progress as lines, for logs and pipes: a layer's
// first report, one per tenth of it fetched, and its completion.
type plainProgress struct {
	w     io.Writer
	tenth map[string]int64 // last tenth printed per layer
}

func newPlainProgress(w io.Writer) *plainProgress {
	return &plainProgress{w: w, tenth: map[string]int64{}}
}

func (p *plainProgress) update(ev api.PullEvent) {
	tenth := int64(10)
	if ev.Total > 0 && ev.Done < ev.Total {
		tenth = ev.Done * 10 / ev.Total
	}
	if last, seen := p.tenth[ev.Layer]; seen && tenth <= last {
		return
	}
	p.tenth[ev.Layer] = tenth
	state := ""
	if tenth == 10 {
		state = " done"
	}
	fmt.Fprintf(p.w, "%s %s/%s%s\n", shortDigest(ev.Layer), humanSize(ev.Done), humanSize(ev.Total), state)
}

// pullBars draws one progress bar per layer on a terminal, redrawing all
// of them in place on every update.
type pullBars struct {
	w      io.Writer
	now    func() time.Time
	order  []string
	layers map[string]api.PullEvent
	starts map[string]time.Time // when each layer's first report came
	drawn  int                  // lines drawn last time
}

func newPullBars(w io.Writer, now func() time.Time) *pullBars {
	return &pullBars{w: w, now: now, layers: map[string]api.PullEvent{}, starts: map[string]time.Time{}}
}

func (b *pullBars) update(ev api.PullEvent) {
	if _, ok := b.layers[ev.Layer]; !ok {
		b.order = append(b.order, ev.Layer)
		b.starts[ev.Layer] = b.now()
	}
	b.layers[ev.Layer] = ev
	b.draw()
}

func (b *pullBars) draw() {
	var sb strings.Builder
	if b.drawn > 0 {
		fmt.Fprintf(&sb, "\x1b[%dA", b.drawn)
	}
	now := b.now()
	for _, l := range b.order {
		sb.WriteString("\x1b[2K")
		sb.WriteString(barLine(b.layers[l], now.Sub(b.starts[l]).Seconds()))
		sb.WriteByte('\n')
	}
	b.drawn = len(b.order)
	io.WriteString(b.w, sb.String())
}

// barLine renders one layer: digest, bar, bytes and the layer's average
// rate over elapsed seconds.
func barLine(ev api.PullEvent, elapsed float64) string {
	const width = 30
	filled := width
	if ev.Total > 0 && ev.Done < ev.Total {
		filled = int(ev.Done * width / ev.Total)
	}
	rate := ""
	if elapsed > 0 && ev.Done < ev.Total {
		rate = fmt.Sprintf(" %s/s", humanSize(int64(float64(ev.Done)/elapsed)))
	}
	state := ""
	if ev.Total > 0 && ev.Done >= ev.Total {
		state = " done"
	}
	return fmt.Sprintf("%s [%s%s] %s/%s%s%s", shortDigest(ev.Layer),
		strings.Repeat("=", filled), strings.Repeat(" ", width-filled),
		humanSize(ev.Done), humanSize(ev.Total), rate, state)
}
