package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/config"
	"github.com/crib-dev/crib/internal/testutil"
)

// TestSignaturePolicyReload: a [signature_policy] added in a drop-in
// applies after a SIGHUP; a refused PullImage is the Unknown status whose
// message starts with SignatureValidationFailed, as the kubelet reads it,
// and only the pod namespace with a policy of its own is refused. Removing
// the drop-in and reloading again lets the pull through.
func TestSignaturePolicyReload(t *testing.T) {
	testutil.RequireRegistry(t)
	e := newEnv(t)
	pid := e.d.Pid()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref := fmt.Sprintf("127.0.0.1:5000/crib-sigpolicy-%d/reload:1", time.Now().UnixNano())
	pushed, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(pushed, img); err != nil {
		t.Fatal(err)
	}
	pull := func(ns string) error {
		pod := e.podConfig("sigpolicy")
		pod.Metadata.Namespace = ns
		_, err := e.d.Images.PullImage(e.ctx(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}, SandboxConfig: pod})
		return err
	}
	if err := pull("locked"); err != nil {
		t.Fatalf("pull %s with no policy: %v", ref, err)
	}
	if _, err := e.d.Images.RemoveImage(e.ctx(), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	nsDir := filepath.Join(dir, "ns")
	if err := os.Mkdir(nsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "policy.json"), `{"default": [{"type": "insecureAcceptAnything"}]}`)
	writeFile(t, filepath.Join(nsDir, "locked.json"), `{"default": [{"type": "insecureAcceptAnything"}], "transports": {"docker": {"127.0.0.1:5000": [{"type": "reject"}]}}}`)
	dropIns := config.DropInDir(e.d.Config)
	if err := os.MkdirAll(dropIns, 0o755); err != nil {
		t.Fatal(err)
	}
	dropIn := filepath.Join(dropIns, "50-sigpolicy.toml")
	writeFile(t, dropIn, fmt.Sprintf("[signature_policy]\npath = %q\nnamespaced_dir = %q\n", filepath.Join(dir, "policy.json"), nsDir))
	reloads := 0
	reload := func() {
		t.Helper()
		reloads++
		if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, fmt.Sprintf("reload %d in the daemon log", reloads), func() bool {
			return strings.Count(e.d.ReadLog(), "configuration reloaded") >= reloads
		})
	}
	reload()

	err = pull("locked")
	st, _ := status.FromError(err)
	if err == nil || st.Code() != codes.Unknown || !strings.HasPrefix(st.Message(), "SignatureValidationFailed: Source image rejected: ") {
		t.Fatalf("pull %s for namespace locked: got %v, want an Unknown status starting with SignatureValidationFailed", ref, err)
	}
	for _, want := range []string{ref, `transports.docker["127.0.0.1:5000"]`, "locked.json", "rejected by policy"} {
		if !strings.Contains(st.Message(), want) {
			t.Errorf("refusal %q does not say %q", st.Message(), want)
		}
	}
	if resp, err := e.d.Images.ImageStatus(e.ctx(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil || resp.GetImage() != nil {
		t.Errorf("ImageStatus after the refused pull: %v, %v; want no image", resp.GetImage(), err)
	}
	if err := pull("open"); err != nil {
		t.Errorf("pull %s for namespace open: %v", ref, err)
	}
	if _, err := e.d.Images.RemoveImage(e.ctx(), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		t.Fatal(err)
	}

	if err := os.Remove(dropIn); err != nil {
		t.Fatal(err)
	}
	reload()
	if err := pull("locked"); err != nil {
		t.Errorf("pull %s after the policy was removed: %v", ref, err)
	}
	if e.d.Pid() != pid {
		t.Errorf("the daemon's pid changed from %d to %d", pid, e.d.Pid())
	}
}
