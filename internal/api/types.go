package api

import (
	"time"

	imagespec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/crib-dev/crib/internal/image"
)

// ImageInfo is one image as GET /v1/images and GET /v1/images/{ref} show it.
type ImageInfo struct {
	ID       string           `json:"id"`
	Tags     []string         `json:"tags"`
	Digests  []string         `json:"digests"`
	Size     int64            `json:"size"`
	Pinned   bool             `json:"pinned"`
	Config   *imagespec.Image `json:"config,omitempty"`
	ChainIDs []string         `json:"chainIDs,omitempty"`
}

// NewImageInfo describes img; full adds its configuration and chain IDs,
// as inspect shows them.
func NewImageInfo(img image.Image, full bool) ImageInfo {
	info := ImageInfo{
		ID:      img.ID,
		Tags:    nonNil(img.RepoTags),
		Digests: nonNil(img.RepoDigests),
		Size:    img.Size,
		Pinned:  img.Pinned,
	}
	if full {
		cfg := img.Config
		info.Config = &cfg
		info.ChainIDs = nonNil(img.ChainIDs)
	}
	return info
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// PullRequest is the body of POST /v1/images/pull.
type PullRequest struct {
	Ref  string      `json:"ref"`
	Auth *image.Auth `json:"auth,omitempty"`
}

// PullEvent is one JSON line of a pull's reply: progress of a layer, or
// the final line, which carries ID on success or Error on failure.
type PullEvent struct {
	Layer string `json:"layer,omitempty"`
	Done  int64  `json:"done,omitempty"`
	Total int64  `json:"total,omitempty"`
	ID    string `json:"id,omitempty"`
	Error string `json:"error,omitempty"`
}

// PullInfo is one pull in flight as GET /v1/pulls shows it: pulls the
// CRI's PullImage started as well as the API's own.
type PullInfo struct {
	// Ref is the normalized reference being pulled.
	Ref     string    `json:"ref"`
	Started time.Time `json:"started"`
	// Waiters counts the callers sharing the pull.
	Waiters int `json:"waiters"`
	// Done and Total sum the layers' bytes; Total counts every layer of
	// the manifest once it is read (0 before).
	Done   int64           `json:"done"`
	Total  int64           `json:"total"`
	Layers []LayerProgress `json:"layers"`
}

// LayerProgress is one layer blob of a pull in flight.
type LayerProgress struct {
	Digest string `json:"digest"`
	Done   int64  `json:"done"`
	Total  int64  `json:"total"`
}

// NewPullInfo describes a pull in flight.
func NewPullInfo(p image.PullStatus) PullInfo {
	info := PullInfo{Ref: p.Ref, Started: p.Started, Waiters: p.Waiters, Layers: make([]LayerProgress, len(p.Layers))}
	info.Done, info.Total = p.Bytes()
	for i, l := range p.Layers {
		info.Layers[i] = LayerProgress{Digest: l.Layer, Done: l.Done, Total: l.Total}
	}
	return info
}

// PruneResult is the reply of POST /v1/images/prune.
type PruneResult struct {
	Removed    []string `json:"removed"`
	BytesFreed uint64   `json:"bytesFreed"`
}
