//go:build containers_image_openpgp

package image

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"path/filepath"
	"testing"
	"time"

	"github.com/crib-dev/crib/internal/sigpolicy"
	"github.com/crib-dev/crib/internal/testutil"
)

// Fulcio's extensions recording the OIDC issuer the signer logged in at:
// the first holds the raw string, its successor a DER UTF8String.
var (
	oidFulcioIssuer   = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}
	oidFulcioIssuerV2 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}
)

// fulcioCA stands in for a Fulcio instance: a root (what a policy trusts),
// an intermediate, and the short-lived leaf certificates it issues.
type fulcioCA struct {
	rootPEM, interPEM []byte
	inter             *x509.Certificate
	interKey          *ecdsa.PrivateKey
}

func newFulcioCA(t testing.TB, name string) *fulcioCA {
	t.Helper()
	now := time.Now()
	rootKey := newECKey(t)
	rootTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{Organization: []string{name}, CommonName: name + " root"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, BasicConstraintsValid: true, IsCA: true,
	}
	root := createCert(t, rootTmpl, rootTmpl, &rootKey.PublicKey, rootKey)
	interKey := newECKey(t)
	interTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{Organization: []string{name}, CommonName: name + " intermediate"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, BasicConstraintsValid: true, IsCA: true,
	}
	inter := createCert(t, interTmpl, root, &interKey.PublicKey, rootKey)
	return &fulcioCA{rootPEM: certPEM(root), interPEM: certPEM(inter), inter: inter, interKey: interKey}
}

// leaf issues, as Fulcio does for a signer who logged in at issuer as
// email, a code-signing certificate for a fresh key, valid from notBefore
// for ten minutes.
func (ca *fulcioCA) leaf(t testing.TB, email, issuer string, notBefore time.Time) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	issuerV2, err := asn1.MarshalWithParams(issuer, "utf8")
	if err != nil {
		t.Fatal(err)
	}
	key := newECKey(t)
	cert := createCert(t, &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		NotBefore:    notBefore, NotAfter: notBefore.Add(10 * time.Minute),
		KeyUsage:       x509.KeyUsageDigitalSignature,
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		EmailAddresses: []string{email},
		ExtraExtensions: []pkix.Extension{
			{Id: oidFulcioIssuer, Value: []byte(issuer)},
			{Id: oidFulcioIssuerV2, Value: issuerV2},
		},
	}, ca.inter, &key.PublicKey, ca.interKey)
	return key, certPEM(cert)
}

func newECKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func createCert(t testing.TB, tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, signer *ecdsa.PrivateKey) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// rekorLog stands in for a Rekor log: its key signs the signed entry
// timestamps (SETs) a policy's rekorPublicKey checks.
type rekorLog struct {
	key    *ecdsa.PrivateKey
	pubPEM []byte
}

func newRekorLog(t testing.TB) *rekorLog {
	t.Helper()
	k := newECKey(t)
	return &rekorLog{key: k, pubPEM: pemPublic(t, &k.PublicKey, false)}
}

// bundle is cosign's bundle annotation for a hashedrekord entry logged at
// at: the signature sigB64 over payload by the key of certificate cert,
// and the log's SET over the entry (its key's ECDSA signature of the
// SHA-256 of the entry's canonical JSON).
func (r *rekorLog) bundle(t testing.TB, cert []byte, sigB64 string, payload []byte, at time.Time) string {
	t.Helper()
	rawSig, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(payload)
	body, err := json.Marshal(map[string]any{
		"apiVersion": "0.0.1",
		"kind":       "hashedrekord",
		"spec": map[string]any{
			"data":      map[string]any{"hash": map[string]any{"algorithm": "sha256", "value": hex.EncodeToString(sum[:])}},
			"signature": map[string]any{"content": rawSig, "publicKey": map[string]any{"content": cert}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	logID := sha256.Sum256(r.pubPEM)
	// json.Marshal of a map sorts its keys and has no spaces; with only
	// base64, hex and integers as values, that is the canonical JSON
	// (RFC 8785) the SET signs.
	entry, err := json.Marshal(map[string]any{
		"body":           body,
		"integratedTime": at.Unix(),
		"logIndex":       42,
		"logID":          hex.EncodeToString(logID[:]),
	})
	if err != nil {
		t.Fatal(err)
	}
	entrySum := sha256.Sum256(entry)
	set, err := ecdsa.SignASN1(rand.Reader, r.key, entrySum[:])
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(struct {
		SignedEntryTimestamp []byte
		Payload              json.RawMessage
	}{set, entry})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// keyless is how one keyless (Fulcio and Rekor) signature is made.
type keyless struct {
	ca            *fulcioCA
	email, issuer string
	log           *rekorLog
	at            time.Time // when the log integrated the entry
	notBefore     time.Time // the leaf certificate's start
	noChain       bool      // leave out the chain annotation
	noBundle      bool      // leave out the bundle annotation
	bundleOf      []byte    // the payload the log's entry names; nil: the signed one
}

// keylessSign signs base's payload (the library's simple-signing payload
// for the image) as cosign signs keyless: a leaf key certified by the CA,
// the certificate, chain and Rekor bundle annotations alongside.
func keylessSign(t testing.TB, base sigpolicy.Signature, k keyless) sigpolicy.Signature {
	t.Helper()
	key, cert := k.ca.leaf(t, k.email, k.issuer, k.notBefore)
	sig := resign(t, base, key, map[string]string{"dev.sigstore.cosign/certificate": string(cert)})
	if !k.noChain {
		sig.Annotations["dev.sigstore.cosign/chain"] = string(k.ca.interPEM) + string(k.ca.rootPEM)
	}
	if !k.noBundle {
		logged := sig.Payload
		if k.bundleOf != nil {
			logged = k.bundleOf
		}
		sig.Annotations["dev.sigstore.cosign/bundle"] = k.log.bundle(t, cert, sig.Annotations["dev.cosignproject.cosign/signature"], logged, k.at)
	}
	return sig
}

// TestPullFulcioRekor verifies keyless sigstore signatures offline: a
// self-made Fulcio-like CA certifies the signing key for an email and an
// OIDC issuer, a self-made Rekor key signs the log entry's SET, and the
// policy's fulcio table and rekorPublicKeyPath name them. The certificate,
// chain and bundle annotations reach the library through crib's fetch
// (cosign's tag and referrers); what does not verify is refused with the
// library's reason and leaves nothing in the store. The same certificates
// under a pki table (a CA of one's own, no Rekor) are checked alike.
func TestPullFulcioRekor(t *testing.T) {
	testutil.RequireRegistry(t)
	requiresRoot(t)
	const (
		email  = "builder@example.com"
		issuer = "https://oidc.example.com"
	)
	dir := t.TempDir()
	ca, otherCA := newFulcioCA(t, "fulcio"), newFulcioCA(t, "rogue")
	log, otherLog := newRekorLog(t), newRekorLog(t)
	caPath, rekorPath := filepath.Join(dir, "fulcio.pem"), filepath.Join(dir, "rekor.pub")
	writePolicy(t, caPath, string(ca.rootPEM))
	writePolicy(t, rekorPath, string(log.pubPEM))
	policy := func(fulcio map[string]any) string {
		f := map[string]any{"caPath": caPath, "oidcIssuer": issuer, "subjectEmail": email}
		for k, v := range fulcio {
			if v == nil {
				delete(f, k)
			} else {
				f[k] = v
			}
		}
		p := filepath.Join(dir, fmt.Sprintf("policy-%d.json", time.Now().UnixNano()))
		writeJSONPolicy(t, p, map[string]any{"type": "sigstoreSigned", "fulcio": f, "rekorPublicKeyPath": rekorPath,
			"signedIdentity": map[string]any{"type": "matchRepository"}})
		return p
	}
	defaultPolicy := policy(nil)
	// A non-Fulcio CA (pki) certifies the same way, without Rekor.
	pkiPolicy := filepath.Join(dir, "pki.json")
	writeJSONPolicy(t, pkiPolicy, map[string]any{"type": "sigstoreSigned",
		"pki":            map[string]any{"caRootsPath": caPath, "subjectEmail": email},
		"signedIdentity": map[string]any{"type": "matchRepository"}})
	libKey := newSigKey(t, dir, "payload")
	base := fmt.Sprintf("127.0.0.1:5000/crib-sigfulcio-%d", time.Now().UnixNano())
	now := time.Now()

	for i, c := range []struct {
		name     string
		change   func(*keyless)
		policy   string // "": defaultPolicy
		referrer bool
		want     string // "": pulled
	}{
		{name: "accepted"},
		{name: "accepted as a referrer", referrer: true},
		{name: "accepted, CA given as caData", policy: policy(map[string]any{"caPath": nil, "caData": ca.rootPEM})},
		{name: "wrong email", change: func(k *keyless) { k.email = "intruder@example.com" },
			want: `Required email "builder@example.com" not found (got ["intruder@example.com"])`},
		{name: "policy wants another email", policy: policy(map[string]any{"subjectEmail": "someone@example.com"}),
			want: `Required email "someone@example.com" not found`},
		{name: "wrong issuer", change: func(k *keyless) { k.issuer = "https://oidc.evil.example" },
			want: `Unexpected Fulcio OIDC issuer "https://oidc.evil.example"`},
		{name: "untrusted CA", change: func(k *keyless) { k.ca = otherCA },
			want: "certificate signed by unknown authority"},
		{name: "chain left out", change: func(k *keyless) { k.noChain = true },
			want: "certificate signed by unknown authority"},
		{name: "certificate not valid when logged", change: func(k *keyless) { k.notBefore = now.Add(-time.Hour) },
			want: "certificate has expired or is not yet valid"},
		{name: "SET by another log", change: func(k *keyless) { k.log = otherLog },
			want: "cryptographic signature verification of Rekor SET failed"},
		{name: "SET of another payload", change: func(k *keyless) { k.bundleOf = []byte(`{"other":"payload"}`) },
			want: "payload in Rekor SET does not match"},
		{name: "no SET", change: func(k *keyless) { k.noBundle = true },
			want: "missing dev.sigstore.cosign/bundle annotation"},
		{name: "PKI certificate", policy: pkiPolicy, change: func(k *keyless) { k.noBundle = true }},
		{name: "PKI certificate of another CA", policy: pkiPolicy, change: func(k *keyless) { k.ca, k.noBundle = otherCA, true },
			want: "certificate signed by unknown authority"},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := fmt.Sprintf("%s/c%d", base, i)
			ref := repo + ":v1"
			img := testImage(t, "amd64", fmt.Sprintf("keyless-%d", i))
			pushTo(t, ref, img)
			k := keyless{ca: ca, email: email, issuer: issuer, log: log, at: now, notBefore: now.Add(-time.Minute)}
			if c.change != nil {
				c.change(&k)
			}
			sig := keylessSign(t, sign(t, libKey, img, ref), k)
			if c.referrer {
				attachReferrer(t, repo, img, sig)
			} else {
				d, _ := img.Digest()
				attachTag(t, repo, d, sig)
			}
			path := c.policy
			if path == "" {
				path = defaultPolicy
			}
			checkVerify(t, path, ref, c.want)
			root := t.TempDir()
			s := openStore(t, root, Config{SignaturePolicy: sigpolicy.Config{Path: path}})
			got, err := s.Pull(context.Background(), ref, Auth{})
			if c.want != "" {
				checkRefused(t, s, root, err, ref, "default", c.want)
				return
			}
			if err != nil {
				t.Fatalf("pull %s: %v", ref, err)
			}
			if readTop(t, s, got, "etc/marker") == "" {
				t.Errorf("pulled image has no /etc/marker")
			}
		})
	}
}
