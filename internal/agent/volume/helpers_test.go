package volume

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crib-dev/crib/internal/mount"
)

// requireRoot skips a test that mounts or makes device nodes.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

// newTestManager returns a Manager on a fresh root; at cleanup it checks
// that no mount is left under the root and unmounts any that is, so the
// temp dir can go.
func newTestManager(t *testing.T) (*Manager, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "pods")
	t.Cleanup(func() {
		left, err := mount.Under(root)
		if err != nil {
			t.Errorf("read mounts: %v", err)
		}
		if len(left) > 0 {
			t.Errorf("mounts left under root: %v", left)
			_ = mount.UnmountUnder(root)
		}
	})
	return New(Config{Root: root}, nil), root
}

// removeAtCleanup removes the pod's volumes when the test ends.
func removeAtCleanup(t *testing.T, m *Manager, uid string) {
	t.Cleanup(func() {
		if err := m.Remove(context.Background(), uid); err != nil {
			t.Errorf("Remove: %v", err)
		}
	})
}

func testPod(uid string, vols ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "web",
			Namespace: "default",
			UID:       types.UID(uid),
			Labels:    map[string]string{"app": "web", "tier": "front"},
		},
		Spec: corev1.PodSpec{Volumes: vols},
	}
}

func vol(name string, src corev1.VolumeSource) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: src}
}

// mountEntry is one /proc/self/mountinfo line of interest.
type mountEntry struct {
	fsType  string
	options string // super options
}

// mountsAt lists every mount whose mount point is exactly path.
func mountsAt(t *testing.T, path string) []mountEntry {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []mountEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields := strings.Fields(pre)
		tail := strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 || fields[4] != path {
			continue
		}
		out = append(out, mountEntry{fsType: tail[0], options: tail[2]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func perm(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func wantErrClass(t *testing.T, err, class error, mentions ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", class)
	}
	if !errors.Is(err, class) {
		t.Errorf("error %q is not %v", err, class)
	}
	for _, s := range mentions {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
}

func ptr[T any](v T) *T { return &v }
