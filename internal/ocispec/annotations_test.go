package ocispec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestAnnotations(t *testing.T) {
	in := Input{
		SandboxID: "sb",
		Container: &runtimeapi.ContainerConfig{
			Metadata:    &runtimeapi.ContainerMetadata{Name: "c"},
			Image:       &runtimeapi.ImageSpec{Image: "sha256:1"},
			Annotations: map[string]string{"a": "1", AnnotationContainerType: "spoofed"},
		},
		Sandbox: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u"}},
	}
	want := map[string]string{
		"a":                        "1",
		AnnotationContainerType:    "container",
		AnnotationContainerName:    "c",
		AnnotationSandboxID:        "sb",
		AnnotationSandboxName:      "p",
		AnnotationSandboxNamespace: "ns",
		AnnotationSandboxUID:       "u",
		AnnotationImageName:        "sha256:1",
	}
	if diff := cmp.Diff(want, annotations(in)); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}
