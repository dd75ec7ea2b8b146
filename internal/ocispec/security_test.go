package ocispec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestMaskedPathsAreTheCRIs builds from configs that went over the wire, as
// the kubelet sends them: its default lists for procMount Default, empty
// ones for Unmasked (which arrive as none). Only the lists sent are used.
func TestMaskedPathsAreTheCRIs(t *testing.T) {
	tests := []struct {
		name                  string
		masked, readonly      []string
		wantMasked, wantROnly []string
	}{
		{name: "Default", masked: kubeletMaskedPaths, readonly: kubeletReadonlyPaths, wantMasked: kubeletMaskedPaths, wantROnly: kubeletReadonlyPaths},
		{name: "Unmasked", masked: []string{}, readonly: []string{}},
		{name: "only masked", masked: []string{"/proc/kcore"}, wantMasked: []string{"/proc/kcore"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			in := f.input()
			sc := in.Container.Linux.SecurityContext
			sc.MaskedPaths, sc.ReadonlyPaths = tt.masked, tt.readonly
			wire, err := proto.Marshal(in.Container)
			if err != nil {
				t.Fatal(err)
			}
			in.Container = &runtimeapi.ContainerConfig{}
			if err := proto.Unmarshal(wire, in.Container); err != nil {
				t.Fatal(err)
			}
			spec, err := Build(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantMasked, spec.Linux.MaskedPaths); diff != "" {
				t.Errorf("masked paths (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantROnly, spec.Linux.ReadonlyPaths); diff != "" {
				t.Errorf("read-only paths (-want +got):\n%s", diff)
			}
		})
	}
}
