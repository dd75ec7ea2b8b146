//go:build !containers_image_openpgp

package sigpolicy

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
)

// Built reports whether this build can verify signatures.
const Built = false

// evaluate refuses: this build cannot verify signatures (see the package
// documentation), and a configured policy must not be ignored.
func evaluate(context.Context, string, string, Image) (Decision, error) {
	return Decision{}, fmt.Errorf("crib was built without signature verification (go build -tags containers_image_openpgp): %w", errdefs.ErrFailedPrecondition)
}
