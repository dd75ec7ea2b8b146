package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crib-dev/crib/internal/testutil"
)

// NRISourceEnv names a checkout of github.com/containerd/nri whose sample
// plugins TestNRISamplePlugins builds: each is a module of its own
// (plugins/NAME/go.mod, replacing github.com/containerd/nri by the
// checkout), and no release puts them on the Go module proxy.
const NRISourceEnv = "CRIB_NRI_SRC"

// NRI's own sample plugins, ulimit-adjuster and device-injector, as the
// pre-installed plugins of a real daemon: the rlimit and the device the
// pod's annotations ask them for are what the container's process sees.
func TestNRISamplePlugins(t *testing.T) {
	testutil.RequiresRoot(t)
	src := os.Getenv(NRISourceEnv)
	if src == "" {
		t.Skipf("%s names no checkout of github.com/containerd/nri: its sample plugins are modules of their own that the Go module proxy does not serve", NRISourceEnv)
	}
	t.Parallel()
	plugins := t.TempDir()
	for _, p := range []string{"10-ulimit-adjuster", "20-device-injector"} {
		build := exec.Command("go", "build", "-o", filepath.Join(plugins, p), ".")
		build.Dir = filepath.Join(src, "plugins", p[3:])
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
		if out, err := build.CombinedOutput(); err != nil {
			t.Skipf("build NRI's %s from %s (its dependencies need the Go module proxy): %v\n%s", p[3:], src, err, out)
		}
	}
	img := testutil.Busybox(t)
	d := testutil.StartDaemon(t, testutil.Options{Image: &img,
		ExtraConfig: fmt.Sprintf("[nri]\nplugin_path = %q\nplugin_config_path = %q\n", plugins, t.TempDir())})
	e := &env{t: t, d: d, img: img}

	pod := e.podConfig("nri-samples")
	pod.Annotations = map[string]string{
		"ulimits.noderesource.dev/container.app": "- type: RLIMIT_NOFILE\n  soft: 1111\n  hard: 2222\n",
		"devices.noderesource.dev/container.app": "- path: /dev/nri-sample\n  type: c\n  major: 1\n  minor: 3\n  file_mode: 0666\n",
	}
	id := e.run(e.runPod(pod), pod, e.ctrConfig("app", "sleep", "3600"))
	if r := e.exec(id, "sh", "-c", "ulimit -Sn; ulimit -Hn"); strings.Join(strings.Fields(string(r.Stdout)), " ") != "1111 2222" {
		t.Errorf("ulimit -Sn, -Hn under ulimit-adjuster: %q %q, want 1111 2222", r.Stdout, r.Stderr)
	}
	if r := e.exec(id, "sh", "-c", "echo hi > /dev/nri-sample && ls -l /dev/nri-sample"); r.ExitCode != 0 || !strings.Contains(string(r.Stdout), "1,   3") {
		t.Errorf("/dev/nri-sample from device-injector: exit %d, %q %q; want a writable character device 1,3", r.ExitCode, r.Stdout, r.Stderr)
	}
}
