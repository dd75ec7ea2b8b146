//go:build containers_image_openpgp

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/crib-dev/crib/internal/testutil"
)

// TestImageVerify: `crib image verify REF` asks the registry, with no
// daemon, and says whether the configured policy would allow the pull and
// by which rule; a refusal exits 1 with the reason.
func TestImageVerify(t *testing.T) {
	testutil.RequireRegistry(t)
	base := fmt.Sprintf("127.0.0.1:5000/crib-verify-%d", time.Now().UnixNano())
	for _, repo := range []string{"open", "closed"} {
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		r, err := name.ParseReference(base+"/"+repo+":v1", name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(r, img); err != nil {
			t.Fatalf("push %s: %v", r, err)
		}
	}
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.json")
	writeTestFile(t, policy, fmt.Sprintf(`{"default": [{"type": "insecureAcceptAnything"}],
 "transports": {"docker": {%q: [{"type": "reject"}]}}}`, base+"/closed"))
	cfg := filepath.Join(dir, "crib.toml")
	writeTestFile(t, cfg, fmt.Sprintf("state = %q\n[signature_policy]\npath = %q\n", filepath.Join(dir, "state"), policy))

	verify := func(ref string) (int, string) {
		var stdout, stderr strings.Builder
		code := imageCmd([]string{"verify", "--config", cfg, ref}, &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	ref := base + "/open:v1"
	if code, out := verify(ref); code != 0 || !strings.HasPrefix(out, fmt.Sprintf("allowed: %s by default of %s (insecureAcceptAnything)", ref, policy)) {
		t.Errorf("verify %s: exit %d, %q; want allowed by the default", ref, code, out)
	}
	ref = base + "/closed:v1"
	code, out := verify(ref)
	want := fmt.Sprintf("refused: %s by transports.docker[%q] of %s (reject): ", ref, base+"/closed", policy)
	if code != 1 || !strings.HasPrefix(out, want) || !strings.Contains(out, "is rejected by policy") {
		t.Errorf("verify %s: exit %d, %q; want exit 1 and %q...", ref, code, out, want)
	}
}

func writeTestFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
