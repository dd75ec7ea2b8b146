//go:build containers_image_openpgp

package sigpolicy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/containerd/errdefs"
	"go.podman.io/image/v5/directory"
	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/image"
	"go.podman.io/image/v5/signature"
)

// Built reports whether this build can verify signatures.
const Built = true

// evaluate reads the policy in file and evaluates it for img.
func evaluate(ctx context.Context, tmpDir, file string, img Image) (Decision, error) {
	pol, err := signature.NewPolicyFromFile(file)
	if err != nil {
		return Decision{}, fmt.Errorf("signature policy: %w: %w", err, errdefs.ErrFailedPrecondition)
	}
	named, err := reference.ParseNormalizedNamed(img.Ref)
	if err != nil {
		return Decision{}, fmt.Errorf("image reference %q: %v: %w", img.Ref, err, errdefs.ErrInvalidArgument)
	}
	ref := dockerRef{named: named}
	reqs, d := scopeOf(pol, ref)
	for _, r := range reqs {
		d.Requirements = append(d.Requirements, requirementType(r))
	}
	if slices.Contains(d.Requirements, "signedBy") {
		d.Reason = signedByReason
		return d, nil
	}
	var sigs []Signature
	if verifiesSignatures(d.Requirements) && img.Signatures != nil {
		if sigs, err = img.Signatures(ctx); err != nil {
			return d, fmt.Errorf("fetch signatures of %s: %w", img.Ref, err)
		}
	}
	dir, err := os.MkdirTemp(tmpDir, "sigpolicy-")
	if err != nil {
		return d, fmt.Errorf("signature check: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := writeDir(dir, img.Manifest, sigs); err != nil {
		return d, fmt.Errorf("signature check: %w", err)
	}
	dref, err := directory.NewReference(dir)
	if err != nil {
		return d, fmt.Errorf("signature check: %w", err)
	}
	src, err := dref.NewImageSource(ctx, nil)
	if err != nil {
		return d, fmt.Errorf("signature check: %w", err)
	}
	defer src.Close()
	pc, err := signature.NewPolicyContext(pol)
	if err != nil {
		return d, fmt.Errorf("signature policy %s: %w", file, err)
	}
	defer func() { _ = pc.Destroy() }()
	// The policy is evaluated for the image as the kubelet named it, on
	// the manifest and signatures crib fetched, as CRI-O checks a pulled
	// image against a registry's policy.
	allowed, err := pc.IsRunningImageAllowed(ctx, image.UnparsedInstanceWithReference(image.UnparsedInstance(src, nil), ref))
	if allowed {
		d.Allowed = true
		return d, nil
	}
	if ctx.Err() != nil {
		return d, fmt.Errorf("signature check of %s: %w", img.Ref, context.Cause(ctx))
	}
	// Every other "no" is a refusal, whatever its error type: the library
	// returns a signature's own failure as it found it (a missing
	// certificate annotation, a key file it cannot read), not always as a
	// PolicyRequirementError or InvalidSignatureError, and the image is
	// refused all the same.
	if err == nil {
		err = errors.New("refused without a reason")
	}
	d.Reason = err.Error()
	return d, nil
}

// signedByReason is why a scope wanting signedBy refuses. Simple (GPG)
// signatures are not kept in a registry but on a lookaside web server
// named by containers-registries.d(5) (or behind a registry API extension
// few registries have); crib reads neither, so such a requirement could
// only ever fail with "no signature exists". It says so instead.
const signedByReason = "signedBy (GPG simple signing) requirements are not supported by crib: " +
	"it reads sigstore signatures attached in the registry, not simple signatures from a lookaside server; " +
	"sign with cosign and use sigstoreSigned"

// scopeOf returns the requirements the library applies to ref, found the
// way its PolicyContext does (most specific docker scope, then the
// transport's "" scope, then the default), and which scope that was.
func scopeOf(pol *signature.Policy, ref dockerRef) (signature.PolicyRequirements, Decision) {
	if scopes, ok := pol.Transports[transportName]; ok {
		if reqs, ok := scopes[ref.PolicyConfigurationIdentity()]; ok {
			return reqs, Decision{Scope: ref.PolicyConfigurationIdentity()}
		}
		for _, s := range ref.PolicyConfigurationNamespaces() {
			if reqs, ok := scopes[s]; ok {
				return reqs, Decision{Scope: s}
			}
		}
		if reqs, ok := scopes[""]; ok {
			return reqs, Decision{}
		}
	}
	return pol.Default, Decision{Default: true}
}

// requirementType is the "type" a requirement has in the policy file.
func requirementType(r signature.PolicyRequirement) string {
	b, err := json.Marshal(r)
	if err != nil {
		return "unknown"
	}
	var t struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(b, &t) != nil || t.Type == "" {
		return "unknown"
	}
	return t.Type
}

// verifiesSignatures reports whether any requirement reads signatures:
// the others need none fetched.
func verifiesSignatures(types []string) bool {
	for _, t := range types {
		if t != "insecureAcceptAnything" && t != "reject" {
			return true
		}
	}
	return false
}

// writeDir lays out manifest and sigs as the library's dir: transport
// keeps an image (signatures in its own "sigstore-json" blob form), the
// one public way to hand it sigstore signatures it did not fetch itself.
func writeDir(dir string, manifest []byte, sigs []Signature) error {
	if err := os.WriteFile(filepath.Join(dir, "version"), []byte("Directory Transport Version: 1.1\n"), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), manifest, 0o600); err != nil {
		return err
	}
	for i, s := range sigs {
		b, err := json.Marshal(struct {
			MIMEType    string            `json:"mimeType"`
			Payload     []byte            `json:"payload"`
			Annotations map[string]string `json:"annotations"`
		}{s.MediaType, s.Payload, s.Annotations})
		if err != nil {
			return err
		}
		blob := append([]byte("\x00sigstore-json\n"), b...)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("signature-%d", i+1)), blob, 0o600); err != nil {
			return err
		}
	}
	return nil
}
