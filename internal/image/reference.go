package image

import (
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/name"
)

// dockerHubHost is how images from Docker Hub are named; go-containerregistry
// calls the same registry index.docker.io.
const dockerHubHost = "docker.io"

// parseRef parses an image reference the way the kubelet and containerd
// do: a missing registry means Docker Hub, a missing namespace there means
// library/, a missing tag means latest.
func parseRef(ref string) (name.Reference, error) {
	if strings.TrimSpace(ref) == "" {
		return nil, fmt.Errorf("parse image reference: empty: %w", errdefs.ErrInvalidArgument)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("parse image reference %q: %v: %w", ref, err, errdefs.ErrInvalidArgument)
	}
	return r, nil
}

// hostOf returns the registry host as crib names it (docker.io, not
// index.docker.io).
func hostOf(repo name.Repository) string {
	h := repo.RegistryStr()
	if h == name.DefaultRegistry {
		return dockerHubHost
	}
	return h
}

// repoName returns "host/path" for a repository, e.g. docker.io/library/busybox.
func repoName(repo name.Repository) string {
	return hostOf(repo) + "/" + repo.RepositoryStr()
}

// normalize returns the canonical string of a reference:
// docker.io/library/busybox:latest or docker.io/library/busybox@sha256:...
func normalize(r name.Reference) string {
	switch r := r.(type) {
	case name.Digest:
		return repoName(r.Context()) + "@" + r.DigestStr()
	case name.Tag:
		return repoName(r.Context()) + ":" + r.TagStr()
	}
	return r.Name()
}

// Normalize parses ref and returns its canonical form; busybox becomes
// docker.io/library/busybox:latest.
func Normalize(ref string) (string, error) {
	r, err := parseRef(ref)
	if err != nil {
		return "", err
	}
	return normalize(r), nil
}

// isDigestRef reports whether a normalized name is a digest reference.
func isDigestRef(n string) bool { return strings.Contains(n, "@") }

// idHex extracts the hex part of something that looks like an image ID or
// a prefix of one: "sha256:abc..." or bare lower-case hex. ok is false for
// anything else.
func idHex(ref string) (hex string, ok bool) {
	s := strings.TrimPrefix(ref, "sha256:")
	if s == "" || len(s) > 64 {
		return "", false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	return s, true
}
