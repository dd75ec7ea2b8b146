//go:build containers_image_openpgp

package sigpolicy

import (
	"context"
	"errors"

	"go.podman.io/image/v5/docker/policyconfiguration"
	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/types"
)

// transportName is the transport whose scopes apply to registry images.
const transportName = "docker"

// errNotForIO: a dockerRef only names an image for the policy; crib's own
// registry client does the fetching.
var errNotForIO = errors.New("sigpolicy: reference is for policy evaluation only")

// dockerRef is an image named as the docker transport names it, so that
// the policy's docker scopes and signedIdentity rules apply to it. Scope
// identities and namespaces come from the library.
type dockerRef struct{ named reference.Named }

var _ types.ImageReference = dockerRef{}

func (r dockerRef) Transport() types.ImageTransport  { return dockerTransport{} }
func (r dockerRef) StringWithinTransport() string    { return "//" + reference.FamiliarString(r.named) }
func (r dockerRef) DockerReference() reference.Named { return r.named }
func (r dockerRef) PolicyConfigurationNamespaces() []string {
	return policyconfiguration.DockerReferenceNamespaces(r.named)
}

func (r dockerRef) PolicyConfigurationIdentity() string {
	id, err := policyconfiguration.DockerReferenceIdentity(r.named)
	if err != nil {
		// Only for a name without tag or digest, which crib never has:
		// an identity no scope can equal.
		return ""
	}
	return id
}

func (r dockerRef) NewImage(context.Context, *types.SystemContext) (types.ImageCloser, error) {
	return nil, errNotForIO
}

func (r dockerRef) NewImageSource(context.Context, *types.SystemContext) (types.ImageSource, error) {
	return nil, errNotForIO
}

func (r dockerRef) NewImageDestination(context.Context, *types.SystemContext) (types.ImageDestination, error) {
	return nil, errNotForIO
}

func (r dockerRef) DeleteImage(context.Context, *types.SystemContext) error { return errNotForIO }

type dockerTransport struct{}

func (dockerTransport) Name() string { return transportName }

func (dockerTransport) ParseReference(string) (types.ImageReference, error) { return nil, errNotForIO }

func (dockerTransport) ValidatePolicyConfigurationScope(string) error { return nil }
