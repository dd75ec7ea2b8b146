package ociruntime_test

import (
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"

	"github.com/crib-dev/crib/internal/ociruntime"
)

func TestLastError(t *testing.T) {
	tests := []struct {
		name, out, want string
	}{
		{"empty", "", ""},
		{"json error", `{"level":"warning","msg":"w","time":"x"}` + "\n" + `{"level":"error","msg":"container does not exist","time":"x"}` + "\n", "container does not exist"},
		{"last json error wins", `{"level":"error","msg":"first"}` + "\n" + `{"level":"error","msg":"second"}` + "\n", "second"},
		{"json beats plain", "plain text\n" + `{"level":"error","msg":"json"}` + "\n", "json"},
		{"plain", "time=\"x\" level=error msg=\"boom\"\n\n", `time="x" level=error msg="boom"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ociruntime.LastError([]byte(tc.out)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		msg   string
		check func(error) bool
	}{
		{"container does not exist", errdefs.IsNotFound},
		{"container with given ID already exists", errdefs.IsAlreadyExists},
		{"container not running", errdefs.IsFailedPrecondition},
		{"cannot exec in a stopped container", errdefs.IsFailedPrecondition},
	}
	for _, tc := range tests {
		if err := ociruntime.Classify(tc.msg); !tc.check(err) || err.Error() == "" {
			t.Errorf("Classify(%q) = %v: wrong class", tc.msg, err)
		}
	}
	if err := ociruntime.Classify("something else"); errdefs.IsNotFound(err) || errdefs.IsAlreadyExists(err) {
		t.Errorf("unclassified message got a class: %v", err)
	}
}

func TestCappedBuffer(t *testing.T) {
	b := &ociruntime.CappedBuffer{Cap: 5}
	for _, s := range []string{"abc", "defg", "hij"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("write %q: %d, %v", s, n, err)
		}
	}
	if b.String() != "abcde" || !b.Truncated {
		t.Errorf("got %q truncated=%v, want \"abcde\" truncated", b.String(), b.Truncated)
	}
}

func TestCreateArgs(t *testing.T) {
	r := &ociruntime.Runtime{Binary: "runc", Root: "/run/x", SystemdCgroup: true, Log: "/log"}
	got := r.CreateArgs("c1", ociruntime.CreateOpts{Bundle: "/b", PidFile: "/p", ConsoleSocket: "/s", NoPivot: true, LogFile: "/own.log"})
	want := []string{"--root", "/run/x", "--log", "/own.log", "--log-format", "json", "--systemd-cgroup",
		"create", "--bundle", "/b", "--pid-file", "/p", "--console-socket", "/s", "--no-pivot", "c1"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("create args (-want +got):\n%s", d)
	}
	got = r.RunArgs("c1", ociruntime.CreateOpts{Bundle: "/b", PidFile: "/p"})
	want = []string{"--root", "/run/x", "--log", "/log", "--log-format", "json", "--systemd-cgroup",
		"run", "--detach", "--bundle", "/b", "--pid-file", "/p", "c1"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("run args (-want +got):\n%s", d)
	}
}
