package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/image"
)

// PullImage pulls an image and returns its id.
func (s *Server) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, invalid("image.image is empty")
	}
	a := req.GetAuth()
	img, err := s.images.Pull(ctx, ref, image.Auth{
		Username:      a.GetUsername(),
		Password:      a.GetPassword(),
		Auth:          a.GetAuth(),
		IdentityToken: a.GetIdentityToken(),
		RegistryToken: a.GetRegistryToken(),
	})
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PullImageResponse{ImageRef: img.ID}, nil
}
