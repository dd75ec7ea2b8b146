package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crib-dev/crib/internal/agent/userns"
	"github.com/crib-dev/crib/internal/config"
)

func TestNodeUserNamespaces(t *testing.T) {
	tests := []struct {
		name           string
		configured     config.IDRange
		subuid, subgid string // "" for a missing file
		want           userns.Range
		wantErr        string
	}{
		{name: "no files: the kubelet's default", want: userns.DefaultRange},
		{name: "the kubelet entry", subuid: "kubelet:65536:655360\n", subgid: "kubelet:65536:655360\n", want: userns.Range{First: 65536, Length: 655360}},
		{name: "the configuration wins", configured: config.IDRange{FirstID: 131072, Length: 65536},
			subuid: "kubelet:65536:655360\n", subgid: "kubelet:65536:655360\n", want: userns.Range{First: 131072, Length: 65536}},
		{name: "a broken entry names the way out", subuid: "kubelet:65536:655360\n", subgid: "kubelet:131072:655360\n",
			wantErr: "[agent.user_namespaces]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			uid, gid := filepath.Join(dir, "subuid"), filepath.Join(dir, "subgid")
			for path, data := range map[string]string{uid: tt.subuid, gid: tt.subgid} {
				if data == "" {
					continue
				}
				if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := nodeUserNamespaces(tt.configured, uid, gid)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("range = %s, want %s", got, tt.want)
			}
		})
	}
}
