package sandbox

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/netns"
)

func TestUserNamespace(t *testing.T) {
	one := func(c, h, l uint32) []*runtimeapi.IDMapping {
		return []*runtimeapi.IDMapping{{ContainerId: c, HostId: h, Length: l}}
	}
	pod := func(uids, gids []*runtimeapi.IDMapping) *runtimeapi.NamespaceOption {
		return &runtimeapi.NamespaceOption{UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: uids, Gids: gids}}
	}
	good := one(0, 1<<16, 1<<16)
	tests := []struct {
		name    string
		ns      *runtimeapi.NamespaceOption
		want    *netns.UserNS
		wantErr string // a field or phrase the InvalidArgument error names
	}{
		{name: "no options", ns: nil},
		{name: "no userns options", ns: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}},
		{name: "NODE", ns: &runtimeapi.NamespaceOption{UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}}},
		{name: "POD", ns: pod(good, one(0, 2<<16, 1<<16)), want: &netns.UserNS{
			UIDs: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1 << 16, Size: 1 << 16}},
			GIDs: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 2 << 16, Size: 1 << 16}},
		}},
		{name: "POD as critest maps it", ns: pod(one(0, 1000, 100000), one(0, 1000, 100000)), want: &netns.UserNS{
			UIDs: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1000, Size: 100000}},
			GIDs: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1000, Size: 100000}},
		}},
		{name: "NODE with mappings", ns: &runtimeapi.NamespaceOption{UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE, Uids: good, Gids: good}}, wantErr: "mode NODE takes no uids"},
		{name: "CONTAINER", ns: &runtimeapi.NamespaceOption{UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_CONTAINER}}, wantErr: "userns_options.mode CONTAINER"},
		{name: "TARGET", ns: &runtimeapi.NamespaceOption{UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_TARGET}}, wantErr: "userns_options.mode TARGET"},
		{name: "unknown mode", ns: &runtimeapi.NamespaceOption{UsernsOptions: &runtimeapi.UserNamespace{Mode: 42}}, wantErr: "userns_options.mode 42"},
		{name: "no uids", ns: pod(nil, good), wantErr: "uids: 0 ranges"},
		{name: "no gids", ns: pod(good, nil), wantErr: "gids: 0 ranges"},
		{name: "two ranges", ns: pod(append(one(0, 1000, 10), one(10, 5000, 10)...), good), wantErr: "uids: 2 ranges"},
		{name: "container id 0 unmapped", ns: pod(one(1, 1000, 100000), good), wantErr: "uids[0].container_id is 1"},
		{name: "zero length", ns: pod(good, one(0, 1000, 0)), wantErr: "gids[0].length is 0"},
		{name: "host root mapped", ns: pod(one(0, 0, 1<<16), good), wantErr: "uids[0].host_id is 0"},
		{name: "overflow", ns: pod(one(0, 1<<31, 1<<31), good), wantErr: "overflows"},
		{name: "up to the last id", ns: pod(one(0, 1<<31, 1<<31-1), good), want: &netns.UserNS{
			UIDs: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1 << 31, Size: 1<<31 - 1}},
			GIDs: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1 << 16, Size: 1 << 16}},
		}},
		{name: "host network", ns: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, UsernsOptions: pod(good, good).UsernsOptions}, want: &netns.UserNS{
			UIDs: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1 << 16, Size: 1 << 16}},
			GIDs: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1 << 16, Size: 1 << 16}},
		}},
		{name: "host IPC", ns: &runtimeapi.NamespaceOption{Ipc: runtimeapi.NamespaceMode_NODE, UsernsOptions: pod(good, good).UsernsOptions}, wantErr: "namespace_options.ipc is NODE"},
		{name: "host PID", ns: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_NODE, UsernsOptions: pod(good, good).UsernsOptions}, wantErr: "namespace_options.pid is NODE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := UserNamespace(tt.ns)
			if tt.wantErr != "" {
				if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want InvalidArgument naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mapping (-want +got):\n%s", diff)
			}
		})
	}
}
