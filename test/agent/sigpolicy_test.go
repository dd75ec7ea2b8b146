package agenttest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1random "github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// sigpolicyScope is the repository namespace on the loopback registry
// that the suite's daemon wants signed; every other image is accepted.
const sigpolicyScope = "127.0.0.1:5000/crib-sigpolicy-agent"

// signaturePolicyConfig writes a containers-policy.json that wants images
// under sigpolicyScope signed by a key nobody holds, and returns the
// daemon configuration that applies it.
func signaturePolicyConfig(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pub := filepath.Join(dir, "key.pub")
	if err := os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "policy.json")
	body := fmt.Sprintf(`{"default": [{"type": "insecureAcceptAnything"}],
 "transports": {"docker": {%q: [{"type": "sigstoreSigned", "keyPath": %q}]}}}`, sigpolicyScope, pub)
	if err := os.WriteFile(policy, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("[signature_policy]\npath = %q\n", policy)
}

// testSignaturePolicy: a pod whose image the node's signature policy
// refuses (unsigned, in a scope that wants a signature) waits with the
// kubelet's SignatureValidationFailed and the refusal's reason, and has a
// Failed event naming the image and the policy's scope; a pod
// whose image the policy's default accepts is pulled and runs.
func testSignaturePolicy(t *testing.T, s *suite) {
	if s.env.daemon == nil {
		t.Skipf("%s is set: the signature policy is crib's configuration", EndpointEnv)
	}
	testutil.RequireRegistry(t)
	ref := fmt.Sprintf("%s/unsigned-%d:v1", sigpolicyScope, time.Now().UnixNano())
	img, err := v1random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	refused := s.env.shell("app", sleepForever)
	refused.Image = ref
	refused.ImagePullPolicy = corev1.PullIfNotPresent
	s.h.writePod(t, podSpec("sig-refused", refused))
	// The allowed pod pulls its image too, through the policy's default.
	allowed := s.env.shell("app", sleepForever)
	allowed.Image = strings.Replace(testutil.RegistryBusyboxRef, "registry.k8s.io", "127.0.0.1:5000", 1)
	allowed.ImagePullPolicy = corev1.PullAlways
	s.h.writePod(t, podSpec("sig-allowed", allowed))

	var msg string
	s.h.waitFor(t, "sig-refused", "SignatureValidationFailed", longWait, func(p *corev1.Pod) bool {
		st := containerStatus(p, "app")
		if st == nil || st.State.Waiting == nil || st.State.Waiting.Reason != "SignatureValidationFailed" {
			return false
		}
		msg = st.State.Waiting.Message
		return true
	})
	scope := fmt.Sprintf("transports.docker[%q]", sigpolicyScope)
	if want := "image pull failed for " + ref + " because the signature validation failed: Source image rejected: "; !strings.HasPrefix(msg, want) {
		t.Errorf("waiting message %q does not start %q, as the kubelet's", msg, want)
	}
	for _, want := range []string{"A signature was required, but no signature exists", scope} {
		if !strings.Contains(msg, want) {
			t.Errorf("waiting message %q lacks %q", msg, want)
		}
	}
	// The pod's Failed event, as the kubelet records it: the image and
	// the runtime's refusal, naming the scope that applied.
	failedEvent := func() (found bool, failed []string) {
		for _, ev := range s.h.Agent().Events().List().Items {
			if ev.InvolvedObject.Name != "sig-refused" || ev.Type != corev1.EventTypeWarning || ev.Reason != "Failed" {
				continue
			}
			failed = append(failed, ev.Message)
			found = found || strings.HasPrefix(ev.Message, fmt.Sprintf("Failed to pull image %q: SignatureValidationFailed: Source image rejected: ", ref)) &&
				strings.Contains(ev.Message, scope)
		}
		return found, failed
	}
	for deadline := time.Now().Add(longWait); ; time.Sleep(pollEvery) {
		found, failed := failedEvent()
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("no Failed event for sig-refused naming %s and %s; its Failed events: %q", ref, scope, failed)
			break
		}
	}
	s.h.waitFor(t, "sig-allowed", "app running", longWait, func(p *corev1.Pod) bool { return running(p, "app") })
	s.h.removePod(t, "sig-refused")
	s.h.removePod(t, "sig-allowed")
	s.h.waitFor(t, "sig-refused", "gone", longWait, func(p *corev1.Pod) bool { return p == nil })
	s.h.waitFor(t, "sig-allowed", "gone", longWait, func(p *corev1.Pod) bool { return p == nil })
}
