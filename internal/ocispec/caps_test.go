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
		host       HostCaps
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
			name: "add all drop some",
			caps: &runtimeapi.Capability{AddCapabilities: []string{"ALL"}, DropCapabilities: []string{"SYS_ADMIN", "CAP_NET_RAW"}},
			host: HostCaps{Last: 12},
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
			host:       HostCaps{Last: 3},
			caps:       &runtimeapi.Capability{DropCapabilities: []string{"ALL"}},
			want:       []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER"},
		},
		{
			name:       "privileged shrinks to the host's set",
			privileged: true,
			host:       HostCaps{Last: 40, Mask: 1<<0 | 1<<21 | 1<<40},
			want:       []string{"CAP_CHOWN", "CAP_SYS_ADMIN", "CAP_CHECKPOINT_RESTORE"},
		},
		{
			name: "add all shrinks to the host's set",
			caps: &runtimeapi.Capability{AddCapabilities: []string{"ALL"}},
			host: HostCaps{Mask: 1<<5 | 1<<24},
			want: []string{"CAP_KILL", "CAP_SYS_RESOURCE"},
		},
		{name: "unknown drop", caps: &runtimeapi.Capability{DropCapabilities: []string{"CAP_NOPE"}}, wantErr: true},
		{name: "ambient all", caps: &runtimeapi.Capability{AddAmbientCapabilities: []string{"ALL"}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Capabilities(tt.caps, tt.privileged, tt.host)
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
	got, err := Capabilities(nil, true, HostCaps{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Bounding) != len(capNames) || got.Bounding[40] != "CAP_CHECKPOINT_RESTORE" {
		t.Errorf("bounding = %v, want all %d capabilities", got.Bounding, len(capNames))
	}
}

func TestCapabilitiesUnavailableAdd(t *testing.T) {
	// Like this machine: no CAP_SYS_RESOURCE (bit 24), and a kernel that
	// stops at 39.
	host := HostCaps{Last: 39, Mask: 0x000001fffeffffff}
	for _, c := range []*runtimeapi.Capability{
		{AddCapabilities: []string{"SYS_RESOURCE"}},
		{AddAmbientCapabilities: []string{"CAP_SYS_RESOURCE"}},
		{AddCapabilities: []string{"CAP_CHECKPOINT_RESTORE"}, DropCapabilities: []string{"ALL"}},
	} {
		_, err := Capabilities(c, false, host)
		if !errors.Is(err, errdefs.ErrFailedPrecondition) {
			t.Errorf("Capabilities(%v) err = %v, want failed precondition", c, err)
		}
	}
}

func TestParseCapEff(t *testing.T) {
	got, err := parseCapEff([]byte("Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001fffeffffff\nCapBnd:\t0\n"))
	if err != nil || got != 0x000001fffeffffff {
		t.Errorf("parseCapEff = %x, %v", got, err)
	}
	if _, err := parseCapEff([]byte("Name:\tx\n")); err == nil {
		t.Error("parseCapEff without CapEff: want error")
	}
}
