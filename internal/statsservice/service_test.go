package statsservice

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/kernelstats"
	"github.com/crib-dev/crib/internal/sandbox"
)

// fakeParts are containers held in a map; each container's cgroup is
// /<id> and its writable layer <root>/<id>/fs.
type fakeParts struct {
	root       string
	containers map[string]container.Container
}

func (f *fakeParts) Get(id string) (container.Container, error) {
	if c, ok := f.containers[id]; ok {
		return c, nil
	}
	return container.Container{}, fmt.Errorf("container %s: %w", id, errdefs.ErrNotFound)
}

func (f *fakeParts) List() []container.Container {
	var out []container.Container
	for _, c := range f.containers {
		out = append(out, c)
	}
	return out
}

func (f *fakeParts) StatsPaths(c container.Container) (container.StatsPaths, error) {
	return container.StatsPaths{
		CgroupsPath:   "/" + c.ID,
		WritableLayer: filepath.Join(f.root, c.ID, "fs"),
		FsRoot:        f.root,
	}, nil
}

type fakeSandboxes map[string]sandbox.Sandbox

func (f fakeSandboxes) Get(id string) (sandbox.Sandbox, error) {
	if sb, ok := f[id]; ok {
		return sb, nil
	}
	return sandbox.Sandbox{}, fmt.Errorf("sandbox %s: %w", id, errdefs.ErrNotFound)
}

type noImages struct{}

func (noImages) FsInfo() (image.FsUsage, error) { return image.FsUsage{}, nil }

// writeCgroupV2 writes the files of a unified cgroup at dir with usec of
// CPU time used.
func writeCgroupV2(t *testing.T, dir string, usec int) {
	t.Helper()
	files := map[string]string{
		"cgroup.controllers": "cpu memory pids\n",
		"cpu.stat":           fmt.Sprintf("usage_usec %d\nuser_usec %d\nsystem_usec 0\n", usec, usec),
		"memory.stat":        "anon 8192\nfile 4096\ninactive_file 1000\npgfault 12\npgmajfault 1\n",
		"memory.current":     "20000\n",
		"memory.max":         "max\n",
		"pids.current":       "2\n",
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestContainerAndPodUsage(t *testing.T) {
	cgroups, layers := t.TempDir(), t.TempDir()
	parts := &fakeParts{root: layers, containers: map[string]container.Container{
		"running": {ID: "running", SandboxID: "pod", State: container.Running},
		"exited":  {ID: "exited", SandboxID: "pod", State: container.Exited},
	}}
	pods := fakeSandboxes{"pod": {ID: "pod", CgroupParent: "/pod"}}
	svc := New(Config{Cgroups: kernelstats.Config{Root: cgroups, Unified: true}}, parts, pods, noImages{})
	writeCgroupV2(t, filepath.Join(cgroups, "running"), 1000)
	writeCgroupV2(t, filepath.Join(cgroups, "exited"), 1000)
	if err := os.MkdirAll(filepath.Join(layers, "running", "fs"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	first, err := svc.Container(ctx, parts.containers["running"])
	if err != nil {
		t.Fatal(err)
	}
	if first.Cgroup == nil || first.Cgroup.CPU == nil || first.Cgroup.Memory == nil {
		t.Fatalf("running container's cgroup = %+v, want CPU and memory figures", first.Cgroup)
	}
	if first.Cgroup.HasRate {
		t.Error("a first reading has a CPU rate")
	}
	if first.Layer == nil || first.Layer.Inodes != 1 || first.Layer.Mountpoint != layers {
		t.Errorf("writable layer = %+v, want its directory on %s", first.Layer, layers)
	}
	time.Sleep(10 * time.Millisecond)
	writeCgroupV2(t, filepath.Join(cgroups, "running"), 6000)
	second, err := svc.Container(ctx, parts.containers["running"])
	if err != nil {
		t.Fatal(err)
	}
	if !second.Cgroup.HasRate || second.Cgroup.NanoCores == 0 {
		t.Errorf("second reading: rate %d (known %v), want a rate above zero", second.Cgroup.NanoCores, second.Cgroup.HasRate)
	}

	exited, err := svc.Container(ctx, parts.containers["exited"])
	if err != nil {
		t.Fatal(err)
	}
	if exited.Cgroup != nil {
		t.Errorf("an exited container's cgroup was read: %+v", exited.Cgroup)
	}
	if exited.Layer == nil || exited.Layer.Inodes != 0 {
		t.Errorf("a removed writable layer = %+v, want an empty one", exited.Layer)
	}

	// The pod's cgroup is not made yet: no figures, no error.
	pod, err := svc.Pod(ctx, pods["pod"], []container.Container{parts.containers["running"], parts.containers["exited"]})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Cgroup != nil || len(pod.Containers) != 2 || pod.Containers[0].Cgroup == nil || pod.Containers[1].Cgroup != nil {
		t.Errorf("pod usage = %+v, want no pod cgroup and its two containers in order", pod)
	}
}

func TestForgetGoneRates(t *testing.T) {
	cgroups, layers := t.TempDir(), t.TempDir()
	parts := &fakeParts{root: layers, containers: map[string]container.Container{
		"c": {ID: "c", SandboxID: "pod", State: container.Running},
	}}
	svc := New(Config{Cgroups: kernelstats.Config{Root: cgroups, Unified: true}}, parts, fakeSandboxes{}, noImages{})
	writeCgroupV2(t, filepath.Join(cgroups, "c"), 1000)
	ctx := context.Background()
	if _, err := svc.Container(ctx, parts.containers["c"]); err != nil {
		t.Fatal(err)
	}
	gone := parts.containers["c"]
	delete(parts.containers, "c")
	svc.ForgetGone()
	time.Sleep(10 * time.Millisecond)
	u, err := svc.Container(ctx, gone)
	if err != nil {
		t.Fatal(err)
	}
	if u.Cgroup.HasRate {
		t.Error("a forgotten container's next reading has a rate from before")
	}
}

// TestRatesOfRemovedContainersBounded: the readings of removed containers
// do not accumulate when the client never makes the call that forgets them
// (the kubelet's unfiltered ListContainerStats): the readings kept stay
// within twice the live ones and a slack.
func TestRatesOfRemovedContainersBounded(t *testing.T) {
	cgroups, layers := t.TempDir(), t.TempDir()
	parts := &fakeParts{root: layers, containers: map[string]container.Container{}}
	svc := New(Config{Cgroups: kernelstats.Config{Root: cgroups, Unified: true}}, parts, fakeSandboxes{}, noImages{})
	ctx := context.Background()
	const live = 10
	for i := range 1000 {
		id := fmt.Sprintf("c%d", i)
		c := container.Container{ID: id, SandboxID: "pod", State: container.Running}
		parts.containers[id] = c
		writeCgroupV2(t, filepath.Join(cgroups, id), 1000)
		if _, err := svc.Container(ctx, c); err != nil {
			t.Fatal(err)
		}
		if i >= live {
			// One created, one removed: live stays at ten.
			delete(parts.containers, fmt.Sprintf("c%d", i-live))
		}
	}
	if n, most := svc.cpuRates.Len(), 2*live+ratesSlack+1; n > most {
		t.Errorf("%d readings kept for %d live containers, want at most %d", n, live, most)
	}
	svc.ForgetGone()
	if n := svc.cpuRates.Len(); n != live {
		t.Errorf("%d readings kept after ForgetGone, want %d", n, live)
	}
}
