package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListImages lists the images in the store, optionally only the one a
// filter names.
func (s *Server) ListImages(_ context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	resp := &runtimeapi.ListImagesResponse{}
	if ref := req.GetFilter().GetImage().GetImage(); ref != "" {
		img, err := s.images.Resolve(ref)
		if err == nil {
			resp.Images = append(resp.Images, criImage(img))
		}
		return resp, nil
	}
	for _, img := range s.images.List() {
		resp.Images = append(resp.Images, criImage(img))
	}
	return resp, nil
}
