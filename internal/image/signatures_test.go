//go:build containers_image_openpgp

package image

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"
	"go.podman.io/image/v5/copy"
	"go.podman.io/image/v5/directory"
	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/signature"
	"go.podman.io/image/v5/signature/signer"
	"go.podman.io/image/v5/signature/sigstore"
	crierrors "k8s.io/cri-api/pkg/errors"

	"github.com/crib-dev/crib/internal/sigpolicy"
	"github.com/crib-dev/crib/internal/snapshot"
	"github.com/crib-dev/crib/internal/testutil"
)

// sigKey is a sigstore key pair made by the library, its public half in a
// file a policy can name.
type sigKey struct {
	signer  *signer.Signer
	pubPath string
}

func newSigKey(t testing.TB, dir, name string) sigKey {
	t.Helper()
	pass := []byte("pass-" + name)
	kp, err := sigstore.GenerateKeyPair(pass)
	if err != nil {
		t.Fatal(err)
	}
	priv := filepath.Join(dir, name+".key")
	pub := filepath.Join(dir, name+".pub")
	if err := os.WriteFile(priv, kp.PrivateKey, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, kp.PublicKey, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := sigstore.NewSigner(sigstore.WithPrivateKeyFile(priv, pass))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return sigKey{signer: s, pubPath: pub}
}

// sign has the library sign img as identity (a docker reference), the way
// `podman push --sign-by-sigstore-private-key` does, by copying it between
// two dir: layouts; it returns the signature as cosign attaches it.
func sign(t testing.TB, key sigKey, img v1.Image, identity string) sigpolicy.Signature {
	t.Helper()
	src, dst := t.TempDir(), t.TempDir()
	raw, err := img.RawManifest()
	if err != nil {
		t.Fatal(err)
	}
	write := func(p string, b []byte) {
		if err := os.WriteFile(filepath.Join(src, p), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("manifest.json", raw)
	cfgName, _ := img.ConfigName()
	cfg, err := img.RawConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	write(cfgName.Hex, cfg)
	layers, _ := img.Layers()
	for _, l := range layers {
		d, _ := l.Digest()
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(rc)
		rc.Close()
		write(d.Hex, b.Bytes())
	}
	srcRef, err := directory.NewReference(src)
	if err != nil {
		t.Fatal(err)
	}
	dstRef, err := directory.NewReference(dst)
	if err != nil {
		t.Fatal(err)
	}
	named, err := reference.ParseNormalizedNamed(identity)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := signature.NewPolicyContext(&signature.Policy{Default: signature.PolicyRequirements{signature.NewPRInsecureAcceptAnything()}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pc.Destroy() }()
	if _, err := copy.Image(context.Background(), pc, dstRef, srcRef, &copy.Options{Signers: []*signer.Signer{key.signer}, SignIdentity: named}); err != nil {
		t.Fatalf("sign: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dst, "manifest.json")); !bytes.Equal(got, raw) {
		t.Fatalf("signing copy changed the manifest")
	}
	blob, err := os.ReadFile(filepath.Join(dst, "signature-1"))
	if err != nil {
		t.Fatal(err)
	}
	chunk, ok := bytes.CutPrefix(blob, []byte("\x00sigstore-json\n"))
	if !ok {
		t.Fatalf("signature is not a sigstore one: %q", blob[:min(len(blob), 20)])
	}
	var s struct {
		MIMEType    string            `json:"mimeType"`
		Payload     []byte            `json:"payload"`
		Annotations map[string]string `json:"annotations"`
	}
	if err := json.Unmarshal(chunk, &s); err != nil {
		t.Fatal(err)
	}
	return sigpolicy.Signature{MediaType: s.MIMEType, Payload: s.Payload, Annotations: s.Annotations}
}

// sigManifest is a cosign signature image holding sigs as its layers.
func sigManifest(t testing.TB, sigs ...sigpolicy.Signature) v1.Image {
	t.Helper()
	img := mutate.MediaType(empty.Image, ggcrtypes.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, ggcrtypes.OCIConfigJSON)
	for _, s := range sigs {
		var err error
		img, err = mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(s.Payload, ggcrtypes.MediaType(s.MediaType)), Annotations: s.Annotations})
		if err != nil {
			t.Fatal(err)
		}
	}
	return img
}

// attachTag attaches sigs to the manifest digest d of repo as cosign does
// by default: under the tag sha256-<hex>.sig.
func attachTag(t testing.TB, repo string, d v1.Hash, sigs ...sigpolicy.Signature) {
	t.Helper()
	ref, err := name.NewTag(repo+":"+d.Algorithm+"-"+d.Hex+".sig", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, sigManifest(t, sigs...)); err != nil {
		t.Fatalf("attach signature: %v", err)
	}
}

// attachReferrer attaches sigs to target as an OCI 1.1 referrer, as
// cosign's oci-1-1 mode does.
func attachReferrer(t testing.TB, repo string, target v1.Image, sigs ...sigpolicy.Signature) {
	t.Helper()
	d, _ := target.Digest()
	raw, _ := target.RawManifest()
	mt, _ := target.MediaType()
	img := mutate.ConfigMediaType(sigManifest(t, sigs...), cosignArtifactType)
	img = mutate.Subject(img, v1.Descriptor{MediaType: mt, Digest: d, Size: int64(len(raw))}).(v1.Image)
	sd, _ := img.Digest()
	ref, err := name.NewDigest(repo+"@"+sd.String(), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("attach referrer: %v", err)
	}
}

func pushTo(t testing.TB, ref string, img v1.Image) {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

func writePolicy(t testing.TB, path string, policy string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
}

// checkRefused checks that err is a signature refusal naming ref, scope
// and want, and that the store holds nothing.
func checkRefused(t *testing.T, s *Store, root string, err error, ref, scope, want string) {
	t.Helper()
	var refused *sigpolicy.RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, crierrors.ErrSignatureValidationFailed) {
		t.Fatalf("pull of %s: got %v, want a signature refusal", ref, err)
	}
	msg := refused.Error()
	t.Logf("refused: %s", msg)
	if !strings.HasPrefix(msg, "SignatureValidationFailed: Source image rejected: ") {
		t.Errorf("refusal %q does not start as CRI-O's does", msg)
	}
	for _, w := range []string{ref, scope, want} {
		if !strings.Contains(msg, w) {
			t.Errorf("refusal %q does not say %q", msg, w)
		}
	}
	checkNothingStored(t, s, root)
}

// checkNothingStored checks that the store at root holds no image and no
// file of one after a failed pull.
func checkNothingStored(t *testing.T, s *Store, root string) {
	t.Helper()
	if imgs := s.List(); len(imgs) != 0 {
		t.Errorf("images after the failed pull: %v", imgs)
	}
	for _, d := range []string{"blobs", "snapshots", "ingest", "images", "tmp"} {
		if n := countFiles(t, filepath.Join(root, d)); n != 0 {
			t.Errorf("%d files left in %s after the failed pull: %v", n, d, dirNames(t, filepath.Join(root, d)))
		}
	}
}

// TestPullSignaturePolicy pulls images signed in the test by the
// library's sigstore signer from the loopback registry, under a policy
// that wants them signed by one key: what is signed right is pulled; what
// is not is refused with the reason, before any blob is stored.
func TestPullSignaturePolicy(t *testing.T) {
	testutil.RequireRegistry(t)
	requiresRoot(t)
	keys := t.TempDir()
	good, bad := newSigKey(t, keys, "good"), newSigKey(t, keys, "bad")
	base := fmt.Sprintf("127.0.0.1:5000/crib-sigpolicy-%d", time.Now().UnixNano())
	signedScope := base + "/signed"
	policyPath := filepath.Join(keys, "policy.json")
	writePolicy(t, policyPath, fmt.Sprintf(`{
  "default": [{"type": "insecureAcceptAnything"}],
  "transports": {"docker": {
    %q: [{"type": "sigstoreSigned", "keyPath": %q, "signedIdentity": {"type": "matchRepository"}}],
    %q: [{"type": "reject"}]
  }}
}`, signedScope, good.pubPath, base+"/rejected"))

	// Each case pushes its own image to its own repository.
	cases := []struct {
		name  string
		setup func(t *testing.T, repo string) string // returns the ref to pull
		want  string                                 // "" means pulled
		scope string
	}{
		{"right key", func(t *testing.T, repo string) string {
			img := testImage(t, "amd64", "right")
			pushTo(t, repo+":v1", img)
			d, _ := img.Digest()
			attachTag(t, repo, d, sign(t, good, img, repo+":v1"))
			return repo + ":v1"
		}, "", ""},
		{"right key as referrer", func(t *testing.T, repo string) string {
			img := testImage(t, "amd64", "referrer")
			pushTo(t, repo+":v1", img)
			attachReferrer(t, repo, img, sign(t, good, img, repo+":v1"))
			return repo + ":v1"
		}, "", ""},
		{"unsigned", func(t *testing.T, repo string) string {
			pushTo(t, repo+":v1", testImage(t, "amd64", "unsigned"))
			return repo + ":v1"
		}, "A signature was required, but no signature exists", signedScope},
		{"wrong key", func(t *testing.T, repo string) string {
			img := testImage(t, "amd64", "wrongkey")
			pushTo(t, repo+":v1", img)
			d, _ := img.Digest()
			attachTag(t, repo, d, sign(t, bad, img, repo+":v1"))
			return repo + ":v1"
		}, "cryptographic signature verification failed", signedScope},
		{"identity mismatch", func(t *testing.T, repo string) string {
			img := testImage(t, "amd64", "identity")
			pushTo(t, repo+":v1", img)
			d, _ := img.Digest()
			attachTag(t, repo, d, sign(t, good, img, "127.0.0.1:5000/someone/else:v1"))
			return repo + ":v1"
		}, `Signature for identity "127.0.0.1:5000/someone/else:v1" is not accepted`, signedScope},
		{"signature of another digest", func(t *testing.T, repo string) string {
			img, other := testImage(t, "amd64", "target"), testImage(t, "amd64", "other")
			pushTo(t, repo+":v1", img)
			d, _ := img.Digest()
			attachTag(t, repo, d, sign(t, good, other, repo+":v1"))
			return repo + ":v1"
		}, "does not match", signedScope},
		{"manifest changed after signing", func(t *testing.T, repo string) string {
			img := testImage(t, "amd64", "changed")
			sig := sign(t, good, img, repo+":v1")
			changed := mutate.Annotations(img, map[string]string{"changed": "after signing"}).(v1.Image)
			pushTo(t, repo+":v1", changed)
			d, _ := changed.Digest()
			attachTag(t, repo, d, sig)
			return repo + ":v1"
		}, "does not match", signedScope},
		{"tampered payload", func(t *testing.T, repo string) string {
			img := testImage(t, "amd64", "tampered")
			pushTo(t, repo+":v1", img)
			d, _ := img.Digest()
			sig := sign(t, good, img, repo+":v1")
			sig.Payload = bytes.Replace(sig.Payload, []byte(`"critical"`), []byte(`"critical" `), 1)
			attachTag(t, repo, d, sig)
			return repo + ":v1"
		}, "cryptographic signature verification failed", signedScope},
		{"reject scope beats the default", func(t *testing.T, repo string) string {
			pushTo(t, base+"/rejected:v1", testImage(t, "amd64", "rejected"))
			return base + "/rejected:v1"
		}, "is rejected by policy", base + "/rejected"},
		{"default accepts the rest", func(t *testing.T, repo string) string {
			pushTo(t, base+"/other:v1", testImage(t, "amd64", "other-repo"))
			return base + "/other:v1"
		}, "", ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Each case its own repository under the signed scope (a
			// namespace of it), and its own store.
			repo := fmt.Sprintf("%s/c%d", signedScope, i)
			ref := c.setup(t, repo)
			root := t.TempDir()
			cfg := Config{SignaturePolicy: sigpolicy.Config{Path: policyPath}}
			// `crib image verify` says beforehand what the pull will do.
			d, verr := Verify(context.Background(), cfg, ref, Auth{}, "")
			if verr != nil && c.want == "" || d.Allowed != (c.want == "") || !strings.Contains(d.Reason, c.want) {
				t.Errorf("verify %s: %+v, %v; want allowed=%v", ref, d, verr, c.want == "")
			}
			s := openStore(t, root, cfg)
			img, err := s.Pull(context.Background(), ref, Auth{})
			if c.want == "" {
				if err != nil {
					t.Fatalf("pull %s: %v", ref, err)
				}
				if got := readTop(t, s, img, "etc/marker"); got == "" {
					t.Errorf("pulled image has no /etc/marker")
				}
				return
			}
			checkRefused(t, s, root, err, ref, c.scope, c.want)
		})
	}
}

// TestPullSignaturePolicyNamespace applies a namespace's policy to pulls
// for its pods only.
func TestPullSignaturePolicyNamespace(t *testing.T) {
	testutil.RequireRegistry(t)
	requiresRoot(t)
	dir := t.TempDir()
	nsDir := filepath.Join(dir, "ns")
	if err := os.Mkdir(nsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	writePolicy(t, filepath.Join(dir, "policy.json"), `{"default": [{"type": "insecureAcceptAnything"}]}`)
	writePolicy(t, filepath.Join(nsDir, "locked.json"), `{"default": [{"type": "reject"}]}`)
	ref := fmt.Sprintf("127.0.0.1:5000/crib-sigpolicy-%d/ns:v1", time.Now().UnixNano())
	pushTo(t, ref, testImage(t, "amd64", "ns"))
	cfg := Config{SignaturePolicy: sigpolicy.Config{Path: filepath.Join(dir, "policy.json"), NamespacedDir: nsDir}}

	root := t.TempDir()
	s := openStore(t, root, cfg)
	_, err := s.Pull(context.Background(), ref, Auth{}, WithNamespace("locked"))
	checkRefused(t, s, root, err, ref, "default", "is rejected by policy")
	if !strings.Contains(err.Error(), filepath.Join(nsDir, "locked.json")) {
		t.Errorf("refusal %q does not name the namespace's policy file", err)
	}
	for _, ns := range []string{"open", ""} {
		if _, err := s.Pull(context.Background(), ref, Auth{}, WithNamespace(ns)); err != nil {
			t.Errorf("pull for namespace %q: %v", ns, err)
		}
	}
	// Policies are read at each pull: the namespace's file going away
	// lets its pods pull under the node's policy.
	if err := os.Remove(filepath.Join(nsDir, "locked.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pull(context.Background(), ref, Auth{}, WithNamespace("locked")); err != nil {
		t.Errorf("pull after the namespace's policy was removed: %v", err)
	}
}

// TestPullSignaturesStall: a registry that stops answering while serving
// an image's signatures fails the pull after the pull progress timeout, as
// a stalled layer does, and nothing is stored.
func TestPullSignaturesStall(t *testing.T) {
	requiresRoot(t)
	reg := newRegistry(t)
	img := testImage(t, "amd64", "stall")
	reg.push(t, "stall/app:v1", img)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	reg.wrap = func(w http.ResponseWriter, r *http.Request) bool {
		if strings.Contains(r.URL.Path, ".sig") {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return true
		}
		return false
	}
	dir := t.TempDir()
	pub := newSigKey(t, dir, "k").pubPath
	writePolicy(t, filepath.Join(dir, "policy.json"), fmt.Sprintf(`{"default": [{"type": "sigstoreSigned", "keyPath": %q}]}`, pub))
	root := t.TempDir()
	s := openStore(t, root, Config{
		Registries:          map[string]Registry{reg.host: {Insecure: true}},
		PullProgressTimeout: time.Second,
		SignaturePolicy:     sigpolicy.Config{Path: filepath.Join(dir, "policy.json")},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := s.Pull(ctx, reg.host+"/stall/app:v1", Auth{})
	if !errdefs.IsDeadlineExceeded(err) || !strings.Contains(err.Error(), "signatures stalled") {
		t.Fatalf("pull from a registry stalling on signatures: got %v, want a stall", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the pull waited for the test's deadline, not its own")
	}
	checkNothingStored(t, s, root)
}

// BenchmarkPullVerified measures the pull of BenchmarkPull's 3-layer image
// with a signature policy that wants it signed by a key (its cosign
// signature fetched and verified before the layers) against the same pull
// with no policy, alternating in the same run. It reports the ratio and
// the time verification adds per pull.
func BenchmarkPullVerified(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("requires root")
	}
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	var layers []v1.Layer
	for i := range benchLayers {
		layers = append(layers, benchLayer(b, rng, i))
	}
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		b.Fatal(err)
	}
	reg := newBenchRegistry(b)
	repo := reg.host + "/bench/signed"
	pushTo(b, repo+":1", img)
	dir := b.TempDir()
	key := newSigKey(b, dir, "bench")
	d, _ := img.Digest()
	attachTag(b, repo, d, sign(b, key, img, repo+":1"))
	policy := filepath.Join(dir, "policy.json")
	writePolicy(b, policy, fmt.Sprintf(`{"default": [{"type": "sigstoreSigned", "keyPath": %q}]}`, key.pubPath))
	limits := snapshot.Limits{ExpansionRatio: 100, ExpansionFloor: 1 << 30, FreeSpaceReserve: 1 << 30, MaxEntries: 1_000_000}
	plain := Config{LayerLimits: limits, Registries: map[string]Registry{reg.host: {Insecure: true}}}
	verified := plain
	verified.SignaturePolicy = sigpolicy.Config{Path: policy}
	ctx := context.Background()
	pull := func(cfg Config) time.Duration {
		root, err := os.MkdirTemp("", "crib-bench-store-")
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(root)
		cfg.Root = root
		s, err := Open(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		start := time.Now()
		if _, err := s.Pull(ctx, repo+":1", Auth{}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var plainTime, verifiedTime time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 1 {
			plainTime += pull(plain)
			verifiedTime += pull(verified)
		} else {
			verifiedTime += pull(verified)
			plainTime += pull(plain)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(verifiedTime)/float64(plainTime), "verified/plain")
	b.ReportMetric(float64((verifiedTime-plainTime).Milliseconds())/float64(b.N), "added-ms/pull")
}

// TestPullSignaturesMirrorAndAuth: signatures come from where the image
// does, as the pull fetches it: from the mirror that serves the manifest,
// and from a registry that wants credentials, with the pull's credentials.
func TestPullSignaturesMirrorAndAuth(t *testing.T) {
	requiresRoot(t)
	dir := t.TempDir()
	key := newSigKey(t, dir, "k")
	policy := filepath.Join(dir, "policy.json")
	writePolicy(t, policy, fmt.Sprintf(`{"default": [{"type": "sigstoreSigned", "keyPath": %q}]}`, key.pubPath))
	// signed pushes a signed image to reg as app:v1, signed as identity,
	// and counts the signature requests reg answers from then on.
	signed := func(t *testing.T, reg *testRegistry, identity string, allow func(*http.Request) bool) *atomic.Int32 {
		img := testImage(t, "amd64", "signed")
		pushTo(t, reg.host+"/app:v1", img)
		d, _ := img.Digest()
		attachTag(t, reg.host+"/app", d, sign(t, key, img, identity))
		sigs := new(atomic.Int32)
		reg.wrap = func(w http.ResponseWriter, r *http.Request) bool {
			if !allow(r) {
				w.Header().Set("WWW-Authenticate", `Basic realm="crib-test"`)
				w.WriteHeader(http.StatusUnauthorized)
				return true
			}
			if strings.Contains(r.URL.Path, "/manifests/sha256-") {
				sigs.Add(1)
			}
			return false
		}
		return sigs
	}

	t.Run("mirror", func(t *testing.T) {
		mirror := newRegistry(t)
		sigs := signed(t, mirror, "signed.invalid/app:v1", func(*http.Request) bool { return true })
		root := t.TempDir()
		s := openStore(t, root, Config{
			Registries:      map[string]Registry{"signed.invalid": {Mirrors: []string{"http://" + mirror.host}}},
			SignaturePolicy: sigpolicy.Config{Path: policy},
		})
		if _, err := s.Pull(context.Background(), "signed.invalid/app:v1", Auth{}); err != nil {
			t.Fatalf("pull through the mirror: %v", err)
		}
		if sigs.Load() == 0 {
			t.Errorf("the mirror served no signature")
		}
	})

	t.Run("credentials", func(t *testing.T) {
		reg := newRegistry(t)
		sigs := signed(t, reg, reg.host+"/app:v1", func(r *http.Request) bool {
			u, p, ok := r.BasicAuth()
			return ok && u == "user" && p == "secret"
		})
		root := t.TempDir()
		s := openStore(t, root, Config{
			Registries:      map[string]Registry{reg.host: {Insecure: true}},
			SignaturePolicy: sigpolicy.Config{Path: policy},
		})
		if _, err := s.Pull(context.Background(), reg.host+"/app:v1", Auth{Username: "user", Password: "secret"}); err != nil {
			t.Fatalf("pull with credentials: %v", err)
		}
		if sigs.Load() == 0 {
			t.Errorf("no signature was fetched with the credentials")
		}
	})
}
