package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// shared is what one test binary builds once and reuses: the temporary
// directory, the crib binary and the test image. Main removes the directory.
var shared struct {
	dirOnce sync.Once
	dir     string
	dirErr  error

	buildOnce sync.Once
	crib      string
	buildErr  error

	imageOnce sync.Once
	image     TestImage
	imageSkip string
}

// Main runs the tests of a package and then removes what BuildCrib and
// Busybox made. A TestMain that uses them ends with os.Exit(testutil.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if shared.dir != "" {
		if err := os.RemoveAll(shared.dir); err != nil {
			fmt.Fprintf(os.Stderr, "testutil: remove %s: %v\n", shared.dir, err)
		}
	}
	return code
}

// sharedDir is the temporary directory of this test binary.
func sharedDir() (string, error) {
	shared.dirOnce.Do(func() {
		shared.dir, shared.dirErr = os.MkdirTemp("", "crib-testutil-")
	})
	return shared.dir, shared.dirErr
}

// RepoRoot is the directory of crib's go.mod.
func RepoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("locate testutil source: no caller information")
	}
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("locate repository root: %w", err)
	}
	return filepath.Clean(root), nil
}

// BuildCrib builds ./cmd/crib and ./cmd/crib-monitor into one directory
// once per test binary and returns the path of crib; crib-monitor is
// MonitorBinary(crib).
func BuildCrib(t testing.TB) string {
	t.Helper()
	shared.buildOnce.Do(func() {
		shared.crib, shared.buildErr = buildCrib()
	})
	if shared.buildErr != nil {
		t.Fatal(shared.buildErr)
	}
	return shared.crib
}

// MonitorBinary is the crib-monitor beside the crib binary crib, where the
// daemon looks for it.
func MonitorBinary(crib string) string {
	return filepath.Join(filepath.Dir(crib), "crib-monitor")
}

// LinkCrib links (or copies) the crib binary to dst and its crib-monitor
// beside it, so that the processes of a daemon started from dst can be
// told apart by their executables.
func LinkCrib(crib, dst string) error {
	if err := LinkOrCopy(crib, dst); err != nil {
		return err
	}
	return LinkOrCopy(MonitorBinary(crib), MonitorBinary(dst))
}

func buildCrib() (string, error) {
	if prebuilt := os.Getenv(CribBinaryEnv); prebuilt != "" {
		for _, bin := range []string{prebuilt, MonitorBinary(prebuilt)} {
			if _, err := os.Stat(bin); err != nil {
				return "", fmt.Errorf("%s (crib-monitor beside it too): %w", CribBinaryEnv, err)
			}
		}
		return prebuilt, nil
	}
	dir, err := sharedDir()
	if err != nil {
		return "", fmt.Errorf("build crib: %w", err)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("build crib: %w", err)
	}
	out := filepath.Join(dir, "crib")
	cmd := exec.Command("go", "build", "-tags", "containers_image_openpgp", "-o", dir+"/", "./cmd/crib", "./cmd/crib-monitor")
	cmd.Dir = root
	// Static and with signature verification in pure Go, as
	// scripts/install.sh and the README build them.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build crib: %w\n%s", err, b)
	}
	return out, nil
}
