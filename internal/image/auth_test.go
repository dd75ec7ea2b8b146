package image

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/containerd/errdefs"
)

// basicAuthRegistry wraps a registry so every /v2/ request needs basic auth
// as user:secret; it counts authorised blob downloads.
func basicAuthRegistry(t *testing.T) (*testRegistry, *atomic.Int32) {
	reg := newRegistry(t)
	reg.push(t, "private/app:1", testImage(t, "amd64", "private"))
	blobs := new(atomic.Int32)
	reg.wrap = func(w http.ResponseWriter, r *http.Request) bool {
		if u, p, ok := r.BasicAuth(); ok && u == "user" && p == "secret" {
			if strings.Contains(r.URL.Path, "/blobs/") {
				blobs.Add(1)
			}
			return false
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="crib-test"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
		return true
	}
	return reg, blobs
}

func TestPullWithAuth(t *testing.T) {
	requiresRoot(t)
	reg, blobs := basicAuthRegistry(t)
	ref := reg.host + "/private/app:1"
	tests := []struct {
		name  string
		auth  Auth
		class error
	}{
		{"anonymous", Auth{}, errdefs.ErrUnauthenticated},
		{"wrong password", Auth{Username: "user", Password: "nope"}, errdefs.ErrUnauthenticated},
		{"username and password", Auth{Username: "user", Password: "secret"}, nil},
		{"auth field", Auth{Auth: "dXNlcjpzZWNyZXQ="}, nil}, // user:secret
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t, t.TempDir(), Config{})
			blobs.Store(0)
			img, err := s.Pull(context.Background(), ref, tc.auth)
			if tc.class != nil {
				if !errdefs.IsUnauthorized(err) || !strings.Contains(err.Error(), "authentication required") {
					t.Fatalf("Pull error = %v, want unauthenticated with the registry's message", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := blobs.Load(); n < 2 {
				t.Errorf("%d authorised blob downloads, want config and layers", n)
			}
			if m := readTop(t, s, img, "etc/marker"); m != "private" {
				t.Errorf("etc/marker = %q", m)
			}
		})
	}
}

func TestRemoveByDigestRef(t *testing.T) {
	requiresRoot(t)
	reg := newRegistry(t)
	img := testImage(t, "amd64", "dig")
	reg.push(t, "d/app:1", img)
	s := openStore(t, t.TempDir(), Config{})
	ctx := context.Background()
	digestRef := reg.host + "/d/app@" + manifestDigest(t, img)
	pullAll(t, s, reg.host+"/d/app:1")
	// A digest name goes alone while a tag remains.
	if err := s.Remove(ctx, digestRef); err != nil {
		t.Fatal(err)
	}
	got, err := s.Resolve(reg.host + "/d/app:1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.RepoDigests) != 0 {
		t.Errorf("RepoDigests = %v, want none", got.RepoDigests)
	}
	// An image pulled by digest only goes with its digest name.
	if err := s.Remove(ctx, got.ID); err != nil {
		t.Fatal(err)
	}
	pullAll(t, s, digestRef)
	if err := s.Remove(ctx, digestRef); err != nil {
		t.Fatal(err)
	}
	if len(s.List()) != 0 {
		t.Errorf("List = %v, want empty", s.List())
	}
}

func TestBadMirrorConfig(t *testing.T) {
	s := openStore(t, t.TempDir(), Config{Registries: map[string]Registry{
		"docker.io": {Mirrors: []string{"127.0.0.1:5000"}},
	}})
	if _, err := s.Pull(context.Background(), "busybox", Auth{}); !errdefs.IsInvalidArgument(err) {
		t.Errorf("Pull error = %v, want invalid argument", err)
	}
}
