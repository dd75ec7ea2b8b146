package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
}

func TestDefaultRoundTrips(t *testing.T) {
	data, err := Encode(Default())
	if err != nil {
		t.Fatal(err)
	}
	var got Config
	if err := Decode(data, &got); err != nil {
		t.Fatalf("decode encoded default: %v", err)
	}
	if diff := cmp.Diff(Default(), got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "crib.toml")
	data := `
root = "/tmp/x/root"
image_pull_progress_timeout = "90s"
[registries."registry.k8s.io"]
mirrors = ["http://127.0.0.1:5000"]
`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Root = "/tmp/x/root"
	want.ImagePullProgressTimeout = 90 * time.Second
	want.Registries = map[string]Registry{"registry.k8s.io": {Mirrors: []string{"http://127.0.0.1:5000"}}}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}

	if _, err := Load(filepath.Join(dir, "missing.toml"), true); err != nil {
		t.Errorf("missing file with missingOK: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.toml"), false); err == nil {
		t.Error("missing file without missingOK: no error")
	}
}

func TestLoadRejectsUnknownKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crib.toml")
	if err := os.WriteFile(path, []byte("rooot = \"/x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, false)
	if err == nil || !strings.Contains(err.Error(), "rooot") {
		t.Fatalf("Load = %v, want an error naming rooot", err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"relative root", func(c *Config) { c.Root = "var/lib/crib" }, "root:"},
		{"bad driver", func(c *Config) { c.CgroupDriver = "none" }, "cgroup_driver"},
		{"systemd parent", func(c *Config) { c.CgroupDriver = "systemd"; c.CgroupParent = "/crib" }, "cgroup_parent"},
		{"unknown default runtime", func(c *Config) { c.DefaultRuntime = "kata" }, "default_runtime"},
		{"mirror without scheme", func(c *Config) {
			c.Registries = map[string]Registry{"gcr.io": {Mirrors: []string{"127.0.0.1:5000"}}}
		}, `registries."gcr.io".mirrors: entry 0`},
		{"shm", func(c *Config) { c.ShmSize = 0 }, "shm_size"},
		{"relative blockio file", func(c *Config) { c.BlockIOConfigFile = "blockio.yaml" }, "blockio_config_file"},
		{"relative rdt file", func(c *Config) { c.RdtConfigFile = "rdt.yaml" }, "rdt_config_file"},
		{"pull progress timeout", func(c *Config) { c.ImagePullProgressTimeout = 0 }, "image_pull_progress_timeout"},
		{"log level", func(c *Config) { c.LogLevel = "loud" }, "log_level"},
		{"max layer size", func(c *Config) { c.MaxLayerSize = -1 }, "max_layer_size"},
		{"expansion ratio", func(c *Config) { c.LayerLimits.ExpansionRatio = -1 }, "layer_limits.expansion_ratio"},
		{"expansion floor", func(c *Config) { c.LayerLimits.ExpansionFloor = -1 }, "layer_limits.expansion_floor"},
		{"free space reserve", func(c *Config) { c.LayerLimits.FreeSpaceReserve = -1 }, "layer_limits.free_space_reserve"},
		{"max entries", func(c *Config) { c.LayerLimits.MaxEntries = -1 }, "layer_limits.max_entries"},
		{"subnet", func(c *Config) { c.Network.Subnet = "10.88.0.0" }, "network.subnet"},
		{"bridge name", func(c *Config) { c.Network.Bridge = "a-bridge-name-too-long" }, "network.bridge"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tt.want)
			}
		})
	}
}

func TestValidateNamesKeys(t *testing.T) {
	c := Default()
	c.Runtimes = map[string]Runtime{"runc": {Path: "runc"}, "kata.v2": {}}
	c.Network.Subnet = "nope"
	err := c.Validate()
	var keys []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("%v is not a *FieldError", e)
		}
		keys = append(keys, fe.Key)
	}
	want := []string{`runtimes."kata.v2".path`, "network.subnet"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("keys of Validate's errors (-want +got):\n%s", diff)
	}
}
