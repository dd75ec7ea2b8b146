package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/image"
)

// progressInterval is how often a pull reports one layer's progress at
// most; the first and the last report of a layer always go out.
const progressInterval = 100 * time.Millisecond

func (h *handler) load(w http.ResponseWriter, r *http.Request) {
	imgs, err := h.images.Load(r.Context(), r.Body)
	if err != nil {
		h.fail(w, "load images", err)
		return
	}
	out := make([]LoadedImage, len(imgs))
	for i, img := range imgs {
		out[i] = LoadedImage{ID: img.ID, RepoTags: img.RepoTags}
		h.log.Info("image loaded", "image", img.ID, "tags", strings.Join(img.RepoTags, ","))
	}
	writeJSON(w, out)
}

func (h *handler) list(w http.ResponseWriter, _ *http.Request) {
	imgs := h.images.List()
	out := make([]ImageInfo, len(imgs))
	for i, img := range imgs {
		out[i] = NewImageInfo(img, false)
	}
	writeJSON(w, out)
}

func (h *handler) inspect(w http.ResponseWriter, r *http.Request) {
	img, err := h.images.Resolve(r.PathValue("ref"))
	if err != nil {
		h.fail(w, "inspect image", err)
		return
	}
	writeJSON(w, NewImageInfo(img, true))
}

func (h *handler) remove(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("ref")
	if err := h.images.Remove(r.Context(), ref); err != nil {
		h.fail(w, "remove image", err)
		return
	}
	h.log.Info("image removed", "ref", ref)
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) prune(w http.ResponseWriter, r *http.Request) {
	rep, err := h.images.PruneImages(r.Context())
	if err != nil {
		h.fail(w, "prune images", err)
		return
	}
	h.log.Info("images pruned", "images", len(rep.Images), "bytes", rep.BytesFreed)
	writeJSON(w, PruneResult{Removed: nonNil(rep.Images), BytesFreed: rep.BytesFreed})
}

func (h *handler) save(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("ref")
	format := r.URL.Query().Get("format")
	if format == "" {
		format = image.FormatOCI
	}
	if format != image.FormatOCI && format != image.FormatDocker {
		h.fail(w, "save image", fmt.Errorf("format %q is neither oci nor docker: %w", format, errdefs.ErrInvalidArgument))
		return
	}
	// Answer a missing image with a status before streaming starts.
	if _, err := h.images.Resolve(ref); err != nil {
		h.fail(w, "save image", err)
		return
	}
	w.Header().Set("Content-Type", "application/x-tar")
	if err := h.images.Save(r.Context(), ref, format, w); err != nil {
		// The status is sent; cutting the stream short tells the client.
		h.log.Error("save image", "ref", ref, "err", err)
		panic(http.ErrAbortHandler)
	}
}

func (h *handler) pull(w http.ResponseWriter, r *http.Request) {
	var req PullRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		h.fail(w, "pull image", fmt.Errorf("decode pull request: %v: %w", err, errdefs.ErrInvalidArgument))
		return
	}
	if req.Ref == "" {
		h.fail(w, "pull image", fmt.Errorf("pull request names no image: %w", errdefs.ErrInvalidArgument))
		return
	}
	var auth image.Auth
	if req.Auth != nil {
		auth = *req.Auth
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	ev := newEventWriter(w)
	img, err := h.images.Pull(r.Context(), req.Ref, auth, image.WithProgress(ev.progress))
	if err != nil {
		h.log.Error("pull image", "ref", req.Ref, "err", err)
		ev.finish(PullEvent{Error: err.Error()})
		return
	}
	h.log.Info("image pulled", "ref", req.Ref, "image", img.ID)
	ev.finish(PullEvent{ID: img.ID})
}

func (h *handler) pulls(w http.ResponseWriter, _ *http.Request) {
	ps := h.images.Pulls()
	out := make([]PullInfo, len(ps))
	for i, p := range ps {
		out[i] = NewPullInfo(p)
	}
	writeJSON(w, out)
}

// eventWriter writes a pull's JSON lines, one writer at a time, throttling
// each layer's progress reports and dropping repeats.
type eventWriter struct {
	mu   sync.Mutex
	enc  *json.Encoder
	w    http.ResponseWriter
	last map[string]sent
	done bool
}

// sent is the last report sent for one layer.
type sent struct {
	at   time.Time
	done int64
}

func newEventWriter(w http.ResponseWriter) *eventWriter {
	return &eventWriter{enc: json.NewEncoder(w), w: w, last: map[string]sent{}}
}

func (e *eventWriter) progress(p image.Progress) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return
	}
	now := time.Now()
	last, seen := e.last[p.Layer]
	if seen && (p.Done == last.done || (p.Done < p.Total && now.Sub(last.at) < progressInterval)) {
		return
	}
	e.last[p.Layer] = sent{at: now, done: p.Done}
	e.sendLocked(PullEvent{Layer: p.Layer, Done: p.Done, Total: p.Total})
}

// finish sends the last line; reports arriving later (from a download
// abandoned as the pull failed) are dropped, as the reply is over.
func (e *eventWriter) finish(ev PullEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sendLocked(ev)
	e.done = true
}

func (e *eventWriter) sendLocked(ev PullEvent) {
	_ = e.enc.Encode(ev)
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}
