package container

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/cdi"
)

const twoDevices = `{"cdiVersion": "0.6.0", "kind": "crib.test/fake", "devices": [
  {"name": "a", "containerEdits": {"env": ["A=1"]}},
  {"name": "b", "containerEdits": {"env": ["B=1"]}}]}`

// A container's CDI devices are those of its field, then those of its
// annotations, each once; a bad or unknown one names where it was asked
// for.
func TestCDIDevices(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fake.json"), []byte(twoDevices), 0o644); err != nil {
		t.Fatal(err)
	}
	m := New(Config{CDI: cdi.New([]string{dir})}, nil, nil, nil, nil)
	withDevices := func(annotations map[string]string, names ...string) *runtimeapi.ContainerConfig {
		cfg := &runtimeapi.ContainerConfig{Annotations: annotations}
		for _, n := range names {
			cfg.CDIDevices = append(cfg.CDIDevices, &runtimeapi.CDIDevice{Name: n})
		}
		return cfg
	}

	if ds, err := m.cdiDevices(withDevices(nil)); ds != nil || err != nil {
		t.Fatalf("no devices: %v, %v", ds, err)
	}
	ds, err := m.cdiDevices(withDevices(map[string]string{"cdi.k8s.io/x": "crib.test/fake=a,crib.test/fake=b"}, "crib.test/fake=b"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ds.Names(), []string{"crib.test/fake=b", "crib.test/fake=a"}; !slices.Equal(got, want) {
		t.Errorf("devices %q, want %q", got, want)
	}

	for _, tt := range []struct {
		cfg  *runtimeapi.ContainerConfig
		want []string
	}{
		{withDevices(nil, "crib.test/fake=a", "gpu0"), []string{"config.cdi_devices[1]", `"gpu0"`}},
		{withDevices(map[string]string{"cdi.k8s.io/x": "gpu0"}), []string{"config.annotations", "cdi.k8s.io/x", `"gpu0"`}},
		{withDevices(nil, "crib.test/fake=c"), []string{"config.cdi_devices", `"crib.test/fake=c"`}},
		{withDevices(map[string]string{"cdi.k8s.io/x": "crib.test/fake=z"}), []string{`"crib.test/fake=z"`}},
	} {
		_, err := m.cdiDevices(tt.cfg)
		if !errdefs.IsInvalidArgument(err) {
			t.Errorf("cdiDevices(%v) = %v, want InvalidArgument", tt.cfg, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("cdiDevices(%v) = %q, want it to name %s", tt.cfg, err, w)
			}
		}
	}
}
