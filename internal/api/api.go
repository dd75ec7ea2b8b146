package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/image"
)

// SocketName is the API socket's name in crib's state directory.
const SocketName = "api.sock"

// Images is what the API needs of the image store; *image.Store is one.
type Images interface {
	Load(ctx context.Context, r io.Reader) ([]image.Image, error)
	List() []image.Image
	Resolve(ref string) (image.Image, error)
	Pull(ctx context.Context, ref string, auth image.Auth, opts ...image.PullOption) (image.Image, error)
	Remove(ctx context.Context, ref string) error
	PruneImages(ctx context.Context) (image.PruneReport, error)
	Save(ctx context.Context, ref, format string, w io.Writer) error
	Pulls() []image.PullStatus
}

// Handler serves the API.
func Handler(images Images, log *slog.Logger) http.Handler {
	h := &handler{images: images, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/images/load", h.load)
	mux.HandleFunc("GET /v1/images", h.list)
	// A reference may come escaped as one segment (as Client sends it) or
	// with its slashes as they are (as curl sends it).
	mux.HandleFunc("GET /v1/images/{ref...}", h.inspect)
	mux.HandleFunc("GET /v1/images/{ref}/save", h.save)
	mux.HandleFunc("POST /v1/images/pull", h.pull)
	mux.HandleFunc("DELETE /v1/images/{ref...}", h.remove)
	mux.HandleFunc("POST /v1/images/prune", h.prune)
	mux.HandleFunc("GET /v1/pulls", h.pulls)
	return mux
}

type handler struct {
	images Images
	log    *slog.Logger
}

func (h *handler) fail(w http.ResponseWriter, what string, err error) {
	h.log.Error(what, "err", err)
	http.Error(w, err.Error(), httpStatus(err))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func httpStatus(err error) int {
	switch {
	case errdefs.IsInvalidArgument(err):
		return http.StatusBadRequest
	case errdefs.IsNotFound(err):
		return http.StatusNotFound
	case errdefs.IsFailedPrecondition(err), errdefs.IsAlreadyExists(err):
		return http.StatusConflict
	case errdefs.IsResourceExhausted(err):
		return http.StatusRequestEntityTooLarge
	case errdefs.IsUnavailable(err):
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}
