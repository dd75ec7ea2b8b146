// Package ids makes the ids of sandboxes and containers and finds objects
// by id or unique id prefix, as crictl and the kubelet's users type them.
package ids

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
)

// New returns a random 64-hex-digit id.
func New() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Find returns the value of byID whose id is id or starts with it. kind
// names the object in errors: an empty id or an ambiguous prefix is
// errdefs.ErrInvalidArgument, no match errdefs.ErrNotFound.
func Find[V any](byID map[string]V, id, kind string) (V, error) {
	var zero V
	if id == "" {
		return zero, fmt.Errorf("%s id is empty: %w", kind, errdefs.ErrInvalidArgument)
	}
	if v, ok := byID[id]; ok {
		return v, nil
	}
	var match V
	found := false
	for full, v := range byID {
		if strings.HasPrefix(full, id) {
			if found {
				return zero, fmt.Errorf("%s id prefix %q is ambiguous: %w", kind, id, errdefs.ErrInvalidArgument)
			}
			match, found = v, true
		}
	}
	if !found {
		return zero, fmt.Errorf("%s %s: %w", kind, id, errdefs.ErrNotFound)
	}
	return match, nil
}
