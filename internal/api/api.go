package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/image"
)

// SocketName is the API socket's name in crib's state directory.
const SocketName = "api.sock"

// LoadedImage is one image a load put into the store.
type LoadedImage struct {
	ID       string   `json:"id"`
	RepoTags []string `json:"repoTags"`
}

// Loader is what the API needs of the image store.
type Loader interface {
	Load(ctx context.Context, r io.Reader) ([]image.Image, error)
}

// Handler serves the API.
func Handler(images Loader, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/images/load", func(w http.ResponseWriter, r *http.Request) {
		imgs, err := images.Load(r.Context(), r.Body)
		if err != nil {
			log.Error("load images", "err", err)
			http.Error(w, err.Error(), httpStatus(err))
			return
		}
		out := make([]LoadedImage, len(imgs))
		for i, img := range imgs {
			out[i] = LoadedImage{ID: img.ID, RepoTags: img.RepoTags}
			log.Info("image loaded", "image", img.ID, "tags", strings.Join(img.RepoTags, ","))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	return mux
}

func httpStatus(err error) int {
	switch {
	case errdefs.IsInvalidArgument(err):
		return http.StatusBadRequest
	case errdefs.IsResourceExhausted(err):
		return http.StatusRequestEntityTooLarge
	default:
		return http.StatusInternalServerError
	}
}

// Client talks to a daemon's API socket.
type Client struct {
	http *http.Client
}

// NewClient returns a client of the API at socket.
func NewClient(socket string) *Client {
	return &Client{http: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}}
}

// ErrNoDaemon says no daemon answers on the socket.
var ErrNoDaemon = errors.New("no crib daemon answers")

// LoadImages streams an image tarball to the daemon, which loads it.
func (c *Client) LoadImages(ctx context.Context, tarball io.Reader) ([]LoadedImage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://crib/v1/images/load", tarball)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := c.http.Do(req)
	if err != nil {
		var opErr *net.OpError
		if errors.As(err, &opErr) && opErr.Op == "dial" {
			return nil, fmt.Errorf("%w: %v", ErrNoDaemon, err)
		}
		return nil, fmt.Errorf("load images: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("load images: %s", strings.TrimSpace(string(msg)))
	}
	var out []LoadedImage
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("load images: decode reply: %w", err)
	}
	return out, nil
}
