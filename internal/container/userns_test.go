package container

import (
	"errors"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/ocispec"
	"github.com/crib-dev/crib/internal/sandbox"
)

func TestUserNamespaceOfContainer(t *testing.T) {
	mapping := []*runtimeapi.IDMapping{{ContainerId: 0, HostId: 1 << 16, Length: 1 << 16}}
	podOpts := &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: mapping, Gids: mapping}
	sandboxWith := func(opts *runtimeapi.UserNamespace, path string) sandbox.Sandbox {
		return sandbox.Sandbox{UserNS: path, Config: &runtimeapi.PodSandboxConfig{Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{UsernsOptions: opts}},
		}}}
	}
	own := sandboxWith(podOpts, "/run/crib/sandboxes/x/ns/user")
	node := &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}
	other := &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: mapping[:0], Gids: mapping}
	want := &ocispec.UserNamespace{
		Path: "/run/crib/sandboxes/x/ns/user",
		UIDs: []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1 << 16, Size: 1 << 16}},
		GIDs: []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1 << 16, Size: 1 << 16}},
	}
	tests := []struct {
		name    string
		sb      sandbox.Sandbox
		opts    *runtimeapi.UserNamespace
		want    *ocispec.UserNamespace
		wantErr bool
	}{
		{name: "pod's own, container says the same", sb: own, opts: podOpts, want: want},
		{name: "pod's own, container says nothing", sb: own, want: want},
		{name: "pod's own, container asks for the host's", sb: own, opts: node, wantErr: true},
		{name: "pod's own, container asks for other ids", sb: own, opts: other, wantErr: true},
		{name: "host users, as the kubelet sends them", sb: sandboxWith(node, ""), opts: node},
		{name: "host users, pod says nothing, container NODE", sb: sandboxWith(nil, ""), opts: node},
		{name: "host users, container asks for its own", sb: sandboxWith(node, ""), opts: podOpts, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := userNamespace(tt.sb, tt.opts)
			if tt.wantErr {
				if !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Fatalf("err = %v, want InvalidArgument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("user namespace (-want +got):\n%s", diff)
			}
		})
	}
}
