package cri

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestRequestsCheckedAtTheEdge sends requests the edge must refuse before
// calling anything: the Server has no managers, so one that got through
// would panic.
func TestRequestsCheckedAtTheEdge(t *testing.T) {
	s := &Server{}
	ctx := context.Background()
	long := strings.Repeat("x", 300)
	tests := []struct {
		name  string
		call  func() error
		field string
	}{
		{"ExecSync without a command", func() error {
			_, err := s.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: "abc"})
			return err
		}, "cmd"},
		{"ExecSync with an argument over execve's bound", func() error {
			_, err := s.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: "abc", Cmd: []string{"sh", strings.Repeat("a", 128<<10+1)}})
			return err
		}, "cmd[1]"},
		{"ExecSync with a long id", func() error {
			_, err := s.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: long, Cmd: []string{"ls"}})
			return err
		}, "container_id"},
		{"Exec with a NUL in its command", func() error {
			_, err := s.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: "abc", Cmd: []string{"l\x00s"}, Stdout: true})
			return err
		}, "cmd[0]"},
		{"Attach without an id", func() error {
			_, err := s.Attach(ctx, &runtimeapi.AttachRequest{Stdout: true})
			return err
		}, "container_id"},
		{"PortForward to port 0", func() error {
			_, err := s.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: "abc", Port: []int32{80, 0}})
			return err
		}, "port[1]"},
		{"UpdateContainerResources with a negative limit", func() error {
			_, err := s.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{
				ContainerId: "abc", Linux: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: -5}})
			return err
		}, "linux.memory_limit_in_bytes"},
		{"UpdateRuntimeConfig with a long CIDR", func() error {
			_, err := s.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: &runtimeapi.RuntimeConfig{
				NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: long}}})
			return err
		}, "runtime_config.network_config.pod_cidr"},
		{"PullImage with a NUL in the password", func() error {
			_, err := s.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"},
				Auth: &runtimeapi.AuthConfig{Password: "a\x00"}})
			return err
		}, "auth.password"},
		{"PullImage with a huge reference", func() error {
			_, err := s.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: strings.Repeat("a", 5000)}})
			return err
		}, "image.image"},
		{"ImageStatus with a bad annotation", func() error {
			_, err := s.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "a", Annotations: map[string]string{"-": ""}}})
			return err
		}, "image.annotations"},
		{"ListContainers by an unknown state", func() error {
			_, err := s.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
				State: &runtimeapi.ContainerStateValue{State: 7}}})
			return err
		}, "filter.state.state"},
		{"ListPodSandbox by an unknown state", func() error {
			_, err := s.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
				State: &runtimeapi.PodSandboxStateValue{State: -1}}})
			return err
		}, "filter.state.state"},
		{"ListContainerStats by a bad label", func() error {
			_, err := s.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: &runtimeapi.ContainerStatsFilter{
				LabelSelector: map[string]string{"a b": "c"}}})
			return err
		}, "filter.label_selector"},
		{"ListPodSandboxStats by a long id", func() error {
			_, err := s.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: &runtimeapi.PodSandboxStatsFilter{Id: long}})
			return err
		}, "filter.id"},
	}
	for _, tt := range tests {
		err := tt.call()
		if !errdefs.IsInvalidArgument(err) || !strings.HasPrefix(err.Error(), tt.field) {
			t.Errorf("%s: %v, want InvalidArgument naming %s", tt.name, err, tt.field)
		}
	}
}

func TestSecondsTimeout(t *testing.T) {
	for v, want := range map[int64]time.Duration{0: 0, 1: time.Second, 3600: time.Hour} {
		if got, err := seconds("timeout", v); err != nil || got != want {
			t.Errorf("seconds(%d) = %v, %v; want %v", v, got, err, want)
		}
	}
	// Beyond a Duration, v seconds would wrap: refused, naming the field.
	for _, v := range []int64{-1, math.MaxInt64 / int64(time.Second) * 2, math.MaxInt64} {
		if _, err := seconds("timeout", v); !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "timeout") {
			t.Errorf("seconds(%d) = %v, want InvalidArgument naming timeout", v, err)
		}
	}
}
