package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/crib-dev/crib/internal/testutil"
)

func TestValidateUserNamespaces(t *testing.T) {
	tests := []struct {
		name string
		r    IDRange
		want string // "" for valid
	}{
		{name: "zero: the kubelet's", r: IDRange{}},
		{name: "one block", r: IDRange{FirstID: 65536, Length: 65536}},
		{name: "to the last id", r: IDRange{FirstID: 65536, Length: 1<<32 - 65536}},
		{name: "host ids", r: IDRange{FirstID: 0, Length: 65536}, want: "first_id 0"},
		{name: "not aligned", r: IDRange{FirstID: 100000, Length: 65536}, want: "first_id 100000"},
		{name: "no length", r: IDRange{FirstID: 65536}, want: "length 0"},
		{name: "part of a block", r: IDRange{FirstID: 65536, Length: 1000}, want: "length 1000"},
		{name: "past the last id", r: IDRange{FirstID: 1<<32 - 65536, Length: 131072}, want: "past the last id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.Agent.UserNamespaces = tt.r
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "agent.user_namespaces") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error naming agent.user_namespaces and %q", err, tt.want)
			}
		})
	}
}

func TestLoadAgentTable(t *testing.T) {
	if got := Default().Agent.UserNamespaces; got != (IDRange{}) {
		t.Fatalf("default agent.user_namespaces = %+v, want zero (the kubelet's)", got)
	}
	dir := t.TempDir()
	testutil.WriteTree(t, dir, map[string]string{
		"crib.toml":            "log_level = \"info\"\n",
		"crib.d/10-agent.toml": "[agent.user_namespaces]\nfirst_id = 131072\nlength = 6553600\n",
	})
	l, err := LoadFiles(filepath.Join(dir, "crib.toml"), false)
	if err == nil {
		err = l.Validate()
	}
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if got, want := l.Config.Agent.UserNamespaces, (IDRange{FirstID: 131072, Length: 6553600}); got != want {
		t.Fatalf("agent.user_namespaces = %+v, want %+v", got, want)
	}
}
