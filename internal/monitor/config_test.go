package monitor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
)

func TestArgsRoundTrip(t *testing.T) {
	want := StartConfig{
		ID: "c1", Bundle: "/b", RuntimeBinary: "runc", RuntimeRoot: "/run/runc", SystemdCgroup: true,
		NoPivot: true, LogPath: "/var/log/pods/x/0.log", ExitFile: "/s/exit", Socket: "/s/sock",
		PidFile: "/s/pid", Stdin: true, StdinOnce: true,
	}
	got, err := parseArgs(want.args())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if _, err := parseArgs([]string{"--id=x", "extra"}); err == nil {
		t.Error("stray argument accepted")
	}
}

func TestValidate(t *testing.T) {
	ok := StartConfig{ID: "c", Bundle: "/b", RuntimeBinary: "runc", ExitFile: "/e", Socket: "/s", PidFile: "/p"}
	tests := []struct {
		name  string
		edit  func(*StartConfig)
		check func(error) bool
	}{
		{"complete", func(*StartConfig) {}, func(err error) bool { return err == nil }},
		{"no id", func(c *StartConfig) { c.ID = "" }, errdefs.IsInvalidArgument},
		{"no socket", func(c *StartConfig) { c.Socket = "" }, errdefs.IsInvalidArgument},
		{"long socket", func(c *StartConfig) { c.Socket = "/" + strings.Repeat("s", 200) }, errdefs.IsInvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			if err := c.validate(); !tc.check(err) {
				t.Errorf("validate: %v", err)
			}
		})
	}
}

func TestExitFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "exit.json")
	if _, ok, err := ReadExit(path); ok || err != nil {
		t.Fatalf("missing exit file: %v, %v", ok, err)
	}
	want := Exit{Version: exitVersion, ExitCode: 137, ExitedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), OOMKilled: true}
	if err := writeExit(path, want); err != nil {
		t.Fatal(err)
	}
	got, ok, err := ReadExit(path)
	if err != nil || !ok {
		t.Fatalf("read: %v, %v", ok, err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
	if err := os.WriteFile(path, []byte(`{"version":9}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadExit(path); err == nil {
		t.Error("unknown version accepted")
	}
}

func TestMemoryCgroupFrom(t *testing.T) {
	tests := []struct {
		name, in string
		want     oomFile
	}{
		{"v1", "12:pids:/c1\n4:memory:/c1\n0::/\n", oomFile{"/cg/memory/c1/memory.oom_control", "oom_kill"}},
		{"v1 joined controllers", "3:cpu,memory:/k/c2\n", oomFile{"/cg/memory/k/c2/memory.oom_control", "oom_kill"}},
		{"v2", "0::/k/c3\n", oomFile{"/cg/k/c3/memory.events", "oom_kill"}},
		{"none", "", oomFile{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := memoryCgroupFrom(tc.in, "/cg"); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestOOMKilled(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		want          bool
	}{
		{"v1 killed", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", true},
		{"v1 not killed", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", false},
		{"v2 killed", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n", true},
		{"no key", "oom 1\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			if err := os.WriteFile(p, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := (oomFile{path: p, key: "oom_kill"}).killed(); got != tc.want {
				t.Errorf("killed = %v, want %v", got, tc.want)
			}
		})
	}
	if (oomFile{path: filepath.Join(dir, "missing"), key: "oom_kill"}).killed() {
		t.Error("missing file reads as killed")
	}
}
