package sigpolicy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/containerd/errdefs"
	crierrors "k8s.io/cri-api/pkg/errors"
)

// Config is where policies are read from; the zero value configures none.
type Config struct {
	// Path is a containers-policy.json(5) file.
	Path string
	// NamespacedDir holds <namespace>.json files, each replacing Path for
	// the pods of that namespace (CRI-O's signature_policy_dir).
	NamespacedDir string
}

// Enabled reports whether any policy is configured.
func (c Config) Enabled() bool { return c.Path != "" || c.NamespacedDir != "" }

// Signature is one sigstore signature as cosign attaches it: a layer of a
// signature manifest, its media type, its blob (the payload) and its
// annotations (the signature, and certificates or a Rekor bundle).
type Signature struct {
	MediaType   string
	Payload     []byte
	Annotations map[string]string
}

// Image is what a decision is made on.
type Image struct {
	// Ref names the image as asked for, normalized
	// (docker.io/library/busybox:1.36 or ...@sha256:...).
	Ref string
	// Namespace is the pod's namespace; "" for pulls outside a pod.
	Namespace string
	// Manifest is the manifest (or index) Ref resolves to, as fetched.
	Manifest []byte
	// Signatures fetches the image's signatures; it is called only when
	// the applicable requirements verify signatures.
	Signatures func(ctx context.Context) ([]Signature, error)
}

// Decision is the outcome of a check.
type Decision struct {
	// Allowed is true when every requirement of the scope accepted.
	Allowed bool
	// PolicyFile is the file whose rules applied.
	PolicyFile string
	// Scope is the docker transport scope that applied; "" when the
	// transport's default scope or the policy's default applied (see
	// Default).
	Scope string
	// Default is true when the policy's "default" requirements applied.
	Default bool
	// Requirements are the types of the scope's requirements, in order.
	Requirements []string
	// Reason is why the image was refused; empty when allowed.
	Reason string
}

// ScopeString names the scope for people.
func (d Decision) ScopeString() string {
	switch {
	case d.Default:
		return "default"
	case d.Scope == "":
		return `transports.docker[""]`
	}
	return fmt.Sprintf("transports.docker[%q]", d.Scope)
}

// RefusedError is a pull the policy refused. Its message starts with the
// CRI's SignatureValidationFailed, which the kubelet matches on (as it does
// for CRI-O's, "SignatureValidationFailed: Source image rejected: ...").
type RefusedError struct {
	Ref      string
	Decision Decision
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s: Source image rejected: %s (image %s, scope %s of %s)",
		crierrors.ErrSignatureValidationFailed, e.Decision.Reason, e.Ref, e.Decision.ScopeString(), e.Decision.PolicyFile)
}

// Unwrap makes the error both the CRI's reason and errdefs' failed
// precondition.
func (e *RefusedError) Unwrap() []error {
	return []error{crierrors.ErrSignatureValidationFailed, errdefs.ErrFailedPrecondition}
}

// Checker holds the configuration in force; the policy files themselves
// are read at every check, as CRI-O does, so edits apply to the next pull.
type Checker struct {
	tmpDir string // where checks lay out what they evaluate
	mu     sync.RWMutex
	cfg    Config
}

// New returns a Checker for cfg that keeps its scratch files in tmpDir
// ("" is the system's).
func New(cfg Config, tmpDir string) *Checker { return &Checker{cfg: cfg, tmpDir: tmpDir} }

// Set replaces the configuration; checks that start afterwards use it.
func (c *Checker) Set(cfg Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg = cfg
}

// Config is the configuration in force.
func (c *Checker) Config() Config {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cfg
}

// Enabled reports whether a policy is configured.
func (c *Checker) Enabled() bool { return c.Config().Enabled() }

// policyFile picks the file for namespace: <NamespacedDir>/<namespace>.json
// when it exists, else Path. It returns "" when neither applies.
func (c Config) policyFile(namespace string) (string, error) {
	if c.NamespacedDir != "" && namespace != "" {
		if strings.ContainsAny(namespace, `/\`) || namespace == "." || namespace == ".." {
			return "", fmt.Errorf("namespace %q is not a file name: %w", namespace, errdefs.ErrInvalidArgument)
		}
		p := filepath.Join(c.NamespacedDir, namespace+".json")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("signature policy %s: %w", p, err)
		}
	}
	return c.Path, nil
}

// Check decides whether img may be pulled. A refusal is a *RefusedError;
// any other error (an unreadable policy, signatures that could not be
// fetched) leaves the question open and the pull must fail too. With no
// policy configured everything is allowed.
func (c *Checker) Check(ctx context.Context, img Image) (Decision, error) {
	cfg := c.Config()
	if !cfg.Enabled() {
		return Decision{Allowed: true}, nil
	}
	file, err := cfg.policyFile(img.Namespace)
	if err != nil {
		return Decision{}, err
	}
	if file == "" {
		// Only a namespaced directory is configured and it has no file
		// for this namespace: as CRI-O, fall back to the system's file.
		file = SystemPolicyPath
	}
	d, err := evaluate(ctx, c.tmpDir, file, img)
	d.PolicyFile = file
	if err != nil {
		return d, err
	}
	if !d.Allowed {
		return d, &RefusedError{Ref: img.Ref, Decision: d}
	}
	return d, nil
}

// SystemPolicyPath is the policy a namespace without its own file uses
// when no path is configured.
const SystemPolicyPath = "/etc/containers/policy.json"
