package api

import (
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

// PruneResult is the reply of POST /v1/images/prune.
type PruneResult struct {
	Removed    []string `json:"removed"`
	BytesFreed uint64   `json:"bytesFreed"`
}
