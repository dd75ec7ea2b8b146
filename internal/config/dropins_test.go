package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDropInDir(t *testing.T) {
	for path, want := range map[string]string{
		"/etc/crib/crib.toml": "/etc/crib/crib.d",
		"/tmp/x/c.toml":       "/tmp/x/c.d",
		"/tmp/x/c.conf":       "/tmp/x/c.conf.d",
	} {
		if got := DropInDir(path); got != want {
			t.Errorf("DropInDir(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestDropIns(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, "crib.toml")
	if got, err := DropIns(main); err != nil || got != nil {
		t.Fatalf("missing drop-in dir: DropIns = %v, %v; want none", got, err)
	}
	d := DropInDir(main)
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"20-b.toml", "10-a.toml", "9-z.toml", ".hidden.toml", "notes.txt", "30-c.toml~", "15.toml.bak"} {
		if err := os.WriteFile(filepath.Join(d, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(d, "40-dir.toml"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("10-a.toml", filepath.Join(d, "50-link.toml")); err != nil {
		t.Fatal(err)
	}
	got, err := DropIns(main)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range got {
		names = append(names, filepath.Base(f))
	}
	// Lexical order: "9-z" sorts after "20-b".
	want := []string{"10-a.toml", "20-b.toml", "50-link.toml", "9-z.toml"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("DropIns (-want +got):\n%s", diff)
	}
}
