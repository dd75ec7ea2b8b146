package ocispec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestBuildExecProcess(t *testing.T) {
	f := newFixture(t)
	in := f.input()
	in.Container.Linux.SecurityContext.RunAsUsername = "app"
	in.Container.Linux.SecurityContext.NoNewPrivs = true
	in.Container.WorkingDir = "/srv"
	in.Container.Tty = true
	spec, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := []string{"cat", "/etc/os-release"}
	got := BuildExecProcess(spec, cmd, false)

	want := *spec.Process
	want.Args = cmd
	want.Terminal = false
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exec process (-want +got):\n%s", diff)
	}

	// The result must not share memory with the spec or cmd.
	got.Env[0] = "X=1"
	got.User.AdditionalGids[0] = 99
	got.Capabilities.Bounding[0] = "CAP_NOPE"
	*got.OOMScoreAdj = 5
	cmd[0] = "changed"
	if spec.Process.Env[0] == "X=1" || spec.Process.User.AdditionalGids[0] == 99 ||
		spec.Process.Capabilities.Bounding[0] == "CAP_NOPE" || *spec.Process.OOMScoreAdj == 5 || got.Args[0] != "cat" {
		t.Error("exec process shares memory with its inputs")
	}
}

func TestBuildExecProcessEmptySpec(t *testing.T) {
	got := BuildExecProcess(&specs.Spec{}, []string{"ls"}, true)
	want := specs.Process{Terminal: true, Args: []string{"ls"}, Cwd: "/"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exec process (-want +got):\n%s", diff)
	}
}
