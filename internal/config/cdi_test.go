package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crib-dev/crib/internal/testutil"
)

func TestValidateCDISpecDirs(t *testing.T) {
	tests := []struct {
		name string
		dirs []string
		want string // a part of the error; "" means valid
	}{
		{"default", Default().CDI.SpecDirs, ""},
		{"none", nil, ""},
		{"one", []string{"/tmp/cdi"}, ""},
		{"relative", []string{"/etc/cdi", "cdi"}, `entry 1, "cdi", is not an absolute path`},
		{"twice", []string{"/etc/cdi", "/var/run/cdi", "/etc/cdi"}, `entry 2, "/etc/cdi", is listed twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.CDI.SpecDirs = tt.dirs
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() with cdi.spec_dirs %q = %v, want nil", tt.dirs, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "cdi.spec_dirs") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() with cdi.spec_dirs %q = %v, want an error naming cdi.spec_dirs and %q", tt.dirs, err, tt.want)
			}
		})
	}
}

// The [cdi] table defaults to the two directories CDI names, and a
// drop-in replaces the list whole, with its provenance; a bad entry there
// is an error naming the drop-in and its line.
func TestLoadCDITable(t *testing.T) {
	if got, want := Default().CDI.SpecDirs, []string{"/etc/cdi", "/var/run/cdi"}; !slices.Equal(got, want) {
		t.Fatalf("default cdi.spec_dirs = %q, want %q", got, want)
	}
	dir := t.TempDir()
	testutil.WriteTree(t, dir, map[string]string{
		"crib.toml":          "[cdi]\nspec_dirs = [\"/etc/cdi\", \"/var/run/cdi\", \"/opt/cdi\"]\n",
		"crib.d/10-cdi.toml": "# devices\n[cdi]\nspec_dirs = [\"/srv/cdi\"]\n",
	})
	main, dropins := filepath.Join(dir, "crib.toml"), filepath.Join(dir, "crib.d")
	good := filepath.Join(dropins, "10-cdi.toml")
	l, err := LoadFiles(main, false)
	if err == nil {
		err = l.Validate()
	}
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if src := l.Sources["cdi.spec_dirs"]; src.File != good || src.Line != 3 {
		t.Errorf("cdi.spec_dirs set by %v, want %s:3", src, good)
	}
	if got := l.Config.CDI.SpecDirs; !slices.Equal(got, []string{"/srv/cdi"}) {
		t.Fatalf("cdi.spec_dirs = %q, want the drop-in's [/srv/cdi] alone", got)
	}

	bad := filepath.Join(dropins, "20-bad.toml")
	if err := os.WriteFile(bad, []byte("\n[cdi]\nspec_dirs = [\"cdi\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err = LoadFiles(main, false)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	err = l.Validate()
	if err == nil {
		t.Fatal(`Load with cdi.spec_dirs = ["cdi"] succeeded`)
	}
	for _, want := range []string{"20-bad.toml", ":3", "cdi.spec_dirs"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Load error %q does not contain %q", err, want)
		}
	}
}
