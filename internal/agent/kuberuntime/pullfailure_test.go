package kuberuntime

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestPullFailure words failed pulls as the kubelet's image manager does:
// a status message starting SignatureValidationFailed is that reason, with
// the kubelet's waiting message and Failed event.
func TestPullFailure(t *testing.T) {
	const ref = "example.com/app:1"
	for _, c := range []struct {
		err                    error
		reason, waiting, event string
	}{
		{status.Error(codes.Unknown, "SignatureValidationFailed: Source image rejected: A signature was required, but no signature exists (image x)"),
			"SignatureValidationFailed",
			`image pull failed for example.com/app:1 because the signature validation failed: Source image rejected: A signature was required, but no signature exists (image x)`,
			`Failed to pull image "example.com/app:1": SignatureValidationFailed: Source image rejected: A signature was required, but no signature exists (image x)`},
		{status.Error(codes.NotFound, "manifest unknown"), "ErrImagePull",
			`Failed to pull image "example.com/app:1": rpc error: code = NotFound desc = manifest unknown`,
			`Failed to pull image "example.com/app:1": rpc error: code = NotFound desc = manifest unknown`},
		{errors.New("plain"), "ErrImagePull", `Failed to pull image "example.com/app:1": plain`, `Failed to pull image "example.com/app:1": plain`},
	} {
		reason, waiting, event := pullFailure(ref, c.err)
		if reason != c.reason || waiting != c.waiting || event != c.event {
			t.Errorf("pullFailure(%v) = %q, %q, %q; want %q, %q, %q", c.err, reason, waiting, event, c.reason, c.waiting, c.event)
		}
	}
}
