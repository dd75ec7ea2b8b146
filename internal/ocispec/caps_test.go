package ocispec

import (
	"errors"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestCapabilities(t *testing.T) {
	tests := []struct {
		name       string
		caps       *runtimeapi.Capability
		privileged bool
		capLast    int
		want       []string // bounding set
		wantAmb    []string
		wantErr    bool
	}{
		{
			name: "defaults in number order",
			want: []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID",
				"CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_NET_RAW", "CAP_SYS_CHROOT", "CAP_MKNOD",
				"CAP_AUDIT_WRITE", "CAP_SETFCAP"},
		},
		{
			name: "drop all then add some, any spelling",
			caps: &runtimeapi.Capability{DropCapabilities: []string{"all"}, AddCapabilities: []string{"net_admin", "CAP_KILL", "Sys_Time"}},
			want: []string{"CAP_KILL", "CAP_NET_ADMIN", "CAP_SYS_TIME"},
		},
		{
			name:    "add all drop some",
			caps:    &runtimeapi.Capability{AddCapabilities: []string{"ALL"}, DropCapabilities: []string{"SYS_ADMIN", "CAP_NET_RAW"}},
			capLast: 12,
			want: []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
				"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
				"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN"},
		},
		{
			name: "drop beats add",
			caps: &runtimeapi.Capability{DropCapabilities: []string{"ALL", "NET_ADMIN"}, AddCapabilities: []string{"NET_ADMIN", "CHOWN"}},
			want: []string{"CAP_CHOWN"},
		},
		{
			name: "add all and drop all leaves nothing",
			caps: &runtimeapi.Capability{DropCapabilities: []string{"ALL"}, AddCapabilities: []string{"ALL"}},
			want: []string{},
		},
		{
			name:    "ambient capabilities are raised everywhere",
			caps:    &runtimeapi.Capability{DropCapabilities: []string{"ALL"}, AddAmbientCapabilities: []string{"NET_BIND_SERVICE"}},
			want:    []string{"CAP_NET_BIND_SERVICE"},
			wantAmb: []string{"CAP_NET_BIND_SERVICE"},
		},
		{
			name:       "privileged gets everything the kernel knows, add/drop ignored",
			privileged: true,
			capLast:    3,
			caps:       &runtimeapi.Capability{DropCapabilities: []string{"ALL"}},
			want:       []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER"},
		},
		{name: "unknown drop", caps: &runtimeapi.Capability{DropCapabilities: []string{"CAP_NOPE"}}, wantErr: true},
		{name: "ambient all", caps: &runtimeapi.Capability{AddAmbientCapabilities: []string{"ALL"}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Capabilities(tt.caps, tt.privileged, tt.capLast)
			if tt.wantErr {
				if !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Fatalf("err = %v, want invalid argument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for set, v := range map[string][]string{"bounding": got.Bounding, "effective": got.Effective, "permitted": got.Permitted} {
				if diff := cmp.Diff(tt.want, v); diff != "" {
					t.Errorf("%s (-want +got):\n%s", set, diff)
				}
			}
			if diff := cmp.Diff(tt.wantAmb, got.Ambient); diff != "" {
				t.Errorf("ambient (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantAmb, got.Inheritable); diff != "" {
				t.Errorf("inheritable (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrivilegedFullCapSet(t *testing.T) {
	got, err := Capabilities(nil, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Bounding) != len(capNames) || got.Bounding[40] != "CAP_CHECKPOINT_RESTORE" {
		t.Errorf("bounding = %v, want all %d capabilities", got.Bounding, len(capNames))
	}
}
