package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	// twoLayers is an image of two layers (an overlay when mounted),
	// oneLayer one of a single layer.
	twoLayers = "test.local/imgvol/two:1"
	oneLayer  = "test.local/imgvol/one:1"
)

// layerOf is a layer of the given files; a value starting with "->" makes
// a symlink to the rest.
func layerOf(t *testing.T, files map[string]string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for p, content := range files {
		for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
			if !dirs[d] {
				dirs[d] = true
				if err := tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
					t.Fatal(err)
				}
			}
		}
		h := &tar.Header{Name: p, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(content))}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			h = &tar.Header{Name: p, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777}
			content = ""
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// volumeImages writes a docker archive of the two test images.
func volumeImages(t *testing.T) string {
	t.Helper()
	build := func(layers ...v1.Layer) v1.Image {
		img, err := mutate.AppendLayers(empty.Image, layers...)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	two := build(
		layerOf(t, map[string]string{
			"data/hello.txt":     "hello from layer one",
			"data/sub/inner.txt": "inner",
			"data/gone.txt":      "deleted by layer two",
			"escape":             "->../../../..",
		}),
		layerOf(t, map[string]string{"data/layer2.txt": "layer two", "data/.wh.gone.txt": ""}),
	)
	one := build(layerOf(t, map[string]string{"only/one.txt": "single layer"}))
	refs := map[name.Reference]v1.Image{}
	for ref, img := range map[string]v1.Image{twoLayers: two, oneLayer: one} {
		tag, err := name.NewTag(ref)
		if err != nil {
			t.Fatal(err)
		}
		refs[tag] = img
	}
	out := filepath.Join(t.TempDir(), "volumes.tar")
	if err := tarball.MultiRefWriteToFile(out, refs); err != nil {
		t.Fatal(err)
	}
	return out
}

// imageMount is a CRI mount of image ref (with a sub path) at path.
func imageMount(path, ref, sub string) *runtimeapi.Mount {
	return &runtimeapi.Mount{ContainerPath: path, Image: &runtimeapi.ImageSpec{Image: ref}, ImageSubPath: sub}
}

// volumeMountLeaks are the mounts of image volumes left on the host.
func (e *env) volumeMountLeaks() []string {
	var out []string
	for _, l := range e.d.Leaks() {
		if strings.HasPrefix(l, "mount ") && strings.Contains(l, "/volumes/") {
			out = append(out, l)
		}
	}
	return out
}

func TestImageVolumes(t *testing.T) {
	e := newEnv(t)
	e.d.LoadImage(t, volumeImages(t))
	imgStatus := func(ref string) *runtimeapi.Image {
		resp, err := e.d.Images.ImageStatus(e.ctx(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if err != nil || resp.Image == nil {
			t.Fatalf("ImageStatus %s: %v, %v", ref, resp, err)
		}
		return resp.Image
	}
	two := imgStatus(twoLayers)

	pod := e.podConfig("imgvol")
	podID := e.runPod(pod)
	cfg := e.ctrConfig("reader", "sleep", "3600")
	cfg.Mounts = []*runtimeapi.Mount{
		imageMount("/vol", twoLayers, ""),
		imageMount("/sub", two.Id, "data/sub"),
		imageMount("/one", oneLayer, ""),
	}
	id := e.run(podID, pod, cfg)
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 30*time.Second)

	for file, want := range map[string]string{
		"/vol/data/hello.txt":  "hello from layer one",
		"/vol/data/layer2.txt": "layer two",
		"/sub/inner.txt":       "inner",
		"/one/only/one.txt":    "single layer",
	} {
		if r := e.exec(id, "cat", file); r.ExitCode != 0 || string(r.Stdout) != want {
			t.Errorf("cat %s = %q (exit %d, %s), want %q", file, r.Stdout, r.ExitCode, r.Stderr, want)
		}
	}
	if r := e.exec(id, "ls", "/vol/data/gone.txt"); r.ExitCode == 0 {
		t.Errorf("a file the top layer deletes is in the volume")
	}
	for _, dir := range []string{"/vol/data", "/sub", "/one"} {
		r := e.exec(id, "sh", "-c", "echo x > "+dir+"/new")
		if r.ExitCode == 0 || !strings.Contains(string(r.Stderr), "Read-only file system") {
			t.Errorf("write to %s: exit %d, %s; want a read-only file system", dir, r.ExitCode, r.Stderr)
		}
	}

	// The status shows each image mount with the image's digest.
	wantRef := two.Id
	if len(two.RepoDigests) > 0 {
		wantRef = two.RepoDigests[0]
	}
	byPath := map[string]*runtimeapi.Mount{}
	for _, m := range e.status(id).Mounts {
		byPath[m.ContainerPath] = m
	}
	if m := byPath["/sub"]; m.GetImage().GetImage() != two.Id || m.GetImage().GetImageRef() != wantRef || m.GetImageSubPath() != "data/sub" {
		t.Errorf("status mount /sub = %v, want image %s, ref %s, sub path data/sub", m, two.Id, wantRef)
	}
	if m := byPath["/vol"]; m.GetImage().GetImage() != twoLayers || m.GetImage().GetImageRef() != wantRef {
		t.Errorf("status mount /vol = %v, want image %s with ref %s", m, twoLayers, wantRef)
	}

	// A mounted image cannot be removed, by name or id, even across a
	// restart of the daemon.
	removeImage := func(ref string) error {
		_, err := e.d.Images.RemoveImage(e.ctx(), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		return err
	}
	for _, ref := range []string{twoLayers, two.Id} {
		if err := removeImage(ref); status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), id) {
			t.Errorf("RemoveImage %s while mounted = %v, want FailedPrecondition naming %s", ref, err, id)
		}
	}
	e.d.Restart(t)
	if err := removeImage(oneLayer); status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), id) {
		t.Errorf("RemoveImage %s while mounted, after a restart = %v, want FailedPrecondition naming %s", oneLayer, err, id)
	}

	// Bad mounts fail cleanly, naming the field, leaving no mount.
	for _, tt := range []struct {
		mount *runtimeapi.Mount
		code  codes.Code
		want  string
	}{
		{imageMount("/x", twoLayers, "escape"), codes.InvalidArgument, "mounts[0].image_sub_path"},
		{imageMount("/x", twoLayers, "escape/etc"), codes.InvalidArgument, "mounts[0].image_sub_path"},
		{imageMount("/x", twoLayers, "data/../../etc"), codes.InvalidArgument, "mounts[0].image_sub_path"},
		{imageMount("/x", twoLayers, "data/missing"), codes.InvalidArgument, "mounts[0].image_sub_path"},
		{imageMount("/x", "test.local/imgvol/absent:1", ""), codes.NotFound, "test.local/imgvol/absent:1"},
	} {
		bad := e.ctrConfig("bad", "true")
		bad.Mounts = []*runtimeapi.Mount{tt.mount}
		_, err := e.rt().CreateContainer(e.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: bad, SandboxConfig: pod})
		if status.Code(err) != tt.code || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CreateContainer with %v = %v, want %s naming %s", tt.mount, err, tt.code, tt.want)
		}
	}
	// None is left by the failed creations, nor on the host by the running
	// container, whose own mount namespace holds its image volumes.
	if leaks := e.volumeMountLeaks(); len(leaks) != 0 {
		t.Errorf("image volume mounts on the host = %v, want none", leaks)
	}

	// Once the container goes, so do its mounts, and the images can go.
	if _, err := e.rt().StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt().RemoveContainer(e.ctx(), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	if leaks := e.volumeMountLeaks(); len(leaks) != 0 {
		t.Errorf("image volume mounts left after removal: %v", leaks)
	}
	for _, ref := range []string{twoLayers, oneLayer} {
		if err := removeImage(ref); err != nil {
			t.Errorf("RemoveImage %s after the container went: %v", ref, err)
		}
	}
}

// TestCrashDuringImageVolumeCreate kills the daemon while it creates a
// container with image volumes: the restarted daemon either has the
// container, still holding its images, or nothing of it; removing the
// pods leaves no mount, and the images can then be removed.
func TestCrashDuringImageVolumeCreate(t *testing.T) {
	e := newEnv(t)
	e.d.LoadImage(t, volumeImages(t))
	cfg := e.ctrConfig("c", "sleep", "3600")
	cfg.Mounts = []*runtimeapi.Mount{imageMount("/vol", twoLayers, ""), imageMount("/one", oneLayer, "only")}
	pod := e.podConfig("imgvol-calibrate")
	podID := e.runPod(pod)
	start := time.Now()
	e.create(podID, pod, cfg)
	took := time.Since(start)
	e.removeAllAndCheck(t)

	removeImage := func(ref string) error {
		_, err := e.d.Images.RemoveImage(e.ctx(), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		return err
	}
	for i, delay := range crashDelays(took) {
		pod := e.podConfig(fmt.Sprintf("imgvol-crash-%d", i))
		podID := e.runPod(pod)
		res := e.crashDuring(delay, func(ctx context.Context, rt runtimeapi.RuntimeServiceClient) rpcResult {
			resp, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
			if err != nil {
				return rpcResult{err: err}
			}
			return rpcResult{id: resp.ContainerId}
		})
		ctrs, err := e.rt().ListContainers(e.ctx(), &runtimeapi.ListContainersRequest{})
		if err != nil {
			t.Fatalf("ListContainers after restart: %v", err)
		}
		t.Logf("kill after %s: created %.12s (%v), %d containers after the restart", delay, res.id, res.err, len(ctrs.Containers))
		if res.id != "" && len(ctrs.Containers) != 1 {
			t.Errorf("container %s was reported created but is gone after the restart", res.id)
		}
		for _, c := range ctrs.Containers {
			if err := removeImage(oneLayer); status.Code(err) != codes.FailedPrecondition {
				t.Errorf("RemoveImage of an image container %s mounts, after a restart = %v, want FailedPrecondition", c.Id, err)
			}
			e.start(c.Id)
			if r := e.exec(c.Id, "cat", "/one/one.txt"); string(r.Stdout) != "single layer" {
				t.Errorf("cat /one/one.txt after a restart = %q, %s", r.Stdout, r.Stderr)
			}
		}
		e.removeAllAndCheck(t)
	}
	for _, ref := range []string{twoLayers, oneLayer} {
		if err := removeImage(ref); err != nil {
			t.Errorf("RemoveImage %s after the containers went: %v", ref, err)
		}
	}
}
