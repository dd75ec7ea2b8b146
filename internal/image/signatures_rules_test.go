//go:build containers_image_openpgp

package image

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/sigpolicy"
	"github.com/crib-dev/crib/internal/testutil"
)

// resign replaces sig's signature by one priv makes over its payload, as
// cosign signs: ECDSA and RSA (PKCS #1 v1.5) over the payload's SHA-256,
// Ed25519 over the payload itself. The payload stays the library's.
// annotations are added to the signature's own.
func resign(t testing.TB, sig sigpolicy.Signature, priv crypto.Signer, annotations map[string]string) sigpolicy.Signature {
	t.Helper()
	digest, opts := sig.Payload, crypto.SignerOpts(crypto.Hash(0))
	if _, ok := priv.(ed25519.PrivateKey); !ok {
		sum := sha256.Sum256(sig.Payload)
		digest, opts = sum[:], crypto.SHA256
	}
	raw, err := priv.Sign(rand.Reader, digest, opts)
	if err != nil {
		t.Fatal(err)
	}
	out := sig
	out.Annotations = maps.Clone(sig.Annotations)
	maps.Copy(out.Annotations, annotations)
	out.Annotations["dev.cosignproject.cosign/signature"] = base64.StdEncoding.EncodeToString(raw)
	return out
}

// pemPublic is pub as a PEM "PUBLIC KEY" (PKIX), or for an RSA key with
// pkcs1 set, a PEM "RSA PUBLIC KEY".
func pemPublic(t testing.TB, pub crypto.PublicKey, pkcs1 bool) []byte {
	t.Helper()
	if pkcs1 {
		return pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(pub.(*rsa.PublicKey))})
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// writeJSONPolicy writes a policy whose default is req.
func writeJSONPolicy(t testing.TB, path string, req map[string]any) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"default": []any{req}})
	if err != nil {
		t.Fatal(err)
	}
	writePolicy(t, path, string(b))
}

// checkVerify has `crib image verify`'s check decide on ref under the
// policy at path: allowed when want is "", else refused saying want.
func checkVerify(t *testing.T, path, ref, want string) {
	t.Helper()
	d, err := Verify(context.Background(), Config{SignaturePolicy: sigpolicy.Config{Path: path}}, ref, Auth{}, "")
	if want == "" {
		if err != nil || !d.Allowed {
			t.Errorf("verify %s: %+v, %v; want allowed", ref, d, err)
		}
		return
	}
	var refused *sigpolicy.RefusedError
	if !errors.As(err, &refused) || d.Allowed || !strings.Contains(err.Error(), want) {
		t.Errorf("verify %s: %+v, %v; want refused for %q", ref, d, err, want)
	}
}

// TestVerifyKeyForms: sigstoreSigned takes its keys in every form
// containers-policy.json(5) lists (keyPath, keyPaths, keyData, keyDatas),
// as PEM PKIX keys (ECDSA, RSA, Ed25519) or a PKCS #1 RSA key; a signature
// by a key outside the list is refused.
func TestVerifyKeyForms(t *testing.T) {
	testutil.RequireRegistry(t)
	dir := t.TempDir()
	lib, other := newSigKey(t, dir, "lib"), newSigKey(t, dir, "other")
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// One repository per signer: the library's key, and keys of other
	// algorithms signing the library's payload by hand.
	base := fmt.Sprintf("127.0.0.1:5000/crib-sigkeys-%d", time.Now().UnixNano())
	signed := map[string]string{}
	for _, name := range []string{"lib", "rsa", "ed25519", "p384"} {
		repo := base + "/" + name
		img := testImage(t, "amd64", name)
		pushTo(t, repo+":v1", img)
		sig := sign(t, lib, img, repo+":v1")
		switch name {
		case "rsa":
			sig = resign(t, sig, rsaKey, nil)
		case "ed25519":
			sig = resign(t, sig, edKey, nil)
		case "p384":
			sig = resign(t, sig, ecKey, nil)
		}
		d, _ := img.Digest()
		attachTag(t, repo, d, sig)
		signed[name] = repo + ":v1"
	}
	libPub, err := os.ReadFile(lib.pubPath)
	if err != nil {
		t.Fatal(err)
	}
	rsaPKCS1, rsaPKIX := pemPublic(t, &rsaKey.PublicKey, true), pemPublic(t, &rsaKey.PublicKey, false)
	edPub, ecPub := pemPublic(t, edKey.Public(), false), pemPublic(t, &ecKey.PublicKey, false)
	p384Path := filepath.Join(dir, "p384.pub")
	if err := os.WriteFile(p384Path, ecPub, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		name  string
		req   map[string]any
		image string
		want  string
	}{
		{"keyPath", map[string]any{"keyPath": lib.pubPath}, "lib", ""},
		{"keyPath of another key", map[string]any{"keyPath": other.pubPath}, "lib", "cryptographic signature verification failed"},
		{"keyPaths, the signer's last", map[string]any{"keyPaths": []string{other.pubPath, p384Path, lib.pubPath}}, "lib", ""},
		{"keyPaths, P-384", map[string]any{"keyPaths": []string{other.pubPath, p384Path}}, "p384", ""},
		{"keyPaths without the signer's", map[string]any{"keyPaths": []string{other.pubPath, p384Path}}, "lib", "cryptographic signature verification failed"},
		{"keyData", map[string]any{"keyData": libPub}, "lib", ""},
		{"keyData, RSA PKCS #1", map[string]any{"keyData": rsaPKCS1}, "rsa", ""},
		{"keyData, RSA PKIX", map[string]any{"keyData": rsaPKIX}, "rsa", ""},
		{"keyDatas, Ed25519", map[string]any{"keyDatas": [][]byte{rsaPKIX, edPub}}, "ed25519", ""},
		{"keyDatas without the signer's", map[string]any{"keyDatas": [][]byte{rsaPKIX, libPub}}, "ed25519", "cryptographic signature verification failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := map[string]any{"type": "sigstoreSigned", "signedIdentity": map[string]any{"type": "matchRepository"}}
			maps.Copy(req, c.req)
			path := filepath.Join(dir, fmt.Sprintf("policy-%d.json", i))
			writeJSONPolicy(t, path, req)
			checkVerify(t, path, signed[c.image], c.want)
		})
	}
}

// TestVerifySignedIdentity: the signedIdentity rules of
// containers-policy.json(5) decide which signed docker reference is
// accepted for the image pulled.
func TestVerifySignedIdentity(t *testing.T) {
	testutil.RequireRegistry(t)
	dir := t.TempDir()
	key := newSigKey(t, dir, "k")
	base := fmt.Sprintf("127.0.0.1:5000/crib-sigident-%d", time.Now().UnixNano())
	mirror := base + "/mirror"
	notAccepted := "is not accepted"
	for i, c := range []struct {
		name     string
		identity map[string]any                // nil: the default, matchRepoDigestOrExact
		signedAs func(repo, app string) string // the identity the signature names
		byDigest bool                          // pull repo@digest, not repo:v1
		want     string
	}{
		{"matchRepoDigestOrExact, same tag", nil, func(repo, _ string) string { return repo + ":v1" }, false, ""},
		{"matchRepoDigestOrExact, other tag", nil, func(repo, _ string) string { return repo + ":v2" }, false, notAccepted},
		{"matchRepoDigestOrExact, by digest", nil, func(repo, _ string) string { return repo + ":v2" }, true, ""},
		{"matchRepoDigestOrExact, by digest, other repository", nil, func(_, _ string) string { return base + "/else:v1" }, true, notAccepted},
		{"matchExact, same tag", map[string]any{"type": "matchExact"}, func(repo, _ string) string { return repo + ":v1" }, false, ""},
		{"matchExact, by digest", map[string]any{"type": "matchExact"}, func(repo, _ string) string { return repo + ":v1" }, true, notAccepted},
		{"matchRepository, other tag", map[string]any{"type": "matchRepository"}, func(repo, _ string) string { return repo + ":v2" }, false, ""},
		{"matchRepository, other repository", map[string]any{"type": "matchRepository"}, func(_, _ string) string { return base + "/else:v1" }, false, notAccepted},
		{"exactReference", map[string]any{"type": "exactReference", "dockerReference": "registry.example/app:1"},
			func(_, _ string) string { return "registry.example/app:1" }, false, ""},
		{"exactReference, other tag", map[string]any{"type": "exactReference", "dockerReference": "registry.example/app:1"},
			func(_, _ string) string { return "registry.example/app:2" }, false, notAccepted},
		{"exactRepository", map[string]any{"type": "exactRepository", "dockerRepository": "registry.example/app"},
			func(_, _ string) string { return "registry.example/app:any" }, false, ""},
		{"exactRepository, other repository", map[string]any{"type": "exactRepository", "dockerRepository": "registry.example/app"},
			func(_, _ string) string { return "registry.example/other:any" }, false, notAccepted},
		{"remapIdentity", map[string]any{"type": "remapIdentity", "prefix": mirror, "signedPrefix": "registry.example/prod"},
			func(_, app string) string { return "registry.example/prod/" + app + ":v1" }, false, ""},
		{"remapIdentity, other signed prefix", map[string]any{"type": "remapIdentity", "prefix": mirror, "signedPrefix": "registry.example/prod"},
			func(_, app string) string { return "registry.example/dev/" + app + ":v1" }, false, notAccepted},
	} {
		t.Run(c.name, func(t *testing.T) {
			app := fmt.Sprintf("c%d", i)
			repo := mirror + "/" + app
			img := testImage(t, "amd64", app)
			pushTo(t, repo+":v1", img)
			d, _ := img.Digest()
			signedAs := c.signedAs(repo, app)
			attachTag(t, repo, d, sign(t, key, img, signedAs))
			req := map[string]any{"type": "sigstoreSigned", "keyPath": key.pubPath}
			if c.identity != nil {
				req["signedIdentity"] = c.identity
			}
			path := filepath.Join(dir, app+".json")
			writeJSONPolicy(t, path, req)
			ref := repo + ":v1"
			if c.byDigest {
				ref = repo + "@" + d.String()
			}
			want := c.want
			if want != "" {
				want = fmt.Sprintf("Signature for identity %q %s", signedAs, want)
			}
			checkVerify(t, path, ref, want)
		})
	}
}

// TestPullSignedByRefused: a scope wanting signedBy (GPG simple signing)
// refuses with the reason crib cannot check it, and stores nothing.
func TestPullSignedByRefused(t *testing.T) {
	testutil.RequireRegistry(t)
	requiresRoot(t)
	dir := t.TempDir()
	keyring := filepath.Join(dir, "pubring.gpg")
	writePolicy(t, keyring, "")
	repo := fmt.Sprintf("127.0.0.1:5000/crib-sigsignedby-%d/app", time.Now().UnixNano())
	pushTo(t, repo+":v1", testImage(t, "amd64", "signedby"))
	policy := filepath.Join(dir, "policy.json")
	writePolicy(t, policy, fmt.Sprintf(`{"default": [{"type": "insecureAcceptAnything"}],
 "transports": {"docker": {%q: [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": %q}]}}}`, repo, keyring))
	root := t.TempDir()
	s := openStore(t, root, Config{SignaturePolicy: sigpolicy.Config{Path: policy}})
	_, err := s.Pull(context.Background(), repo+":v1", Auth{})
	checkRefused(t, s, root, err, repo+":v1", fmt.Sprintf("transports.docker[%q]", repo), "signedBy (GPG simple signing) requirements are not supported by crib")
	checkVerify(t, policy, repo+":v1", "use sigstoreSigned")
}

// TestPullBadPolicy: a policy file that is missing or not a policy fails
// the pull as a failed precondition naming the file, and stores nothing.
func TestPullBadPolicy(t *testing.T) {
	testutil.RequireRegistry(t)
	requiresRoot(t)
	dir := t.TempDir()
	ref := fmt.Sprintf("127.0.0.1:5000/crib-sigbad-%d/app:v1", time.Now().UnixNano())
	pushTo(t, ref, testImage(t, "amd64", "bad-policy"))
	garbled := filepath.Join(dir, "garbled.json")
	writePolicy(t, garbled, `{"default": [{"type": "sigstoreSigned"}]}`)
	for _, path := range []string{filepath.Join(dir, "missing.json"), garbled} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			root := t.TempDir()
			s := openStore(t, root, Config{SignaturePolicy: sigpolicy.Config{Path: path}})
			_, err := s.Pull(context.Background(), ref, Auth{})
			if !errdefs.IsFailedPrecondition(err) || !strings.Contains(err.Error(), path) {
				t.Fatalf("pull under %s: %v; want a failed precondition naming the file", path, err)
			}
			checkNothingStored(t, s, root)
		})
	}
}
