package testutil

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BusyboxRef is the reference of the busybox image that
// scripts/build-busybox-image.sh builds.
const BusyboxRef = "docker.io/library/busybox:latest"

// RegistryBusyboxRef is the busybox image of the loopback test registry
// (see shared/conformance/images.sh), reached through a mirror.
const RegistryBusyboxRef = "registry.k8s.io/e2e-test-images/busybox:1.29-2"

// LoopbackRegistry is the test registry that mirrors registry.k8s.io.
const LoopbackRegistry = "http://127.0.0.1:5000"

// TestImage says where a test image comes from and how a daemon gets it.
type TestImage struct {
	// Ref is the reference containers name.
	Ref string
	// Tarball, when set, is loaded into a daemon's root before it starts.
	Tarball string
	// Mirrors, when set, are registry mirrors (host -> endpoints) the daemon
	// is configured with; Ref is then pulled over the CRI after start.
	Mirrors map[string][]string
}

// Busybox returns the busybox test image: the tarball built by
// scripts/build-busybox-image.sh (once per test binary), or else the image
// of the loopback registry. It skips the test when neither is available.
func Busybox(t testing.TB) TestImage {
	t.Helper()
	shared.imageOnce.Do(func() {
		shared.image, shared.imageSkip = findBusybox()
	})
	if shared.imageSkip != "" {
		t.Skip(shared.imageSkip)
	}
	return shared.image
}

func findBusybox() (TestImage, string) {
	tarball, buildErr := buildBusyboxTarball()
	if buildErr == nil {
		return TestImage{Ref: BusyboxRef, Tarball: tarball}, ""
	}
	if regErr := registryUp(); regErr != nil {
		return TestImage{}, fmt.Sprintf("no busybox test image: %v; and the loopback registry is not usable: %v", buildErr, regErr)
	}
	fmt.Fprintf(os.Stderr, "testutil: %v; using %s from %s\n", buildErr, RegistryBusyboxRef, LoopbackRegistry)
	return TestImage{
		Ref:     RegistryBusyboxRef,
		Mirrors: map[string][]string{"registry.k8s.io": {LoopbackRegistry}},
	}, ""
}

// buildBusyboxTarball runs scripts/build-busybox-image.sh into the shared
// directory.
func buildBusyboxTarball() (string, error) {
	if prebuilt := os.Getenv(BusyboxTarballEnv); prebuilt != "" {
		if _, err := os.Stat(prebuilt); err != nil {
			return "", fmt.Errorf("%s: %w", BusyboxTarballEnv, err)
		}
		return prebuilt, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "scripts", "build-busybox-image.sh")
	if _, err := os.Stat(script); err != nil {
		return "", fmt.Errorf("busybox image script: %w", err)
	}
	dir, err := sharedDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "busybox.tar")
	cmd := exec.Command("bash", script, out)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build busybox image: %w\n%s", err, b)
	}
	return out, nil
}

// RegistryRequiredEnv, when set (scripts/test.sh and the VM's guest set it
// where they serve the loopback registry), makes a test that needs the
// registry fail when it is down, instead of skipping.
const RegistryRequiredEnv = "CRIB_REQUIRE_REGISTRY"

// RequireRegistry fails the test when the loopback registry does not
// answer and RegistryRequiredEnv is set, and skips it with the reason
// otherwise.
func RequireRegistry(t testing.TB) {
	t.Helper()
	err := registryUp()
	if err == nil {
		return
	}
	if os.Getenv(RegistryRequiredEnv) != "" {
		t.Fatalf("the loopback registry %s is not usable, and %s is set: %v", LoopbackRegistry, RegistryRequiredEnv, err)
	}
	t.Skipf("the loopback registry %s is not usable: %v", LoopbackRegistry, err)
}

// registryUp checks that the loopback registry answers its API root.
func registryUp() error {
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(LoopbackRegistry + "/v2/")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New("GET /v2/: " + resp.Status)
	}
	return nil
}
