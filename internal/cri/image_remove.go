package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RemoveImage removes an image by id (with all its names) or one name of
// it. Removing an absent image succeeds. Handlers share their images, so
// a known runtime handler removes the image for every one.
func (s *Server) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, invalid("image.image is empty")
	}
	if err := checkImageSpec("image", req.GetImage()); err != nil {
		return nil, err
	}
	if err := s.checkImageHandler("image", req.GetImage()); err != nil {
		return nil, err
	}
	if err := s.images.Remove(ctx, ref); err != nil {
		return nil, err
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}
