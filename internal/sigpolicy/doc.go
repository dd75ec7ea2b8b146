// Package sigpolicy decides whether an image may be pulled under a
// containers-policy.json(5) policy, the way CRI-O does: the policy's scopes
// and requirements (insecureAcceptAnything, reject, sigstoreSigned with
// keys, Fulcio and Rekor or a PKI, signedIdentity rules) are parsed and
// evaluated by go.podman.io/image/v5/signature. This package only feeds
// it: the image's manifest and its sigstore signatures, fetched by the
// caller through crib's own registry client, and a docker reference naming
// the image as the kubelet asked for it. A scope wanting signedBy (GPG
// simple signing) refuses and says why: those signatures live on a
// lookaside server crib does not read.
//
// The library's policy evaluation lives in a package that also holds its
// GPG mechanism, which needs cgo (gpgme) unless crib is built with
// -tags containers_image_openpgp (pure Go). Without that tag this package
// still builds, and a configured policy refuses every pull (fail closed).
package sigpolicy
