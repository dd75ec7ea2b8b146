package ocispec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestResolveUser(t *testing.T) {
	f := newFixture(t)
	i64 := func(v int64) *runtimeapi.Int64Value { return &runtimeapi.Int64Value{Value: v} }
	tests := []struct {
		name      string
		rootfs    string
		sc        *runtimeapi.LinuxContainerSecurityContext
		imageUser string
		want      specs.User
		wantErr   string // substring; the error must also be invalid argument
	}{
		{name: "default root", want: specs.User{UID: 0, GID: 0, AdditionalGids: []uint32{0, 10}}},
		{name: "image name", imageUser: "app", want: specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{1000, 10, 29, 50}}},
		{name: "image uid known", imageUser: "1000", want: specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{1000, 10, 29, 50}}},
		{name: "image uid unknown", imageUser: "4242", want: specs.User{UID: 4242, GID: 0, AdditionalGids: []uint32{0}}},
		{name: "image name:group", imageUser: "app:daemon", want: specs.User{UID: 1000, GID: 1, AdditionalGids: []uint32{1, 10, 29, 50}}},
		{name: "image uid:gid", imageUser: "7:8", want: specs.User{UID: 7, GID: 8, AdditionalGids: []uint32{8}}},
		{name: "image uid:groupname", imageUser: "1000:audio", want: specs.User{UID: 1000, GID: 29, AdditionalGids: []uint32{29, 10, 50}}},
		{
			name:      "run_as_user beats image user",
			sc:        &runtimeapi.LinuxContainerSecurityContext{RunAsUser: i64(65534)},
			imageUser: "app",
			want:      specs.User{UID: 65534, GID: 65534, AdditionalGids: []uint32{65534}},
		},
		{
			name: "run_as_username with run_as_group and supplemental groups",
			sc: &runtimeapi.LinuxContainerSecurityContext{
				RunAsUsername: "app", RunAsGroup: i64(3000), SupplementalGroups: []int64{4000, 10},
			},
			want: specs.User{UID: 1000, GID: 3000, AdditionalGids: []uint32{3000, 10, 29, 50, 4000}},
		},
		{
			name:      "run_as_group overrides the image group",
			sc:        &runtimeapi.LinuxContainerSecurityContext{RunAsUsername: "app", RunAsGroup: i64(5)},
			imageUser: "app:daemon",
			want:      specs.User{UID: 1000, GID: 5, AdditionalGids: []uint32{5, 10, 29, 50}},
		},
		{
			name: "strict policy ignores /etc/group",
			sc: &runtimeapi.LinuxContainerSecurityContext{
				RunAsUser: i64(1000), SupplementalGroups: []int64{4000},
				SupplementalGroupsPolicy: runtimeapi.SupplementalGroupsPolicy_Strict,
			},
			want: specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{1000, 4000}},
		},
		{name: "no passwd file: uid works", rootfs: t.TempDir(), imageUser: "33", want: specs.User{UID: 33, GID: 0, AdditionalGids: []uint32{0}}},
		{name: "no passwd file: name fails", rootfs: t.TempDir(), imageUser: "www-data", wantErr: `user "www-data" not found`},
		{name: "unknown image user", imageUser: "ghost", wantErr: `user "ghost" not found`},
		{name: "unknown run_as_username", sc: &runtimeapi.LinuxContainerSecurityContext{RunAsUsername: "ghost"}, wantErr: `user "ghost" not found`},
		{name: "unknown group", imageUser: "app:ghosts", wantErr: `group "ghosts" not found`},
		{name: "empty group part", imageUser: "app:", wantErr: `image user "app:" is malformed`},
		{name: "empty user part", imageUser: ":1", wantErr: `image user ":1" is malformed`},
		{
			name:    "both uid and username",
			sc:      &runtimeapi.LinuxContainerSecurityContext{RunAsUser: i64(1), RunAsUsername: "app"},
			wantErr: "both set",
		},
		{name: "run_as_group without a user", sc: &runtimeapi.LinuxContainerSecurityContext{RunAsGroup: i64(5)}, imageUser: "app", wantErr: "run_as_group is set without run_as_user"},
		{name: "negative uid", sc: &runtimeapi.LinuxContainerSecurityContext{RunAsUser: i64(-1)}, wantErr: "run_as_user -1 out of range"},
		{name: "negative gid", sc: &runtimeapi.LinuxContainerSecurityContext{RunAsUser: i64(1), RunAsGroup: i64(-5)}, wantErr: "run_as_group -5 out of range"},
		{name: "negative supplemental group", sc: &runtimeapi.LinuxContainerSecurityContext{SupplementalGroups: []int64{-2}}, wantErr: "supplemental group -2 out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tt.rootfs
			if root == "" {
				root = f.rootfs
			}
			got, err := ResolveUser(root, tt.sc, tt.imageUser)
			if tt.wantErr != "" {
				if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want invalid argument containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResolveUserStaysInRootfs checks that an absolute symlink at
// /etc/passwd resolves inside the rootfs, not on the host.
func TestResolveUserStaysInRootfs(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "elsewhere/passwd", "inside:x:77:77::/:/bin/sh\n")
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	// On the host /etc/passwd names root; inside the rootfs the link leads
	// to /elsewhere/passwd of the rootfs.
	if err := os.Symlink("/elsewhere/passwd", filepath.Join(root, "etc", "passwd")); err != nil {
		t.Fatal(err)
	}
	got, err := ResolveUser(root, nil, "inside")
	if err != nil {
		t.Fatal(err)
	}
	if got.UID != 77 || got.GID != 77 {
		t.Errorf("user = %+v, want uid 77 gid 77 from the rootfs", got)
	}
	if _, err := ResolveUser(root, nil, "root"); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("resolving a name only the host knows: err = %v, want invalid argument", err)
	}
}
