package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/statusapi"
	"github.com/crib-dev/crib/internal/testutil"
)

func TestParseCheckpointArgs(t *testing.T) {
	o, _, err := parseCheckpointArgs([]string{"web", "-c", "app", "-n", "prod", "-o", "x.tar", "--timeout", "1500ms"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.pod != "web" || o.container != "app" || o.namespace != "prod" || o.output != "x.tar" || o.timeout != 1500*time.Millisecond {
		t.Errorf("parsed %+v", o)
	}
	for _, bad := range [][]string{{}, {"a", "b"}, {"--timeout=-1s", "web"}, {"--no-such-flag", "web"}} {
		if _, _, err := parseCheckpointArgs(bad, io.Discard); err == nil {
			t.Errorf("parseCheckpointArgs accepted %q", bad)
		}
	}
}

func TestArchivePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	now := time.Date(2026, 11, 27, 14, 5, 6, 0, time.UTC)
	got, err := archivePath("", "web", "prod", "app", now)
	if want := filepath.Join(dir, "checkpoint-web_prod-app-2026-11-27T14:05:06Z.tar"); err != nil || got != want {
		t.Errorf("default archive path = %q, %v; want %q (the kubelet's name, here)", got, err, want)
	}
	if got, err := archivePath("sub/../a.tar", "web", "prod", "app", now); err != nil || got != filepath.Join(dir, "a.tar") {
		t.Errorf("relative -o = %q, %v; want it absolute", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for out, want := range map[string]string{
		"missing/a.tar": "-o missing/a.tar: its directory",
		"file/a.tar":    "is not a directory",
		"file":          "a file is there already",
		dir:             "a directory is there already",
	} {
		if _, err := archivePath(out, "web", "prod", "app", now); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("archivePath(%q) = %v, want an error saying %q", out, err, want)
		}
	}
}

type fakeCheckpointer struct {
	err error
	req *runtimeapi.CheckpointContainerRequest
}

func (f *fakeCheckpointer) CheckpointContainer(_ context.Context, req *runtimeapi.CheckpointContainerRequest) error {
	f.req = req
	return f.err
}

func TestRunCheckpoint(t *testing.T) {
	f := &fakeCheckpointer{}
	if err := runCheckpoint(context.Background(), f, "abc", "/x/a.tar", 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if f.req.ContainerId != "abc" || f.req.Location != "/x/a.tar" || f.req.Timeout != 2 {
		t.Errorf("request %v; want abc to /x/a.tar with 2 s (a part of a second rounds up)", f.req)
	}
	for code, want := range map[codes.Code]string{
		codes.FailedPrecondition: "the runtime cannot checkpoint it: criu missing",
		codes.Unimplemented:      "the runtime does not checkpoint containers",
		codes.NotFound:           "the runtime has no container abc",
		codes.InvalidArgument:    "checkpoint to /x/a.tar: criu missing (InvalidArgument)",
	} {
		f.err = status.Error(code, "criu missing")
		if err := runCheckpoint(context.Background(), f, "abc", "/x/a.tar", 0); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to say %q", code, err, want)
		}
	}
}

func TestCheckpointTarget(t *testing.T) {
	store := statusapi.NewStore()
	client := statusAPI(t, store)
	store.Set(testPod("two", []string{"a", "b"}), corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{running("a", "aaa", 0), exited("b", "bbb", 0, 0)}})
	name, id, err := checkpointTarget(context.Background(), client, checkpointOptions{podTarget: podTarget{namespace: "default", pod: "two", container: "a"}})
	if err != nil || name != "a" || id != "aaa" {
		t.Errorf("checkpointTarget = %q, %q, %v; want a, aaa", name, id, err)
	}
	for _, tc := range []struct {
		pod, container string
		err            error
	}{
		{"two", "b", errdefs.ErrFailedPrecondition},
		{"two", "", errdefs.ErrInvalidArgument},
		{"two", "c", errdefs.ErrNotFound},
		{"ghost", "", errdefs.ErrNotFound},
	} {
		if _, _, err := checkpointTarget(context.Background(), client, checkpointOptions{podTarget: podTarget{namespace: "default", pod: tc.pod, container: tc.container}}); !errors.Is(err, tc.err) {
			t.Errorf("%s/%s: %v, want %v", tc.pod, tc.container, err, tc.err)
		}
	}
}

// A runtime without a working criu refuses with FailedPrecondition, and
// crib checkpoint says so, naming what is missing; nothing is written.
func TestCheckpointWithoutCriu(t *testing.T) {
	testutil.RequiresRoot(t)
	img := testutil.Busybox(t)
	d, _, srv := startAppContainer(t, testutil.Options{Image: &img, ExtraConfig: "[checkpoint]\ncriu_path = \"/nonexistent/criu\"\n"})

	dir := t.TempDir()
	out := filepath.Join(dir, "a.tar")
	var stdout, stderr bytes.Buffer
	code := run([]string{"checkpoint", "--status-address", strings.TrimPrefix(srv.URL, "http://"), "--runtime-endpoint", d.Socket, "-o", out, "web"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), `container "app" of pod default/web: the runtime cannot checkpoint it:`) || !strings.Contains(stderr.String(), "/nonexistent/criu") {
		t.Errorf("checkpoint without criu: exit %d, stderr %q; want 1, FailedPrecondition naming /nonexistent/criu", code, stderr.String())
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("a refused checkpoint left %v", left)
	}
}
