// Package crivalidate holds the checks that CRI requests share: names,
// labels and annotations bounded as the API server bounds them, enums
// inside their range, clean paths, sysctls a pod may set, resources the
// kernel takes. Each check is pure and names the offending field in an
// InvalidArgument error, so that a request is refused whole before
// anything is made for it.
package crivalidate

import (
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
)

// Bounds of a request's strings.
const (
	// MaxNameLen bounds metadata names, namespaces and uids: the API
	// server's longest object name (a DNS subdomain).
	MaxNameLen = 253
	// MaxLabelValueLen bounds a label's value. The API server allows 63
	// bytes, but the kubelet puts the pod's name, up to 253, in a label.
	MaxLabelValueLen = 253
	// MaxPathLen is the kernel's PATH_MAX.
	MaxPathLen = 4096
	// MaxArgLen is the kernel's MAX_ARG_STRLEN: a longer argument or
	// environment string makes execve fail with E2BIG.
	MaxArgLen = 128 << 10
	// MaxArgsTotal bounds a process's arguments and environment together:
	// execve refuses more than a quarter of the stack limit and never more
	// than 6 MiB, whatever the limit.
	MaxArgsTotal = 6 << 20
	// MaxStrings bounds short lists (DNS servers, search domains,
	// capabilities, masked paths, ...) far above what any pod needs.
	MaxStrings = 1024
)

// Invalid is an InvalidArgument error about field.
func Invalid(field, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", field, fmt.Sprintf(format, args...), errdefs.ErrInvalidArgument)
}

// Name checks a metadata name, namespace or uid: required when asked,
// at most MaxNameLen bytes, no control characters.
func Name(field, v string, required bool) error {
	switch {
	case v == "" && required:
		return Invalid(field, "is empty")
	case len(v) > MaxNameLen:
		return Invalid(field, "%d bytes, more than %d", len(v), MaxNameLen)
	case hasControl(v):
		return Invalid(field, "%q has a control character", v)
	}
	return nil
}

// String checks a free string: at most max bytes, no NUL (which no file
// name, argument or kernel string can carry).
func String(field, v string, max int) error {
	switch {
	case len(v) > max:
		return Invalid(field, "%d bytes, more than %d", len(v), max)
	case strings.IndexByte(v, 0) >= 0:
		return Invalid(field, "has a NUL byte")
	}
	return nil
}

// Strings checks a short list: at most MaxStrings items of at most max
// bytes each.
func Strings(field string, vs []string, max int) error {
	if len(vs) > MaxStrings {
		return Invalid(field, "%d items, more than %d", len(vs), MaxStrings)
	}
	for i, v := range vs {
		if err := String(fmt.Sprintf("%s[%d]", field, i), v, max); err != nil {
			return err
		}
	}
	return nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

// Enum checks that v is one of the values its protobuf enum names: an
// unknown value is refused rather than taken as a default.
func Enum[T ~int32](field string, v T, names map[int32]string) error {
	if _, ok := names[int32(v)]; !ok {
		return Invalid(field, "%d is not a known value", int32(v))
	}
	return nil
}
