package ocispec

import "maps"

// Annotation keys crib sets on every container spec, the ones containerd
// uses so that tools reading OCI state understand crib's containers too.
const (
	AnnotationContainerType    = "io.kubernetes.cri.container-type"
	AnnotationContainerName    = "io.kubernetes.cri.container-name"
	AnnotationSandboxID        = "io.kubernetes.cri.sandbox-id"
	AnnotationSandboxName      = "io.kubernetes.cri.sandbox-name"
	AnnotationSandboxNamespace = "io.kubernetes.cri.sandbox-namespace"
	AnnotationSandboxUID       = "io.kubernetes.cri.sandbox-uid"
	AnnotationImageName        = "io.kubernetes.cri.image-name"
	ContainerTypeContainer     = "container"
)

// annotations returns the CRI container annotations plus crib's own keys,
// which win over CRI annotations of the same name.
func annotations(in Input) map[string]string {
	out := maps.Clone(in.Container.GetAnnotations())
	if out == nil {
		out = map[string]string{}
	}
	md := in.Sandbox.GetMetadata()
	image := in.Container.GetImage().GetUserSpecifiedImage()
	if image == "" {
		image = in.Container.GetImage().GetImage()
	}
	out[AnnotationContainerType] = ContainerTypeContainer
	out[AnnotationContainerName] = in.Container.GetMetadata().GetName()
	out[AnnotationSandboxID] = in.SandboxID
	out[AnnotationSandboxName] = md.GetName()
	out[AnnotationSandboxNamespace] = md.GetNamespace()
	out[AnnotationSandboxUID] = md.GetUid()
	out[AnnotationImageName] = image
	return out
}
