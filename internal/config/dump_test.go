package config

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDump(t *testing.T) {
	path := writeFiles(t, map[string]string{
		"crib.toml": "root = \"/main\"\n[registries.\"a:5000\"]\ninsecure = true\n",
		"crib.d/10-x.toml": `root = "/ten"
[registries."a:5000"]
mirrors = ["http://m2"]
[registries.b]
mirrors = []
[runtimes.runc]
path = "/usr/sbin/runc"
`,
	})
	l, err := LoadFiles(path, false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Dump(l)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.ReplaceAll(string(out), filepath.Dir(path), "$D"), "\n")
	wantLines := []string{
		"#   $D/crib.toml",
		"#   $D/crib.d/10-x.toml",
		`root = "/ten"  # from $D/crib.d/10-x.toml:1`,
		`state = "/run/crib"`,
		`    path = "crun"`,
		`    path = "/usr/sbin/runc"  # from $D/crib.d/10-x.toml:7`,
		`  [registries."a:5000"]`,
		`    mirrors = ["http://m2"]  # from $D/crib.d/10-x.toml:3`,
		`    insecure = true  # from $D/crib.toml:3`,
		`    mirrors = []  # from $D/crib.d/10-x.toml:5`,
		`    insecure = false`,
		`  subnet = "10.88.0.0/16"`,
	}
	for _, w := range wantLines {
		if !slices.Contains(got, w) {
			t.Errorf("dump has no line %s", w)
		}
	}
	if t.Failed() {
		t.Logf("dump:\n%s", strings.Join(got, "\n"))
	}

	// The dump is TOML that loads back to the same configuration.
	var back Config
	if err := Decode(out, &back); err != nil {
		t.Fatalf("decode dump: %v", err)
	}
	if diff := cmp.Diff(l.Config, back); diff != "" {
		t.Errorf("dump round trip (-want +got):\n%s", diff)
	}
}

func TestDumpDefaults(t *testing.T) {
	out, err := Dump(Loaded{Config: Default()})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); !strings.Contains(s, "#   (none)\n") || strings.Contains(s, "  # from ") {
		t.Errorf("dump of the defaults:\n%s", s)
	}
}

// A dump shows the cgroup_parent in force, and why when no file set it.
func TestDumpCgroupParentOfDriver(t *testing.T) {
	path := writeFiles(t, map[string]string{"crib.toml": "cgroup_driver = \"systemd\"\n"})
	l, err := LoadFiles(path, false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Dump(l)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.ReplaceAll(string(out), filepath.Dir(path), "$D"), "\n")
	for _, w := range []string{
		`cgroup_driver = "systemd"  # from $D/crib.toml:1`,
		`cgroup_parent = "crib.slice"  # the default for cgroup_driver "systemd"`,
	} {
		if !slices.Contains(got, w) {
			t.Errorf("dump has no line %s:\n%s", w, strings.Join(got, "\n"))
		}
	}
}

func TestDefaultTOML(t *testing.T) {
	out, err := DefaultTOML()
	if err != nil {
		t.Fatal(err)
	}
	want := `cgroup_parent = "/crib"  # follows cgroup_driver: "/crib" under cgroupfs, "crib.slice" under systemd`
	if !slices.Contains(strings.Split(string(out), "\n"), want) {
		t.Errorf("default config has no line %s:\n%s", want, out)
	}
	var back Config
	if err := Decode(out, &back); err != nil {
		t.Fatalf("decode default config: %v", err)
	}
	if diff := cmp.Diff(Default(), back); diff != "" {
		t.Errorf("default config round trip (-want +got):\n%s", diff)
	}
}
