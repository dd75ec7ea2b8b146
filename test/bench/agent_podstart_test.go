package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/crib-dev/crib/internal/agent"
	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/agent/source"
	"github.com/crib-dev/crib/internal/testutil"
)

const (
	// runningPoll is how often both sides look for the running container.
	runningPoll = 2 * time.Millisecond
	// agentBenchTimeout bounds every wait of the agent benchmark; it is a
	// hang guard, not a performance assertion.
	agentBenchTimeout = 60 * time.Second
	agentBenchNode    = "bench-node"
	agentBenchNS      = "agentbench"
)

// agentBenchEnv is what every sub-benchmark of BenchmarkAgentPodStart
// shares: one daemon, one CRI client, the pod config options.
type agentBenchEnv struct {
	d       *testutil.Daemon
	image   string // the reference manifests name
	imageID string
	user    *podconfig.ImageUser
	rt      internalapi.RuntimeService
	images  internalapi.ImageManagerService
	opts    podconfig.Options
	seq     int // makes every pod name unique across sub-benchmark runs
}

// BenchmarkAgentPodStart measures, alternately in each iteration, the time
// from a Pod manifest being renamed into the agent's manifest directory to
// its container running, and the bare CRI start (RunPodSandbox,
// CreateContainer, StartContainer) of the same pod, configured by the same
// podconfig code. Both are observed the same way: a ListContainers poll
// every 2 ms for a RUNNING container with the pod's name label, started
// with the clock. The agent runs in the test process over the same
// cri-client as the bare calls. Teardown is not timed.
//
// Sub-benchmarks: "hostnet" and "cni" (the pod on the host network or on
// crib's default CNI bridge), and "hostnet-direct", where the test loads
// the directory and hands the agent the snapshot itself instead of its
// watcher (so the difference to "hostnet" is the watcher's settle time).
// Each reports agent-µs/pod, bare-µs/pod, agent/bare (of the means) and
// agent/bare-median (of the medians: crib's StartContainer varies by tens
// of milliseconds from pod to pod), and logs, from the runtime's own
// timestamps, where the agent's time goes. The agent needs about 1 s after
// its start to give up on GetContainerEvents, which crib does not offer;
// cri-client logs that once per agent on stderr.
func BenchmarkAgentPodStart(b *testing.B) {
	img := testutil.Busybox(b)
	d := testutil.StartDaemon(b, testutil.Options{Image: &img, LogLevel: "warn"})
	ctx := context.Background()
	rt, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint("unix://" + d.Socket).
		WithConnectionTimeout(agentBenchTimeout).Build(ctx)
	if err != nil {
		b.Fatal(err)
	}
	images, err := remote.NewRemoteImageServiceBuilder().WithEndpoint("unix://" + d.Socket).
		WithConnectionTimeout(agentBenchTimeout).Build(ctx)
	if err != nil {
		b.Fatal(err)
	}
	st, err := images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: img.Ref}, false)
	if err != nil || st.GetImage() == nil {
		b.Fatalf("image status %s: %v", img.Ref, err)
	}
	e := &agentBenchEnv{
		d: d, image: img.Ref, imageID: st.Image.Id, rt: rt, images: images,
		opts: podconfig.Options{PodLogRoot: d.LogDir, NodeName: agentBenchNode},
	}
	if st.Image.Uid != nil || st.Image.Username != "" {
		e.user = &podconfig.ImageUser{Username: st.Image.Username}
		if st.Image.Uid != nil {
			v := st.Image.Uid.Value
			e.user.UID = &v
		}
	}
	b.Run("hostnet", func(b *testing.B) { e.run(b, true, false) })
	b.Run("cni", func(b *testing.B) { e.run(b, false, false) })
	b.Run("hostnet-direct", func(b *testing.B) { e.run(b, true, true) })
}

// startTimes is one pod start, split by the runtime's timestamps: until
// RunPodSandbox began, until CreateContainer began, until the container
// started (the runtime's StartedAt), until the action returned (bare: the
// last CRI call; agent: the manifest rename) and until the poll saw it
// running (total).
type startTimes struct {
	sandbox, create, started, returned, total time.Duration
}

func (s *startTimes) add(o startTimes) {
	s.sandbox += o.sandbox
	s.create += o.create
	s.started += o.started
	s.returned += o.returned
	s.total += o.total
}

// run alternates agent and bare starts b.N times each with an agent of its
// own, which it stops before returning (no pod of it is left by then).
func (e *agentBenchEnv) run(b *testing.B, hostNet, direct bool) {
	ctx, cancel := context.WithCancel(context.Background())
	root := b.TempDir()
	manifests := filepath.Join(root, "manifests")
	staging := filepath.Join(root, "staging")
	bareDir := filepath.Join(root, "bare")
	for _, dir := range []string{manifests, staging, bareDir} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	cfg := agent.Config{
		NodeName:  agentBenchNode,
		Root:      filepath.Join(root, "agent"),
		PodConfig: e.opts,
		Runtime:   e.rt,
		Images:    e.images,
	}
	if os.Getenv("CRIB_BENCH_LOG") != "" {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	var snapshots chan source.Snapshot
	if direct {
		snapshots = make(chan source.Snapshot, 1)
		snapshots <- source.Load(manifests, source.Options{NodeName: agentBenchNode})
		cfg.Snapshots = snapshots
	} else {
		cfg.ManifestDir = manifests
	}
	done := make(chan error, 1)
	go func() { done <- agent.New(cfg).Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()

	appear := func(name string) {
		file := filepath.Join(manifests, name+".yaml")
		tmp := filepath.Join(staging, name+".yaml")
		if err := os.WriteFile(tmp, e.manifest(name, hostNet), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			b.Fatal(err)
		}
		if direct {
			snapshots <- source.Load(manifests, source.Options{NodeName: agentBenchNode})
		}
	}
	disappear := func(name string) {
		if err := os.Remove(filepath.Join(manifests, name+".yaml")); err != nil {
			b.Fatal(err)
		}
		if direct {
			snapshots <- source.Load(manifests, source.Options{NodeName: agentBenchNode})
		}
		e.waitGone(b, name)
	}

	// One untimed round of each warms both paths (and tells that the
	// agent watches the directory before the clock runs).
	warm := e.podName("warm", hostNet)
	e.measure(b, warm, func() { appear(warm) })
	disappear(warm)
	warmBare := e.podName("warm-bare", hostNet)
	bare := e.barePod(b, bareDir, warmBare, hostNet)
	e.measure(b, warmBare, func() { bare.start(b) })
	bare.remove(b)

	var ag, ba startTimes
	agTotals := make([]time.Duration, 0, b.N)
	baTotals := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := e.podName("agent", hostNet)
		settle(b)
		t := e.measure(b, name, func() { appear(name) })
		ag.add(t)
		agTotals = append(agTotals, t.total)
		b.StopTimer()
		disappear(name)
		b.StartTimer()

		b.StopTimer()
		name = e.podName("bare", hostNet)
		bare := e.barePod(b, bareDir, name, hostNet)
		b.StartTimer()
		settle(b)
		t = e.measure(b, name, func() { bare.start(b) })
		ba.add(t)
		baTotals = append(baTotals, t.total)
		b.StopTimer()
		bare.remove(b)
		b.StartTimer()
	}
	b.StopTimer()

	n := float64(b.N)
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / n }
	b.ReportMetric(us(ag.total), "agent-µs/pod")
	b.ReportMetric(us(ba.total), "bare-µs/pod")
	b.ReportMetric(float64(ag.total)/float64(ba.total), "agent/bare")
	b.ReportMetric(float64(median(agTotals))/float64(median(baTotals)), "agent/bare-median")
	b.ReportMetric(us(ag.total-ba.total), "added-µs/pod")
	b.ReportMetric(us(ag.sandbox-ba.sandbox), "added-before-sandbox-µs/pod")
	b.ReportMetric(us((ag.create-ag.sandbox)-(ba.create-ba.sandbox)), "added-sandbox-to-create-µs/pod")
	row := func(t startTimes, returned string) string {
		return fmt.Sprintf("%8.0f %8.0f %8.0f %8s %8.0f", us(t.sandbox), us(t.create), us(t.started), returned, us(t.total))
	}
	b.Logf("N=%d: mean µs from the rename (agent) or the first CRI call (bare) to:\n"+
		"         sandbox   create  started returned  running\n"+
		"  agent %s\n  bare  %s", b.N, row(ag, "-"), row(ba, fmt.Sprintf("%.0f", us(ba.returned))))
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (e *agentBenchEnv) podName(kind string, hostNet bool) string {
	e.seq++
	network := "cni"
	if hostNet {
		network = "host"
	}
	return fmt.Sprintf("%s-%s-%d", kind, network, e.seq)
}

// manifest is the benchmark's pod: one busybox `sleep 3600`, no grace
// period so that teardown is quick, the image used as present.
func (e *agentBenchEnv) manifest(name string, hostNet bool) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
spec:
  hostNetwork: %t
  terminationGracePeriodSeconds: 0
  containers:
  - name: sleep
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`, name, agentBenchNS, hostNet, e.image)
}

// measure starts the running-container poll, then action, and returns the
// time from just before action until the poll saw the pod's container
// running, split by the runtime's timestamps.
func (e *agentBenchEnv) measure(b *testing.B, name string, action func()) startTimes {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), agentBenchTimeout)
	defer cancel()
	filter := &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{labels.PodName: name},
	}
	type seen struct {
		at  time.Time
		ctr *runtimeapi.Container
		err error
	}
	result := make(chan seen, 1)
	start := time.Now()
	go func() {
		tick := time.NewTicker(runningPoll)
		defer tick.Stop()
		for {
			cs, err := e.rt.ListContainers(ctx, filter)
			if err != nil || len(cs) > 0 {
				r := seen{at: time.Now(), err: err}
				if len(cs) > 0 {
					r.ctr = cs[0]
				}
				result <- r
				return
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				result <- seen{err: fmt.Errorf("pod %s not running: %w", name, ctx.Err())}
				return
			}
		}
	}()
	action()
	returned := time.Since(start)
	r := <-result
	if r.err != nil {
		b.Fatal(r.err)
	}
	total := r.at.Sub(start)

	b.StopTimer()
	defer b.StartTimer()
	sbs, err := e.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{Id: r.ctr.PodSandboxId})
	if err != nil || len(sbs) != 1 {
		b.Fatalf("sandbox of %s: %v (%d found)", name, err, len(sbs))
	}
	st, err := e.rt.ContainerStatus(ctx, r.ctr.Id, false)
	if err != nil {
		b.Fatalf("container status of %s: %v", name, err)
	}
	at := func(ns int64) time.Duration { return time.Unix(0, ns).Sub(start) }
	return startTimes{
		sandbox:  at(sbs[0].CreatedAt),
		create:   at(st.Status.CreatedAt),
		started:  at(st.Status.StartedAt),
		returned: returned,
		total:    total,
	}
}

// waitGone waits until the runtime holds neither a sandbox nor a container
// of the pod.
func (e *agentBenchEnv) waitGone(b *testing.B, name string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), agentBenchTimeout)
	defer cancel()
	sel := map[string]string{labels.PodName: name}
	for {
		sbs, err := e.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
		if err != nil {
			b.Fatalf("pod %s not removed: %v", name, err)
		}
		cs, err := e.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
		if err != nil {
			b.Fatalf("pod %s not removed: %v", name, err)
		}
		if len(sbs)+len(cs) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// barePod is the configs the agent would make for a pod, minus the label
// that would make the agent take it as its own.
type barePod struct {
	e         *agentBenchEnv
	sandbox   *runtimeapi.PodSandboxConfig
	container *runtimeapi.ContainerConfig
	sandboxID string
}

// barePod loads the same manifest as the agent gets (defaulted by source)
// and builds its configs with podconfig; the termination message file is
// made here, untimed.
func (e *agentBenchEnv) barePod(b *testing.B, dir, name string, hostNet bool) *barePod {
	b.Helper()
	file := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(file, e.manifest(name, hostNet), 0o644); err != nil {
		b.Fatal(err)
	}
	snap, err := source.LoadFile(file, source.Options{NodeName: agentBenchNode})
	if err != nil || len(snap.Pods) != 1 {
		b.Fatalf("load %s: %v", file, err)
	}
	pod := snap.Pods[0]
	sb, err := podconfig.SandboxConfig(pod, 0, nil, e.opts)
	if err != nil {
		b.Fatal(err)
	}
	msg := filepath.Join(dir, name+".termination-log")
	if err := os.WriteFile(msg, nil, 0o666); err != nil {
		b.Fatal(err)
	}
	c := &pod.Spec.Containers[0]
	ctr, err := podconfig.ContainerConfig(podconfig.ContainerInput{
		Pod:                        pod,
		Container:                  c,
		Type:                       labels.TypeApp,
		Hash:                       plan.ContainerHash(pod, c),
		PodIPs:                     nil,
		Image:                      e.imageID,
		ImageUser:                  e.user,
		TerminationMessageHostPath: msg,
	}, e.opts)
	if err != nil {
		b.Fatal(err)
	}
	delete(sb.Labels, labels.ManagedBy)
	delete(ctr.Labels, labels.ManagedBy)
	return &barePod{e: e, sandbox: sb, container: ctr}
}

func (p *barePod) start(b *testing.B) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), agentBenchTimeout)
	defer cancel()
	id, err := p.e.rt.RunPodSandbox(ctx, p.sandbox, "")
	if err != nil {
		b.Fatal(err)
	}
	p.sandboxID = id
	cid, err := p.e.rt.CreateContainer(ctx, id, p.container, p.sandbox)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.e.rt.StartContainer(ctx, cid); err != nil {
		b.Fatal(err)
	}
}

// remove stops and removes the sandbox with its container and the pod's
// log directory, as the agent does for its pods.
func (p *barePod) remove(b *testing.B) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), agentBenchTimeout)
	defer cancel()
	if err := p.e.rt.StopPodSandbox(ctx, p.sandboxID); err != nil {
		b.Fatal(err)
	}
	if err := p.e.rt.RemovePodSandbox(ctx, p.sandboxID); err != nil {
		b.Fatal(err)
	}
	if dir := p.sandbox.LogDirectory; strings.HasPrefix(dir, p.e.d.LogDir) {
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
	}
	p.e.waitGone(b, p.sandbox.Metadata.Name)
}
