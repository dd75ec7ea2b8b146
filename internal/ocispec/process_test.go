package ocispec

import (
	"errors"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestArgs(t *testing.T) {
	entry, cmd := []string{"/entry", "-x"}, []string{"serve", "--port=80"}
	tests := []struct {
		name              string
		entry, cmd        []string
		criCmd, criArgs   []string
		want              []string
		wantInvalidArgErr bool
	}{
		{name: "image only", entry: entry, cmd: cmd, want: []string{"/entry", "-x", "serve", "--port=80"}},
		{name: "args replace cmd", entry: entry, cmd: cmd, criArgs: []string{"debug"}, want: []string{"/entry", "-x", "debug"}},
		{name: "command replaces entrypoint and drops cmd", entry: entry, cmd: cmd, criCmd: []string{"/bin/sh"}, want: []string{"/bin/sh"}},
		{name: "command and args", entry: entry, cmd: cmd, criCmd: []string{"/bin/sh", "-c"}, criArgs: []string{"echo hi"}, want: []string{"/bin/sh", "-c", "echo hi"}},
		{name: "cmd only image", cmd: []string{"sh"}, want: []string{"sh"}},
		{name: "entrypoint only image with args", entry: entry, criArgs: []string{"a"}, want: []string{"/entry", "-x", "a"}},
		{name: "nothing at all", wantInvalidArgErr: true},
		{name: "command empty args empty image empty cmd", entry: nil, cmd: []string{}, wantInvalidArgErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Args(tt.entry, tt.cmd, tt.criCmd, tt.criArgs)
			if tt.wantInvalidArgErr {
				if !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Fatalf("err = %v, want invalid argument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

func TestArgsDoesNotAliasInputs(t *testing.T) {
	entry := make([]string, 1, 4)
	entry[0] = "/entry"
	got, err := Args(entry, nil, nil, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	got[0] = "changed"
	if entry[0] != "/entry" {
		t.Errorf("Args result aliases the image entrypoint")
	}
}

func kv(k, v string) *runtimeapi.KeyValue { return &runtimeapi.KeyValue{Key: k, Value: []byte(v)} }

func TestEnv(t *testing.T) {
	tests := []struct {
		name     string
		hostname string
		image    []string
		cri      []*runtimeapi.KeyValue
		want     []string
	}{
		{
			name:     "default path and hostname",
			hostname: "web-0",
			want:     []string{"PATH=" + DefaultPath, "HOSTNAME=web-0"},
		},
		{
			name:  "cri overrides image in place",
			image: []string{"PATH=/bin", "A=1", "B=2"},
			cri:   []*runtimeapi.KeyValue{kv("A", "x"), kv("C", "3")},
			want:  []string{"PATH=/bin", "A=x", "B=2", "C=3"},
		},
		{
			name:     "image hostname overrides pod hostname",
			hostname: "web-0",
			image:    []string{"HOSTNAME=img", "PATH=/p"},
			want:     []string{"HOSTNAME=img", "PATH=/p"},
		},
		{
			name:  "cri path wins, values keep equals signs, empty values kept",
			image: []string{"PATH=/bin", "EMPTY="},
			cri:   []*runtimeapi.KeyValue{kv("PATH", "/custom"), kv("Q", "a=b"), kv("", "dropped")},
			want:  []string{"PATH=/custom", "EMPTY=", "Q=a=b"},
		},
		{
			name:  "entries without value",
			image: []string{"NOVALUE", "=bad"},
			want:  []string{"PATH=" + DefaultPath, "NOVALUE="},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Env(tt.hostname, tt.image, tt.cri)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWorkingDir(t *testing.T) {
	for _, tt := range []struct{ cri, image, want string }{
		{"/cri", "/img", "/cri"},
		{"", "/img", "/img"},
		{"", "", "/"},
	} {
		if got := workingDir(tt.cri, tt.image); got != tt.want {
			t.Errorf("workingDir(%q, %q) = %q, want %q", tt.cri, tt.image, got, tt.want)
		}
	}
}
