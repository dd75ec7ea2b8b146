package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crib-dev/crib/internal/testutil"
)

// writeFiles writes files (name → content, names relative to a new
// directory, "crib.d/10-x.toml" for a drop-in) and returns the path of the
// main file, crib.toml, in that directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	testutil.WriteTree(t, dir, files)
	return filepath.Join(dir, "crib.toml")
}

func TestLoadFilesMerges(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		missingOK bool
		change    func(*Config)
		sources   map[string]string // key → file:line, relative to the directory
		read      []string
	}{{
		name: "lexical order, later wins",
		files: map[string]string{
			"crib.toml":        "root = \"/main\"\nstate = \"/main-state\"\n",
			"crib.d/10-x.toml": "root = \"/ten\"\n",
			"crib.d/9-y.toml":  "\n\nroot = \"/nine\"\n",
		},
		change:  func(c *Config) { c.Root = "/nine"; c.State = "/main-state" },
		sources: map[string]string{"root": "crib.d/9-y.toml:3", "state": "crib.toml:2"},
		read:    []string{"crib.toml", "crib.d/10-x.toml", "crib.d/9-y.toml"},
	}, {
		name: "nested tables merge key by key, arrays are replaced",
		files: map[string]string{
			"crib.toml": `[registries."a:5000"]
mirrors = ["http://m1"]
insecure = true
[runtimes.runc]
root = "/rr"
`,
			"crib.d/10-x.toml": `[registries."a:5000"]
mirrors = ["http://m2", "http://m3"]
[registries.b]
insecure = true
[runtimes.runc]
path = "/usr/sbin/runc"
[network]
plugin_dirs = ["/x"]
`,
		},
		change: func(c *Config) {
			c.Registries = map[string]Registry{
				"a:5000": {Mirrors: []string{"http://m2", "http://m3"}, Insecure: true},
				"b":      {Insecure: true},
			}
			c.Runtimes["runc"] = Runtime{Path: "/usr/sbin/runc", Root: "/rr"}
			c.Network.PluginDirs = []string{"/x"}
		},
		sources: map[string]string{
			`registries."a:5000".mirrors`:  "crib.d/10-x.toml:2",
			`registries."a:5000".insecure`: "crib.toml:3",
			"registries.b.insecure":        "crib.d/10-x.toml:4",
			"runtimes.runc.root":           "crib.toml:5",
			"runtimes.runc.path":           "crib.d/10-x.toml:6",
			"network.plugin_dirs":          "crib.d/10-x.toml:8",
		},
		read: []string{"crib.toml", "crib.d/10-x.toml"},
	}, {
		name: "a default runtime keeps its path; dotted keys and inline tables merge too",
		files: map[string]string{
			"crib.d/10-x.toml": "network.bridge = \"b1\"\nruntimes = { crun = { root = \"/c\" } }\n",
		},
		missingOK: true,
		change: func(c *Config) {
			c.Network.Bridge = "b1"
			c.Runtimes["crun"] = Runtime{Path: "crun", Root: "/c"}
		},
		sources: map[string]string{"network.bridge": "crib.d/10-x.toml:1", "runtimes.crun.root": "crib.d/10-x.toml:2"},
		read:    []string{"crib.d/10-x.toml"},
	}, {
		name: "hidden and other files are ignored",
		files: map[string]string{
			"crib.toml":             "log_level = \"debug\"\n",
			"crib.d/.10-x.toml":     "log_level = \"warn\"\n",
			"crib.d/10-x.toml.orig": "not toml at all = = =",
			"crib.d/README":         "not toml at all = = =",
		},
		change:  func(c *Config) { c.LogLevel = "debug" },
		sources: map[string]string{"log_level": "crib.toml:1"},
		read:    []string{"crib.toml"},
	}, {
		name:    "no drop-in directory",
		files:   map[string]string{"crib.toml": "shm_size = 1024\nimage_pull_progress_timeout = \"90s\"\n"},
		change:  func(c *Config) { c.ShmSize = 1024; c.ImagePullProgressTimeout = 90 * time.Second },
		sources: map[string]string{"shm_size": "crib.toml:1", "image_pull_progress_timeout": "crib.toml:2"},
		read:    []string{"crib.toml"},
	}, {
		name:      "missing main file, drop-ins apply",
		files:     map[string]string{"crib.d/50-root.toml": "root = \"/r\"\n"},
		missingOK: true,
		change:    func(c *Config) { c.Root = "/r" },
		sources:   map[string]string{"root": "crib.d/50-root.toml:1"},
		read:      []string{"crib.d/50-root.toml"},
	}, {
		name:      "nothing at all",
		missingOK: true,
		change:    func(*Config) {},
		sources:   map[string]string{},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFiles(t, tt.files)
			dir := filepath.Dir(path)
			l, err := LoadFiles(path, tt.missingOK)
			if err != nil {
				t.Fatal(err)
			}
			want := Default()
			tt.change(&want)
			if diff := cmp.Diff(want, l.Config); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			sources := map[string]string{}
			for k, s := range l.Sources {
				sources[k] = strings.TrimPrefix(s.String(), dir+"/")
			}
			if diff := cmp.Diff(tt.sources, sources); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
			var read []string
			for _, f := range l.Files {
				read = append(read, strings.TrimPrefix(f, dir+"/"))
			}
			if diff := cmp.Diff(tt.read, read); diff != "" {
				t.Errorf("files read (-want +got):\n%s", diff)
			}
			if err := l.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestLoadFilesErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string // lines of the error; $D is the directory
	}{{
		name:  "unknown key",
		files: map[string]string{"crib.d/10-x.toml": "[network]\nbridge = \"b\"\nbridgee = \"c\"\n"},
		want:  []string{`$D/crib.d/10-x.toml:3: unknown key "network.bridgee"`},
	}, {
		name:  "unknown table, once",
		files: map[string]string{"crib.toml": "root = \"/r\"\n\n[bogus]\nx = 1\ny = 2\n"},
		want:  []string{`$D/crib.toml:3: unknown key "bogus"`},
	}, {
		name:  "unknown key in a registry",
		files: map[string]string{"crib.toml": "[registries.\"r.io\"]\nmirror = [\"http://m\"]\n"},
		want:  []string{`$D/crib.toml:2: unknown key "registries.\"r.io\".mirror"`},
	}, {
		name:  "empty unknown table",
		files: map[string]string{"crib.toml": "[netwrk]\n"},
		want:  []string{`$D/crib.toml:1: unknown key "netwrk"`},
	}, {
		name:  "type mismatch",
		files: map[string]string{"crib.toml": "root = \"/r\"\nshm_size = \"64M\"\n"},
		want:  []string{`$D/crib.toml:2: shm_size: incompatible types: TOML value has type string; destination has type integer`},
	}, {
		name:  "bad duration",
		files: map[string]string{"crib.d/20-pull.toml": "image_pull_progress_timeout = \"5 minutes\"\n"},
		want:  []string{`$D/crib.d/20-pull.toml:1: image_pull_progress_timeout: invalid duration: "5 minutes"`},
	}, {
		name:  "table where a string goes",
		files: map[string]string{"crib.toml": "[network.bridge]\nname = \"b\"\n"},
		want:  []string{`$D/crib.toml:1: network.bridge: incompatible types: TOML value has type map[string]any; destination has type string`},
	}, {
		name:  "syntax error",
		files: map[string]string{"crib.toml": "root = \"/r\"\nstate = \"/s\n"},
		want:  []string{`$D/crib.toml:2:12: strings cannot contain newlines`},
	}, {
		name: "every file's errors, in file order then line order",
		files: map[string]string{
			"crib.toml":        "zzz = 1\naaa = 2\n",
			"crib.d/10-x.toml": "root = [\n",
			"crib.d/20-y.toml": "log_level = 3\n",
		},
		want: []string{
			`$D/crib.toml:1: unknown key "zzz"`,
			`$D/crib.toml:2: unknown key "aaa"`,
			`$D/crib.d/10-x.toml:1:9: unexpected EOF; expected value`,
			`$D/crib.d/20-y.toml:1: log_level: incompatible types: TOML value has type int64; destination has type string`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFiles(t, tt.files)
			_, err := LoadFiles(path, true)
			if err == nil {
				t.Fatal("LoadFiles: no error")
			}
			got := strings.Split(strings.ReplaceAll(err.Error(), filepath.Dir(path), "$D"), "\n")
			if len(got) != len(tt.want) {
				t.Fatalf("LoadFiles error:\n%s\nwant %d lines:\n%s", strings.Join(got, "\n"), len(tt.want), strings.Join(tt.want, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("error line %d = %s\nwant %s", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestLoadFilesMissingMain(t *testing.T) {
	path := writeFiles(t, map[string]string{"crib.d/10-x.toml": "root = \"/r\"\n"})
	if _, err := LoadFiles(path, false); err == nil || !strings.Contains(err.Error(), "crib.toml") {
		t.Errorf("missing main file without missingOK: %v, want an error naming it", err)
	}
}

func TestLoadedValidateNamesFile(t *testing.T) {
	path := writeFiles(t, map[string]string{
		"crib.toml":        "cgroup_driver = \"systemd\"\ncgroup_parent = \"/crib\"\n",
		"crib.d/10-x.toml": "\nlog_level = \"loud\"\n[registries.\"r.io\"]\nmirrors = [\"127.0.0.1:5000\"]\n",
	})
	l, err := LoadFiles(path, false)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(l.Validate().Error(), filepath.Dir(path), "$D")
	want := strings.Join([]string{
		`$D/crib.d/10-x.toml:2: log_level: "loud" is not one of debug, info, warn, error`,
		`$D/crib.toml:2: cgroup_parent: "/crib" must be a systemd slice with the systemd driver, such as its default crib.slice`,
		`$D/crib.d/10-x.toml:4: registries."r.io".mirrors: entry 0, "127.0.0.1:5000", needs an http:// or https:// scheme`,
	}, "\n")
	if got != want {
		t.Errorf("Validate:\n%s\nwant\n%s", got, want)
	}
}

// A cgroup_parent no file sets follows the driver the files set; one a
// file sets is kept as it is, and validated against the driver.
func TestLoadCgroupParentFollowsDriver(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		parent  string
		invalid string // the start of Validate's error, "" when valid
	}{
		{name: "nothing set", files: map[string]string{"crib.toml": ""}, parent: "/crib"},
		{name: "only the systemd driver", files: map[string]string{"crib.toml": "cgroup_driver = \"systemd\"\n"},
			parent: "crib.slice"},
		{name: "systemd in a drop-in over cgroupfs", files: map[string]string{
			"crib.toml":        "cgroup_driver = \"cgroupfs\"\n",
			"crib.d/10-x.toml": "cgroup_driver = \"systemd\"\n",
		}, parent: "crib.slice"},
		{name: "cgroupfs set explicitly", files: map[string]string{"crib.toml": "cgroup_driver = \"cgroupfs\"\n"},
			parent: "/crib"},
		{name: "a slice of one's own", files: map[string]string{
			"crib.toml": "cgroup_driver = \"systemd\"\ncgroup_parent = \"pods.slice\"\n",
		}, parent: "pods.slice"},
		{name: "a cgroup of one's own", files: map[string]string{"crib.toml": "cgroup_parent = \"/pods\"\n"},
			parent: "/pods"},
		{name: "a path set under systemd", files: map[string]string{
			"crib.toml": "cgroup_driver = \"systemd\"\ncgroup_parent = \"/crib\"\n",
		}, parent: "/crib", invalid: `$D/crib.toml:2: cgroup_parent: "/crib" must be a systemd slice`},
		{name: "a slice set, then cgroupfs in a drop-in", files: map[string]string{
			"crib.toml":        "cgroup_driver = \"systemd\"\ncgroup_parent = \"crib.slice\"\n",
			"crib.d/10-x.toml": "cgroup_driver = \"cgroupfs\"\n",
		}, parent: "crib.slice", invalid: `$D/crib.toml:2: cgroup_parent: "crib.slice" must be an absolute cgroup path`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFiles(t, tt.files)
			l, err := LoadFiles(path, false)
			if err != nil {
				t.Fatal(err)
			}
			if l.Config.CgroupParent != tt.parent {
				t.Errorf("cgroup_parent = %q, want %q", l.Config.CgroupParent, tt.parent)
			}
			err = l.Validate()
			switch {
			case tt.invalid == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.invalid != "" && (err == nil || !strings.HasPrefix(strings.ReplaceAll(err.Error(), filepath.Dir(path), "$D"), tt.invalid)):
				t.Errorf("Validate = %v, want an error starting %s", err, tt.invalid)
			}
		})
	}
}
