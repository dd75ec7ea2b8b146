package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crib-dev/crib/internal/image"
)

func TestDockerAuth(t *testing.T) {
	dir := t.TempDir()
	cfg := `{"auths": {
		"registry.example:5000": {"auth": "` + base64.StdEncoding.EncodeToString([]byte("alice:secret")) + `"},
		"https://index.docker.io/v1/": {"username": "bob", "password": "hunter2"}
	}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	tests := []struct {
		ref  string
		want *image.Auth
	}{
		{"registry.example:5000/team/app:v1", &image.Auth{Username: "alice", Password: "secret"}},
		{"busybox", &image.Auth{Username: "bob", Password: "hunter2"}},
		{"quay.io/other/app@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", nil},
	}
	for _, tt := range tests {
		got, err := dockerAuth(tt.ref)
		if err != nil {
			t.Fatalf("dockerAuth(%s): %v", tt.ref, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("dockerAuth(%s) (-want +got):\n%s", tt.ref, diff)
		}
	}
	if _, err := dockerAuth("Not A Ref"); err == nil {
		t.Errorf("dockerAuth of a bad reference succeeded")
	}
}
