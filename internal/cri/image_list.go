package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListImages lists the images in the store, optionally only the one a
// filter names. Each image is listed once, for no handler in particular
// (the kubelet's image GC matches that with its containers' images, which
// name none), or for the handler the filter names.
func (s *Server) ListImages(_ context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	if err := checkImageSpec("filter.image", req.GetFilter().GetImage()); err != nil {
		return nil, err
	}
	if err := s.checkImageHandler("filter.image", req.GetFilter().GetImage()); err != nil {
		return nil, err
	}
	resp := &runtimeapi.ListImagesResponse{}
	if ref := req.GetFilter().GetImage().GetImage(); ref != "" {
		img, err := s.images.Resolve(ref)
		if err == nil {
			resp.Images = append(resp.Images, criImage(img, req.GetFilter().GetImage().GetRuntimeHandler()))
		}
		return resp, nil
	}
	for _, img := range s.images.List() {
		resp.Images = append(resp.Images, criImage(img, ""))
	}
	return resp, nil
}

// StreamImages is ListImages sent in chunks (KEP-5825).
func (s *Server) StreamImages(req *runtimeapi.StreamImagesRequest, stream runtimeapi.ImageService_StreamImagesServer) error {
	list, err := s.ListImages(stream.Context(), &runtimeapi.ListImagesRequest{Filter: req.GetFilter()})
	if err != nil {
		return err
	}
	return sendChunks(list.Images, func(i []*runtimeapi.Image) error {
		return stream.Send(&runtimeapi.StreamImagesResponse{Images: i})
	})
}
