package cri

import (
	"context"
	"encoding/json"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ImageStatus reports an image, or a nil image when it is absent; the
// image's spec names the runtime handler asked about, which any handler's
// image is.
func (s *Server) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
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
	img, err := s.images.Resolve(ref)
	if errdefs.IsNotFound(err) {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ImageStatusResponse{Image: criImage(img, req.GetImage().GetRuntimeHandler())}
	if req.GetVerbose() {
		info, err := json.Marshal(map[string]any{"imageSpec": img.Config, "chainIDs": img.ChainIDs})
		if err != nil {
			return nil, err
		}
		resp.Info = map[string]string{"info": string(info)}
	}
	return resp, nil
}
