package image

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/opencontainers/go-digest"
	imagespec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/crib-dev/crib/internal/sigpolicy"
)

const (
	// cosignSignatureType is the media type of a layer holding a cosign
	// simple-signing payload, and cosignArtifactType the artifact type of
	// a signature manifest attached as an OCI 1.1 referrer.
	cosignSignatureType = "application/vnd.dev.cosign.simplesigning.v1+json"
	cosignArtifactType  = "application/vnd.dev.cosign.artifact.sig.v1+json"
	// maxSignatureManifests and maxSignaturesPerManifest bound what one
	// image's signatures may make a pull fetch; maxPayload bounds a payload.
	maxSignatureManifests    = 16
	maxSignaturesPerManifest = 16
	maxPayload               = 1 << 20
)

// verifies reports whether pulls are checked against a signature policy.
func (s *Store) verifies() bool {
	return s.sigs.Enabled()
}

// SetSignaturePolicy replaces the signature policy configuration; pulls
// that start afterwards use it. The policy files themselves are read at
// each pull.
func (s *Store) SetSignaturePolicy(cfg sigpolicy.Config) {
	s.sigs.Set(cfg)
}

// verify checks the manifest (or index) top that ep served for orig
// against the policy of namespace ns, fetching signatures from ep only if
// the policy reads them.
func (s *Store) verify(ctx context.Context, ep endpoint, orig name.Reference, ns string, manifest []byte, top digest.Digest) error {
	_, err := s.sigs.Check(ctx, sigpolicy.Image{
		Ref:       normalize(orig),
		Namespace: ns,
		Manifest:  manifest,
		Signatures: func(ctx context.Context) ([]sigpolicy.Signature, error) {
			return s.fetchSignatures(ctx, ep, top)
		},
	})
	return err
}

// Verify says whether a pull of ref for a pod of namespace ns would be
// allowed by the signature policy of cfg, and by which rule, fetching only
// the manifest and signatures (from the first endpoint that serves the
// manifest) through cfg's registry settings. No store is opened: cfg.Root
// is not used. With no policy configured everything is allowed.
func Verify(ctx context.Context, cfg Config, ref string, auth Auth, ns string) (sigpolicy.Decision, error) {
	s := &Store{cfg: cfg, platform: cfg.Platform, sigs: sigpolicy.New(cfg.SignaturePolicy, "")}
	if !s.verifies() {
		return sigpolicy.Decision{Allowed: true}, nil
	}
	r, err := parseRef(ref)
	if err != nil {
		return sigpolicy.Decision{}, err
	}
	eps, err := s.endpoints(r, auth)
	if err != nil {
		return sigpolicy.Decision{}, err
	}
	var lastErr error
	for _, ep := range eps {
		desc, err := remote.Get(ep.ref, s.remoteOptions(ctx, ep)...)
		if err != nil {
			lastErr = classify(err)
			continue
		}
		top := digest.Digest(desc.Digest.String())
		if digest.FromBytes(desc.Manifest) != top {
			return sigpolicy.Decision{}, fmt.Errorf("manifest %s: digest does not match its bytes: %w", top, errdefs.ErrInvalidArgument)
		}
		return s.sigs.Check(ctx, sigpolicy.Image{
			Ref:       normalize(r),
			Namespace: ns,
			Manifest:  desc.Manifest,
			Signatures: func(ctx context.Context) ([]sigpolicy.Signature, error) {
				return s.fetchSignatures(ctx, ep, top)
			},
		})
	}
	return sigpolicy.Decision{}, fmt.Errorf("verify %s: %w", normalize(r), lastErr)
}

func (s *Store) remoteOptions(ctx context.Context, ep endpoint) []remote.Option {
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuth(ep.auth),
		remote.WithTransport(ep.transport),
		remote.WithPlatform(s.platform),
	}
}

// fetchSignatures gathers the sigstore signatures of top from ep: those
// under cosign's tag (sha256-<hex>.sig) and those attached as OCI 1.1
// referrers. The whole fetch must end within the pull progress timeout,
// so a registry that stalls here fails the pull as a stalled layer does.
func (s *Store) fetchSignatures(ctx context.Context, ep endpoint, top digest.Digest) ([]sigpolicy.Signature, error) {
	timeout := s.progressTimeout()
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, &stallError{after: timeout})
	defer cancel()
	sigs, err := s.fetchSignaturesFrom(ctx, ep, top)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("signatures stalled: %w", context.Cause(ctx))
		}
		return nil, classify(err)
	}
	return sigs, nil
}

func (s *Store) fetchSignaturesFrom(ctx context.Context, ep endpoint, top digest.Digest) ([]sigpolicy.Signature, error) {
	opts := s.remoteOptions(ctx, ep)
	repo := ep.ref.Context()
	blobs, err := newBlobFetcher(ctx, ep)
	if err != nil {
		return nil, err
	}
	var sigs []sigpolicy.Signature
	// cosign's tag: one manifest whose layers are the signatures.
	desc, err := remote.Get(repo.Tag(top.Algorithm().String()+"-"+top.Encoded()+".sig"), opts...)
	switch {
	case err == nil:
		got, err := signatureLayers(ctx, blobs, desc.Manifest)
		if err != nil {
			return nil, fmt.Errorf("cosign signature tag: %w", err)
		}
		sigs = append(sigs, got...)
	case !errdefs.IsNotFound(classify(err)):
		return nil, fmt.Errorf("cosign signature tag: %w", err)
	}
	// OCI 1.1 referrers (or their fallback tag, on a registry without the
	// referrers API), filtered to cosign signature manifests.
	idx, err := remote.Referrers(repo.Digest(top.String()), append(opts, remote.WithFilter("artifactType", cosignArtifactType))...)
	if err != nil {
		if errdefs.IsNotFound(classify(err)) {
			return sigs, nil
		}
		return nil, fmt.Errorf("referrers: %w", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("referrers: %w", err)
	}
	n := 0
	for _, d := range im.Manifests {
		if d.ArtifactType != cosignArtifactType {
			continue
		}
		if n++; n > maxSignatureManifests {
			break
		}
		desc, err := remote.Get(repo.Digest(d.Digest.String()), opts...)
		if err != nil {
			return nil, fmt.Errorf("referrer %s: %w", d.Digest, err)
		}
		if digest.FromBytes(desc.Manifest).String() != d.Digest.String() {
			return nil, fmt.Errorf("referrer %s: digest does not match its bytes: %w", d.Digest, errdefs.ErrInvalidArgument)
		}
		got, err := signatureLayers(ctx, blobs, desc.Manifest)
		if err != nil {
			return nil, fmt.Errorf("referrer %s: %w", d.Digest, err)
		}
		sigs = append(sigs, got...)
	}
	return sigs, nil
}

// signatureLayers reads the cosign signatures a signature manifest holds:
// each layer's media type, payload blob and annotations. Other layers are
// left unread.
func signatureLayers(ctx context.Context, blobs *blobFetcher, raw []byte) ([]sigpolicy.Signature, error) {
	var m imagespec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decode signature manifest: %v: %w", err, errdefs.ErrInvalidArgument)
	}
	var sigs []sigpolicy.Signature
	for _, l := range m.Layers {
		if l.MediaType != cosignSignatureType {
			continue
		}
		if len(sigs) == maxSignaturesPerManifest {
			break
		}
		if l.Size > maxPayload {
			return nil, fmt.Errorf("signature payload %s: %d bytes, more than %d: %w", l.Digest, l.Size, maxPayload, errdefs.ErrInvalidArgument)
		}
		rc, err := blobs.opener(l.Digest)(ctx)
		if err != nil {
			return nil, fmt.Errorf("signature payload %s: %w", l.Digest, err)
		}
		payload, err := io.ReadAll(io.LimitReader(rc, maxPayload+1))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("signature payload %s: %w", l.Digest, err)
		}
		if err := l.Digest.Validate(); err != nil || l.Digest.Algorithm().FromBytes(payload) != l.Digest {
			return nil, fmt.Errorf("signature payload %s: digest does not match its bytes: %w", l.Digest, errdefs.ErrInvalidArgument)
		}
		sigs = append(sigs, sigpolicy.Signature{MediaType: l.MediaType, Payload: payload, Annotations: l.Annotations})
	}
	return sigs, nil
}
