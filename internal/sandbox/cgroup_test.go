package sandbox

import (
	"testing"

	"github.com/containerd/errdefs"
)

func TestPodCgroup(t *testing.T) {
	const id = "0123456789abcdef0123"
	tests := []struct {
		driver, parent, kubelet string
		want                    string
		own                     bool
		invalid                 bool
	}{
		{driver: "cgroupfs", parent: "/crib", want: "/crib/" + id, own: true},
		{driver: "cgroupfs", parent: "/crib", kubelet: "/kubepods/pod1", want: "/kubepods/pod1"},
		{driver: "systemd", want: "crib-0123456789ab.slice", own: true},
		// The default parent under systemd: the pod's slice nests in it.
		{driver: "systemd", parent: "crib.slice", want: "crib-0123456789ab.slice", own: true},
		{driver: "systemd", parent: "node.slice", want: "node-0123456789ab.slice", own: true},
		{driver: "systemd", kubelet: "kubepods-besteffort-pod1.slice", want: "kubepods-besteffort-pod1.slice"},
		// critest sends a path to a slice; containerd and CRI-O take its last element.
		{driver: "systemd", kubelet: "/test.slice", want: "test.slice"},
		{driver: "systemd", kubelet: "/kubepods/pod1", invalid: true},
		{driver: "systemd", kubelet: "-bad.slice", invalid: true},
	}
	for _, tt := range tests {
		m := &Manager{cfg: Config{CgroupDriver: tt.driver, CgroupParent: tt.parent}}
		got, own, err := m.podCgroup(tt.kubelet, id)
		if tt.invalid {
			if !errdefs.IsInvalidArgument(err) {
				t.Errorf("%s, kubelet parent %q: err = %v, want InvalidArgument", tt.driver, tt.kubelet, err)
			}
			continue
		}
		if err != nil || got != tt.want || own != tt.own {
			t.Errorf("%s, parent %q, kubelet parent %q = %q, %v, %v; want %q, %v", tt.driver, tt.parent, tt.kubelet, got, own, err, tt.want, tt.own)
		}
	}
}
