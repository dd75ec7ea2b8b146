package kernelstats

import (
	"testing"

	"github.com/containerd/errdefs"
)

func TestGroupPath(t *testing.T) {
	tests := []struct {
		in      string
		systemd bool
		want    string
		wantErr bool
	}{
		{in: "/crib/pod/ctr", want: "/crib/pod/ctr"},
		{in: "kubepods/besteffort/pod1/ctr", want: "/kubepods/besteffort/pod1/ctr"},
		{in: "/a/../b//c/", want: "/b/c"},
		{in: "", wantErr: true},
		{in: "x.slice:crib:id", wantErr: true},
		{in: "kubepods-besteffort-pod1.slice:crib:abc", systemd: true,
			want: "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/crib-abc.scope"},
		{in: ":crib:abc", systemd: true, want: "/system.slice/crib-abc.scope"},
		{in: "a.slice::abc", systemd: true, want: "/a.slice/abc.scope"},
		{in: "a.slice:crib:b-c.slice", systemd: true, want: "/a.slice/b-c.slice"},
		{in: "a.slice:crib:", systemd: true, wantErr: true},
		{in: "crib-0123456789ab.slice", systemd: true, want: "/crib.slice/crib-0123456789ab.slice"},
		{in: "-.slice", systemd: true, want: "/"},
		{in: "/crib/pod", systemd: true, want: "/crib/pod"},
		{in: "bad--name.slice:p:x", systemd: true, wantErr: true},
		{in: "-bad.slice:p:x", systemd: true, wantErr: true},
		{in: "notaslice:p:x", systemd: true, wantErr: true},
	}
	for _, tt := range tests {
		got, err := GroupPath(tt.in, tt.systemd)
		if tt.wantErr {
			if !errdefs.IsInvalidArgument(err) {
				t.Errorf("GroupPath(%q, %v) = %q, %v; want an invalid argument", tt.in, tt.systemd, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("GroupPath(%q, %v) = %q, %v; want %q", tt.in, tt.systemd, got, err, tt.want)
		}
	}
}
