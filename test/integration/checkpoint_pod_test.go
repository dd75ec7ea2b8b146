package integration

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

// runTwoCounters runs a pod of that name with two counters, a and b.
func (e *env) runTwoCounters(podName string) (pod *runtimeapi.PodSandboxConfig, podID string, ids map[string]string) {
	e.t.Helper()
	pod = e.podConfig(podName)
	podID = e.runPod(pod)
	ids = map[string]string{}
	for _, name := range []string{"a", "b"} {
		ids[name] = e.run(podID, pod, e.ctrConfig(name, counterCmd...))
	}
	for _, id := range ids {
		e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
	}
	return pod, podID, ids
}

// TestCheckpointPod checkpoints a pod of two counters with CheckpointPod
// into an empty directory, then restores it with RestorePod into a new
// pod: both containers come back CREATED, and once started each counts on
// from where the checkpoint left it. The source pod's counters run on.
func TestCheckpointPod(t *testing.T) {
	testutil.CriuRestores(t)
	e := checkpointEnv(t, testutil.CriuConfig())
	_, podID, ids := e.runTwoCounters("ckpt-pod")
	eventually(t, 30*time.Second, "the counters to pass 20", func() bool { return e.counter(ids["a"]) > 20 && e.counter(ids["b"]) > 20 })

	out := t.TempDir()
	req := &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: out, ContainerIds: []string{ids["a"], ids["b"]}}
	if _, err := e.rt().CheckpointPod(e.ctx(), req); err != nil {
		t.Fatalf("CheckpointPod: %v\n%s", err, e.d.ReadLog())
	}
	var got []string
	_ = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != out {
			rel, _ := filepath.Rel(out, p)
			got = append(got, rel)
		}
		return nil
	})
	sort.Strings(got)
	want := []string{"checkpoint", "checkpoint/containers", "checkpoint/containers/a.tar", "checkpoint/containers/b.tar", "checkpoint/pod.json"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the checkpoint directory holds %v, want %v", got, want)
	}
	checkpointctl(t, filepath.Join(out, "checkpoint", "containers", "a.tar"), "a")
	noCheckpointLeftovers(t, e.d)
	at := map[string]int{}
	for name, id := range ids {
		if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Fatalf("container %s after the pod's checkpoint: %s, want RUNNING", name, st.State)
		}
		at[name] = e.counter(id)
		eventually(t, 10*time.Second, "the counter "+name+" to go on (not left paused)", func() bool { return e.counter(id) > at[name] })
	}

	// Errors that make nothing: a directory not empty, an option, a
	// container of another pod, an unknown container.
	other := e.podConfig("ckpt-pod-other")
	otherID := e.runPod(other)
	stranger := e.run(otherID, other, e.ctrConfig("s", "sleep", "3600"))
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for _, tt := range []struct {
		name    string
		req     *runtimeapi.CheckpointPodRequest
		code    codes.Code
		mention string
	}{
		{"not empty", &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: full, ContainerIds: []string{ids["a"]}}, codes.InvalidArgument, "output_path"},
		{"relative", &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: "out", ContainerIds: []string{ids["a"]}}, codes.InvalidArgument, "output_path"},
		{"option", &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: empty, ContainerIds: []string{ids["a"]}, Options: map[string]string{"x": "y"}}, codes.InvalidArgument, "options"},
		{"no containers", &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: empty}, codes.InvalidArgument, "container_ids"},
		{"twice", &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: empty, ContainerIds: []string{ids["a"], ids["a"]}}, codes.InvalidArgument, "container_ids"},
		{"other pod's", &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: empty, ContainerIds: []string{ids["a"], stranger}}, codes.InvalidArgument, "container_ids"},
		{"unknown container", &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: empty, ContainerIds: []string{"0123456789abcdef"}}, codes.NotFound, "container_ids"},
		{"unknown pod", &runtimeapi.CheckpointPodRequest{PodSandboxId: "0123456789abcdef", OutputPath: empty, ContainerIds: []string{ids["a"]}}, codes.NotFound, "0123456789abcdef"},
	} {
		_, err := e.rt().CheckpointPod(e.ctx(), tt.req)
		if status.Code(err) != tt.code || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("CheckpointPod, %s: %v, want %s naming %q", tt.name, err, tt.code, tt.mention)
		}
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("failed pod checkpoints left %v", entries)
	}

	// The restore, into a pod of a new name.
	dst := e.podConfig("ckpt-pod-restored")
	cfgs := []*runtimeapi.ContainerConfig{e.ctrConfig("b", counterCmd...), e.ctrConfig("a", counterCmd...)}
	rreq := &runtimeapi.RestorePodRequest{CheckpointPath: out, Config: dst, ContainerConfigs: cfgs}
	for _, tt := range []struct {
		name    string
		mutate  func(r *runtimeapi.RestorePodRequest)
		code    codes.Code
		mention string
	}{
		{"a name not checkpointed", func(r *runtimeapi.RestorePodRequest) {
			r.ContainerConfigs = []*runtimeapi.ContainerConfig{e.ctrConfig("a", counterCmd...), e.ctrConfig("z", counterCmd...)}
		}, codes.InvalidArgument, "\"z\""},
		{"one missing", func(r *runtimeapi.RestorePodRequest) { r.ContainerConfigs = cfgs[:1] }, codes.InvalidArgument, "container_configs"},
		{"another image", func(r *runtimeapi.RestorePodRequest) {
			c := e.ctrConfig("a", counterCmd...)
			c.Image = &runtimeapi.ImageSpec{Image: "example.com/other:1"}
			r.ContainerConfigs = []*runtimeapi.ContainerConfig{c, cfgs[0]}
		}, codes.InvalidArgument, "image"},
		{"no checkpoint", func(r *runtimeapi.RestorePodRequest) { r.CheckpointPath = empty }, codes.InvalidArgument, "checkpoint_path"},
		{"option", func(r *runtimeapi.RestorePodRequest) { r.Options = map[string]string{"x": "y"} }, codes.InvalidArgument, "options"},
		{"unknown handler", func(r *runtimeapi.RestorePodRequest) { r.RuntimeHandler = "nope" }, codes.InvalidArgument, "runtime_handler"},
	} {
		r := &runtimeapi.RestorePodRequest{CheckpointPath: rreq.CheckpointPath, Config: rreq.Config, ContainerConfigs: rreq.ContainerConfigs}
		tt.mutate(r)
		_, err := e.rt().RestorePod(e.ctx(), r)
		if status.Code(err) != tt.code || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("RestorePod, %s: %v, want %s naming %q", tt.name, err, tt.code, tt.mention)
		}
	}
	if pods := e.listPods(); len(pods) != 2 {
		t.Errorf("%d pods after refused restores, want the 2 made", len(pods))
	}

	resp, err := e.rt().RestorePod(e.ctx(), rreq)
	if err != nil {
		t.Fatalf("RestorePod: %v\n%s", err, e.d.ReadLog())
	}
	if len(resp.RestoredContainers) != 2 {
		t.Fatalf("RestorePod restored %v, want a and b", resp.RestoredContainers)
	}
	for _, rc := range resp.RestoredContainers {
		st := e.status(rc.ContainerId)
		if st.State != runtimeapi.ContainerState_CONTAINER_CREATED || st.Metadata.Name != rc.Name {
			t.Errorf("restored %s: %s named %s, want CREATED", rc.Name, st.State, st.Metadata.Name)
		}
		if st.Annotations["restored"] != "true" {
			t.Errorf("restored %s's annotations = %v, want restored", rc.Name, st.Annotations)
		}
	}
	for _, rc := range resp.RestoredContainers {
		e.start(rc.ContainerId)
	}
	for _, rc := range resp.RestoredContainers {
		e.waitState(rc.ContainerId, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
		if got := e.counter(rc.ContainerId); got < 20 {
			t.Errorf("restored counter %s at %d, below the checkpoint's count past 20: started afresh", rc.Name, got)
		}
		e.wantCgroupIn(rc.ContainerId, resp.PodSandboxId)
	}
	// The checkpoint is the caller's: left as it was.
	if _, err := os.Stat(filepath.Join(out, "checkpoint", "pod.json")); err != nil {
		t.Errorf("the checkpoint after its restore: %v", err)
	}
	// A second restore with the same metadata is refused, nothing made.
	if _, err := e.rt().RestorePod(e.ctx(), rreq); status.Code(err) != codes.AlreadyExists {
		t.Errorf("RestorePod of a pod that exists: %v, want AlreadyExists", err)
	}
	noCheckpointLeftovers(t, e.d)
}
