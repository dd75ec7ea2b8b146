package cri

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ImageFsInfo reports the bytes and inodes the image store uses.
func (s *Server) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	u, err := s.images.FsInfo()
	if err != nil {
		return nil, err
	}
	fs := &runtimeapi.FilesystemUsage{
		Timestamp:  time.Now().UnixNano(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: u.Mountpoint},
		UsedBytes:  &runtimeapi.UInt64Value{Value: u.UsedBytes},
		InodesUsed: &runtimeapi.UInt64Value{Value: u.InodesUsed},
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{fs}}, nil
}
