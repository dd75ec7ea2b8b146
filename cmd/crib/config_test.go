package main

import (
	"bytes"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crib-dev/crib/internal/testutil"
)

// configDir writes a crib.toml and drop-ins (name → content, "crib.d/x.toml"
// for a drop-in) and returns the path of crib.toml.
func configDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	testutil.WriteTree(t, dir, files)
	return filepath.Join(dir, "crib.toml")
}

func TestConfigCmd(t *testing.T) {
	good := map[string]string{
		"crib.toml":        "root = \"/srv/crib\"\n",
		"crib.d/10-x.toml": "[network]\nbridge = \"lab0\"\n",
	}
	tests := []struct {
		name     string
		files    map[string]string
		args     []string // "$C" is the path of crib.toml
		code     int
		stdout   []string // substrings; "$D" is its directory
		stderr   []string
		noStdout bool
	}{
		{name: "help", args: []string{"--help"}, stdout: []string{"default", "dump [--config FILE]", "crib.d/*.toml"}},
		{name: "no command", args: nil, code: 2, stderr: []string{"usage: crib config COMMAND"}},
		{name: "unknown command", args: []string{"dumb"}, code: 2, stderr: []string{`unknown command "dumb"`}},
		{name: "default", args: []string{"default"}, stdout: []string{`root = "/var/lib/crib"`,
			`cgroup_parent = "/crib"  # follows cgroup_driver: "/crib" under cgroupfs, "crib.slice" under systemd`}},
		{name: "dump of the systemd driver alone", files: map[string]string{"crib.toml": "cgroup_driver = \"systemd\"\n"},
			args:   []string{"dump", "--config", "$C"},
			stdout: []string{`cgroup_parent = "crib.slice"  # the default for cgroup_driver "systemd"`}},
		{name: "dump", files: good, args: []string{"dump", "--config", "$C"}, stdout: []string{
			"#   $D/crib.toml\n#   $D/crib.d/10-x.toml\n",
			`root = "/srv/crib"  # from $D/crib.toml:1` + "\n",
			`bridge = "lab0"  # from $D/crib.d/10-x.toml:2` + "\n",
			`state = "/run/crib"` + "\n",
		}},
		{name: "dump with an unknown key", files: map[string]string{"crib.toml": "", "crib.d/20-y.toml": "[network]\n\nbridgee = \"x\"\n"},
			args: []string{"dump", "--config", "$C"}, code: 1, noStdout: true,
			stderr: []string{`crib config dump: $D/crib.d/20-y.toml:3: unknown key "network.bridgee"`}},
		{name: "dump of an invalid configuration", files: map[string]string{"crib.toml": "log_level = \"loud\"\n"},
			args: []string{"dump", "--config", "$C"}, code: 1,
			stdout: []string{`log_level = "loud"  # from $D/crib.toml:1`},
			stderr: []string{`$D/crib.toml:1: log_level: "loud" is not one of`}},
		{name: "cni", files: good, args: []string{"cni", "--config", "$C"}, stdout: []string{
			`"bridge": "lab0"`, `"dataDir": "/srv/crib/cni/networks"`, `"subnet": "10.88.0.0/16"`,
		}},
		{name: "cni of an invalid configuration", files: map[string]string{"crib.toml": "[network]\nsubnet = \"10.1\"\n"},
			args: []string{"cni", "--config", "$C"}, code: 1, noStdout: true,
			stderr: []string{`$D/crib.toml:2: network.subnet: "10.1" is not a CIDR`}},
		{name: "dump of a missing file named by --config", args: []string{"dump", "--config", "$C"}, code: 1, noStdout: true,
			stderr: []string{"$D/crib.toml: no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := configDir(t, tt.files)
			dir := filepath.Dir(path)
			var args []string
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "$C", path))
			}
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"config"}, args...), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if tt.noStdout && stdout.Len() > 0 {
				t.Errorf("stdout:\n%s\nwant none", stdout.String())
			}
			check := func(name, got string, want []string) {
				for _, w := range want {
					if w = strings.ReplaceAll(w, "$D", dir); !strings.Contains(got, w) {
						t.Errorf("%s has no %q:\n%s", name, w, got)
					}
				}
			}
			check("stdout", stdout.String(), tt.stdout)
			check("stderr", stderr.String(), tt.stderr)
		})
	}
}

func TestLoadConfig(t *testing.T) {
	path := configDir(t, map[string]string{
		"crib.toml":        "state = \"/tmp/crib-state\"\nlog_level = \"loud\"\n",
		"crib.d/10-x.toml": "root = \"relative\"\n",
	})
	parse := func(args ...string) (*flag.FlagSet, map[string]*string) {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		overrides := map[string]*string{
			"root":      fs.String("root", "", ""),
			"log-level": fs.String("log-level", "", ""),
		}
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return fs, overrides
	}

	fs, overrides := parse()
	_, err := loadConfig(fs, path, overrides)
	if err == nil {
		t.Fatal("loadConfig: no error")
	}
	for _, want := range []string{"crib.d/10-x.toml:1: root:", "crib.toml:2: log_level:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("loadConfig error has no %q:\n%v", want, err)
		}
	}

	// A flag's bad value is the flag's, not the file's.
	fs, overrides = parse("--root", "/r", "--log-level", "verbose")
	_, err = loadConfig(fs, path, overrides)
	if err == nil || strings.Contains(err.Error(), "crib.toml") || !strings.Contains(err.Error(), `log_level: "verbose"`) {
		t.Errorf("loadConfig with flags: %v, want a log_level error naming no file", err)
	}

	fs, overrides = parse("--root", "/r", "--log-level", "debug")
	cfg, err := loadConfig(fs, path, overrides)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Root != "/r" || cfg.LogLevel != "debug" || cfg.Socket != "/tmp/crib-state/crib.sock" {
		t.Errorf("loadConfig: root %q, log level %q, socket %q", cfg.Root, cfg.LogLevel, cfg.Socket)
	}
}
