package image

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/opencontainers/go-digest"
	imagespec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/crib-dev/crib/internal/sigpolicy"
	"github.com/crib-dev/crib/internal/snapshot"
)

// endpoint is one place to pull a reference from: a mirror or the host.
type endpoint struct {
	ref       name.Reference // the reference rewritten onto this endpoint
	auth      authn.Authenticator
	transport http.RoundTripper
	// scheme is the mirror's configured scheme; "" for the host itself,
	// where https is tried before http when plain HTTP is allowed.
	scheme string
}

// Pull fetches ref (for this store's platform) from its registry, trying
// the registry's mirrors first, and stores it. Concurrent pulls of the same
// reference with the same credential share one pull: each caller gets its
// result, and a caller whose ctx ends stops waiting without cancelling the
// pull for the others. Layers already unpacked are not fetched again.
// Options add progress reporting (WithProgress).
func (s *Store) Pull(ctx context.Context, ref string, auth Auth, opts ...PullOption) (Image, error) {
	var o PullOptions
	for _, opt := range opts {
		opt(&o)
	}
	r, err := parseRef(ref)
	if err != nil {
		return Image{}, err
	}
	norm := normalize(r)
	key := flightKey(norm, auth)
	if s.verifies() {
		// Namespaces may have policies of their own: a pull shares the
		// decision only with pulls for the same namespace.
		key += " " + o.Namespace
	}
	return s.flights.do(ctx, key, norm, o.Progress, func(ctx context.Context, progress func(Progress)) (Image, error) {
		return s.pull(ctx, r, norm, auth, o.Namespace, progress)
	})
}

// Pulls lists the pulls in flight, oldest first, with each layer's
// progress: pulls of the CRI and of the local API alike, as both go
// through Pull. A pull leaves the list when it ends, whether it succeeded
// or failed, or when every caller waiting for it gave up. It does no I/O.
func (s *Store) Pulls() []PullStatus {
	return s.flights.snapshot()
}

// pull is one pull of r, whose normalized name is norm.
func (s *Store) pull(ctx context.Context, r name.Reference, norm string, auth Auth, ns string, progress func(Progress)) (_ Image, err error) {
	defer s.recordPull()(&err)
	eps, err := s.endpoints(r, auth)
	if err != nil {
		return Image{}, err
	}
	var mirrorErrs []string
	for i, ep := range eps {
		img, err := s.pullFrom(ctx, ep, r, ns, progress)
		if err == nil {
			return img, nil
		}
		err = classify(err)
		// A layer refused by its limits would be refused from any
		// endpoint: the others are not asked to send it again. Nor is an
		// image the signature policy refused.
		var refused *snapshot.LimitError
		var untrusted *sigpolicy.RefusedError
		if errors.As(err, &untrusted) {
			return Image{}, err
		}
		if ctx.Err() != nil || i == len(eps)-1 || errors.As(err, &refused) {
			if len(mirrorErrs) > 0 {
				return Image{}, fmt.Errorf("pull image %s: %w (mirrors: %s)", norm, err, strings.Join(mirrorErrs, "; "))
			}
			return Image{}, fmt.Errorf("pull image %s: %w", norm, err)
		}
		mirrorErrs = append(mirrorErrs, err.Error())
	}
	return Image{}, fmt.Errorf("pull image %s: no endpoint: %w", norm, errdefs.ErrUnavailable)
}

// endpoints lists the mirrors of r's host, in order, then the host itself.
func (s *Store) endpoints(r name.Reference, auth Auth) ([]endpoint, error) {
	host := hostOf(r.Context())
	reg := s.registry(host)
	var eps []endpoint
	for _, m := range reg.Mirrors {
		u, err := url.Parse(m)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("registry %s: mirror %q is not an http(s) URL: %w", host, m, errdefs.ErrInvalidArgument)
		}
		var opts []name.Option
		if u.Scheme == "http" {
			opts = append(opts, name.Insecure)
		}
		repo := r.Context().RepositoryStr()
		if p := strings.Trim(strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v2"), "/"); p != "" {
			repo = p + "/" + repo
		}
		mref, err := rewrite(r, u.Host+"/"+repo, opts...)
		if err != nil {
			return nil, fmt.Errorf("registry %s: mirror %q: %v: %w", host, m, err, errdefs.ErrInvalidArgument)
		}
		eps = append(eps, endpoint{ref: mref, auth: authn.Anonymous, transport: baseTransport(false), scheme: u.Scheme})
	}
	var opts []name.Option
	if reg.Insecure {
		opts = append(opts, name.Insecure)
	}
	href, err := rewrite(r, r.Context().Name(), opts...)
	if err != nil {
		return nil, fmt.Errorf("parse image reference: %v: %w", err, errdefs.ErrInvalidArgument)
	}
	return append(eps, endpoint{ref: href, auth: authenticator(auth), transport: baseTransport(reg.Insecure)}), nil
}

// rewrite puts r's tag or digest onto another repository.
func rewrite(r name.Reference, repo string, opts ...name.Option) (name.Reference, error) {
	if d, ok := r.(name.Digest); ok {
		return name.NewDigest(repo+"@"+d.DigestStr(), opts...)
	}
	return name.NewTag(repo+":"+r.Identifier(), opts...)
}

func baseTransport(insecure bool) http.RoundTripper {
	t := remote.DefaultTransport.(*http.Transport).Clone()
	if insecure {
		t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the registry is configured insecure
	}
	return t
}

func authenticator(a Auth) authn.Authenticator {
	if a == (Auth{}) {
		return authn.Anonymous
	}
	cfg := authn.AuthConfig{
		Username:      a.Username,
		Password:      a.Password,
		Auth:          a.Auth,
		IdentityToken: a.IdentityToken,
		RegistryToken: a.RegistryToken,
	}
	if cfg.Username == "" && cfg.Auth != "" {
		if b, err := base64.StdEncoding.DecodeString(cfg.Auth); err == nil {
			if u, p, ok := strings.Cut(string(b), ":"); ok {
				cfg.Username, cfg.Password = u, p
			}
		}
	}
	return authn.FromConfig(cfg)
}

// pullFrom pulls from one endpoint; names recorded are the caller's, not
// the endpoint's (a mirrored image keeps its original name).
func (s *Store) pullFrom(ctx context.Context, ep endpoint, orig name.Reference, ns string, progress func(Progress)) (Image, error) {
	opts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuth(ep.auth),
		remote.WithTransport(ep.transport),
		remote.WithPlatform(s.platform),
	}
	desc, err := remote.Get(ep.ref, opts...)
	if err != nil {
		return Image{}, err
	}
	spec := importSpec{smallBlobs: map[digest.Digest][]byte{}}
	top := digest.Digest(desc.Digest.String())
	if digest.FromBytes(desc.Manifest) != top {
		return Image{}, fmt.Errorf("manifest %s: digest does not match its bytes: %w", top, errdefs.ErrInvalidArgument)
	}
	spec.smallBlobs[top] = desc.Manifest
	if s.verifies() {
		if err := s.verify(ctx, ep, orig, ns, desc.Manifest, top); err != nil {
			return Image{}, err
		}
	}
	img, err := desc.Image()
	if err != nil {
		if desc.MediaType.IsIndex() {
			return Image{}, fmt.Errorf("select %s/%s from index %s: %v: %w", s.platform.OS, s.platform.Architecture, top, err, errdefs.ErrNotFound)
		}
		return Image{}, err
	}
	rawManifest, err := img.RawManifest()
	if err != nil {
		return Image{}, err
	}
	mdigest := digest.FromBytes(rawManifest)
	spec.smallBlobs[mdigest] = rawManifest
	var m imagespec.Manifest
	if err := json.Unmarshal(rawManifest, &m); err != nil {
		return Image{}, fmt.Errorf("decode manifest %s: %v: %w", mdigest, err, errdefs.ErrInvalidArgument)
	}
	spec.configDigest = m.Config.Digest
	spec.annotations = m.Annotations
	if spec.config, err = img.RawConfigFile(); err != nil {
		return Image{}, err
	}
	if got := digest.FromBytes(spec.config); got != spec.configDigest {
		return Image{}, fmt.Errorf("image config: digest mismatch: expected %s, got %s: %w", spec.configDigest, got, errdefs.ErrInvalidArgument)
	}
	repo := repoName(orig.Context())
	if t, ok := orig.(name.Tag); ok {
		spec.names = append(spec.names, repo+":"+t.TagStr())
	}
	spec.names = append(spec.names, repo+"@"+top.String())
	blobs, err := newBlobFetcher(ctx, ep)
	if err != nil {
		return Image{}, err
	}
	blobs.rec = s.cfg.Pulls
	var present map[string]bool
	if progress != nil {
		present = s.announceLayers(spec.config, m.Layers, progress)
	}
	for _, l := range m.Layers {
		open := blobs.opener(l.Digest)
		if progress != nil {
			open = countingOpener(open, l.Digest.String(), l.Size, progress)
		}
		spec.layers = append(spec.layers, layerSource{desc: l, open: open})
	}
	stored, err := s.commit(ctx, spec)
	if err == nil && progress != nil {
		for _, l := range m.Layers {
			if !present[l.Digest.String()] {
				progress(Progress{Layer: l.Digest.String(), Done: l.Size, Total: l.Size})
			}
		}
	}
	return stored, err
}

// announceLayers reports every layer once the manifest is known, so that
// a pull's total counts layers whose download has not begun: a layer
// already unpacked as done, any other as not begun. It returns the layers
// reported done. An undecodable config announces nothing; commit reports
// that error.
func (s *Store) announceLayers(rawConfig []byte, layers []imagespec.Descriptor, progress func(Progress)) map[string]bool {
	var cfg imagespec.Image
	if json.Unmarshal(rawConfig, &cfg) != nil || len(cfg.RootFS.DiffIDs) != len(layers) {
		return nil
	}
	present := map[string]bool{}
	for i, id := range snapshot.ChainIDs(cfg.RootFS.DiffIDs) {
		p := Progress{Layer: layers[i].Digest.String(), Total: layers[i].Size}
		if s.snaps.Exists(id) {
			p.Done = p.Total
			present[p.Layer] = true
		}
		progress(p)
	}
	return present
}

// blobFetcher downloads raw blobs; it does not verify them (content does,
// so a mismatch is reported as such rather than as a read error).
type blobFetcher struct {
	client *http.Client
	ep     endpoint
	rec    PullRecorder // counts the bytes downloaded, when set
}

func newBlobFetcher(ctx context.Context, ep endpoint) (*blobFetcher, error) {
	repo := ep.ref.Context()
	rt, err := transport.NewWithContext(ctx, repo.Registry, ep.auth, ep.transport, []string{repo.Scope(transport.PullScope)})
	if err != nil {
		return nil, err
	}
	return &blobFetcher{client: &http.Client{Transport: rt}, ep: ep}, nil
}

func (b *blobFetcher) opener(d digest.Digest) func(ctx context.Context) (io.ReadCloser, error) {
	return func(ctx context.Context) (io.ReadCloser, error) {
		repo := b.ep.ref.Context()
		schemes := []string{b.ep.scheme}
		if b.ep.scheme == "" {
			schemes = []string{repo.Scheme()}
		}
		if b.ep.scheme == "" && repo.Scheme() == "http" {
			// An insecure or loopback host may still speak TLS; try it first
			// as the registry client does.
			schemes = []string{"https", "http"}
		}
		var lastErr error
		for _, scheme := range schemes {
			u := url.URL{Scheme: scheme, Host: repo.RegistryStr(), Path: "/v2/" + repo.RepositoryStr() + "/blobs/" + d.String()}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
			if err != nil {
				return nil, err
			}
			resp, err := b.client.Do(req)
			if err != nil {
				lastErr = err
				continue
			}
			if err := transport.CheckError(resp, http.StatusOK); err != nil {
				resp.Body.Close()
				return nil, classify(err)
			}
			return countBytes(resp.Body, b.rec), nil
		}
		return nil, classify(lastErr)
	}
}
