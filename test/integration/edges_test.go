package integration

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// edgeCall is one CRI call made on container id of pod podID, the i-th
// of its racer, with the codes it may answer.
type edgeCall struct {
	name string
	ok   []codes.Code
	call func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id, podID string, i int) error
}

// edgeCalls are the CRI calls that work on a live container's process, each
// with the codes it may answer while the container stops and goes: the
// call's own success, FailedPrecondition for a container that is no longer
// running, NotFound for one that is gone. Never Unknown or Internal.
var edgeCalls = []edgeCall{
	{"ExecSync", []codes.Code{codes.OK, codes.FailedPrecondition, codes.NotFound},
		func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id, _ string, _ int) error {
			_, err := rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"true"}, Timeout: 30})
			return err
		}},
	// As containerd: an exited container's new resources are recorded.
	{"UpdateContainerResources", []codes.Code{codes.OK, codes.NotFound},
		func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id, _ string, i int) error {
			_, err := rt.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{
				ContainerId: id, Linux: &runtimeapi.LinuxContainerResources{CpuShares: int64(512 + i%2)},
			})
			return err
		}},
	{"ReopenContainerLog", []codes.Code{codes.OK, codes.FailedPrecondition, codes.NotFound},
		func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id, _ string, _ int) error {
			_, err := rt.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
			return err
		}},
	{"ContainerStats", []codes.Code{codes.OK, codes.NotFound},
		func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id, _ string, _ int) error {
			_, err := rt.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
			return err
		}},
	{"Exec", []codes.Code{codes.OK, codes.FailedPrecondition, codes.NotFound},
		func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id, _ string, _ int) error {
			_, err := rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"true"}, Stdout: true})
			return err
		}},
	{"Attach", []codes.Code{codes.OK, codes.FailedPrecondition, codes.NotFound},
		func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id, _ string, _ int) error {
			_, err := rt.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id, Stdout: true})
			return err
		}},
	// On the pod: it races the pod's stop and removal.
	{portForward, []codes.Code{codes.OK, codes.FailedPrecondition, codes.NotFound},
		func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, _, podID string, _ int) error {
			_, err := rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: podID, Port: []int32{80}})
			return err
		}},
}

const portForward = "PortForward"

// edgeTally counts the codes each call answered.
type edgeTally struct {
	mu     sync.Mutex
	counts map[string]map[codes.Code]int
	bad    []string
	// raced are the answers to failures the race itself caused (the
	// runtime's or the monitor's), classified by the container's fate.
	raced []string
}

func (t *edgeTally) add(call string, ok []codes.Code, err error) {
	code := status.Code(err)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts == nil {
		t.counts = map[string]map[codes.Code]int{}
	}
	if t.counts[call] == nil {
		t.counts[call] = map[codes.Code]int{}
	}
	t.counts[call][code]++
	if msg := status.Convert(err).Message(); strings.Contains(msg, "has exited: ") || strings.Contains(msg, "was removed: ") {
		t.raced = append(t.raced, fmt.Sprintf("%s %s: %s", call, code, msg))
	}
	if !slices.Contains(ok, code) && len(t.bad) < 20 {
		t.bad = append(t.bad, fmt.Sprintf("%s: %v", call, err))
	}
}

func (t *edgeTally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	for call, byCode := range t.counts {
		var parts []string
		for code, n := range byCode {
			parts = append(parts, fmt.Sprintf("%s %d", code, n))
		}
		sort.Strings(parts)
		lines = append(lines, call+": "+strings.Join(parts, ", "))
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}

// TestLifeEdgeCodes races the calls on a container's process (ExecSync
// above all, as a kubelet's probes do) from several goroutines against the
// container's stop and removal, its own exit, or its pod's stop and
// removal, and checks that every answer is the call's success or the code
// containerd gives a container that is going away. After the removal each
// call on the container must be NotFound.
func TestLifeEdgeCodes(t *testing.T) {
	e := newEnv(t)
	stop := func(t *testing.T, id string, timeout int64) {
		if _, err := e.rt().StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout}); err != nil {
			t.Errorf("StopContainer: %v", err)
		}
	}
	// killInit has the container's init end itself (its TERM trap exits);
	// the exec'd kill races the exit it causes.
	killInit := func(t *testing.T, id string) {
		_, err := e.rt().ExecSync(e.ctx(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"kill", "1"}, Timeout: 30})
		if c := status.Code(err); c != codes.OK && c != codes.FailedPrecondition {
			t.Errorf("ExecSync kill 1: %v", err)
		}
	}
	rounds := []struct {
		name string
		// end brings the container or its pod to its end; the round then
		// removes the container.
		end func(t *testing.T, id, podID string)
		// podGoes: end removes the pod.
		podGoes bool
	}{
		{name: "stop with SIGKILL", end: func(t *testing.T, id, _ string) { stop(t, id, 0) }},
		{name: "stop with SIGTERM", end: func(t *testing.T, id, _ string) { stop(t, id, 10) }},
		{name: "removed while running", end: func(*testing.T, string, string) {}},
		{name: "exits by itself", end: func(t *testing.T, id, _ string) {
			killInit(t, id)
			e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 20*time.Second)
		}},
		// Stop of a container that exits meanwhile succeeds.
		{name: "stopped as it exits", end: func(t *testing.T, id, _ string) {
			killInit(t, id)
			stop(t, id, 10)
		}},
		{name: "stop and remove at once", end: func(t *testing.T, id, _ string) {
			var wg sync.WaitGroup
			wg.Go(func() { stop(t, id, 0) })
			wg.Go(func() {
				if _, err := e.rt().RemoveContainer(e.ctx(), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
					t.Errorf("RemoveContainer beside StopContainer: %v", err)
				}
			})
			wg.Wait()
		}},
		{name: "pod stopped and removed", podGoes: true, end: func(t *testing.T, _, podID string) {
			if _, err := e.rt().StopPodSandbox(e.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
				t.Errorf("StopPodSandbox: %v", err)
			}
			if _, err := e.rt().RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
				t.Errorf("RemovePodSandbox: %v", err)
			}
		}},
	}
	// As containerd: an exited container's new resources are recorded, and
	// its status shows them.
	t.Run("exited container's update", func(t *testing.T) {
		pod := e.podConfig("edges-exited")
		podID := e.runPod(pod)
		id := e.run(podID, pod, e.ctrConfig("done", "true"))
		e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 20*time.Second)
		_, err := e.rt().UpdateContainerResources(e.ctx(), &runtimeapi.UpdateContainerResourcesRequest{
			ContainerId: id, Linux: &runtimeapi.LinuxContainerResources{CpuShares: 700},
		})
		if err != nil {
			t.Fatalf("UpdateContainerResources of an exited container: %v", err)
		}
		if got := e.status(id).GetResources().GetLinux().GetCpuShares(); got != 700 {
			t.Errorf("exited container's status shows cpu_shares %d after its update to 700", got)
		}
	})
	const (
		racers = 4
		// maxCalls bounds each racer's calls in a round.
		maxCalls = 3000
	)
	for r, round := range rounds {
		t.Run(round.name, func(t *testing.T) {
			pod := e.podConfig(fmt.Sprintf("edges%d", r))
			podID := e.runPod(pod)
			id := e.run(podID, pod, e.ctrConfig("edge", waitTrap(`trap "exit 0" TERM`)...))
			st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)
			waitLog(t, st.LogPath, "ready\n", 10*time.Second)

			var (
				tally   edgeTally
				removed atomic.Bool
				warm    sync.WaitGroup
				racing  sync.WaitGroup
				after   = make([]int, racers)
			)
			warm.Add(racers)
			for g := range racers {
				racing.Go(func() {
					warmed := false
					for i := range maxCalls {
						wasRemoved := removed.Load()
						c := edgeCalls[(g+i)%len(edgeCalls)]
						err := c.call(e.ctx(), e.rt(), id, podID, i)
						tally.add(c.name, c.ok, err)
						if wasRemoved {
							want := codes.NotFound
							if c.name == portForward && !round.podGoes {
								want = codes.OK
							}
							if status.Code(err) != want {
								t.Errorf("%s after RemoveContainer: %v, want %s", c.name, err, want)
							}
							// One round of every call after the removal.
							if after[g]++; after[g] == len(edgeCalls) {
								break
							}
						}
						if !warmed && err == nil && c.name == "ExecSync" {
							warmed = true
							warm.Done()
						}
					}
					if !warmed {
						warm.Done()
					}
				})
			}
			// Each racer has exec'd once in the running container before
			// it is brought to its end.
			warm.Wait()
			round.end(t, id, podID)
			if _, err := e.rt().RemoveContainer(e.ctx(), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
				t.Errorf("RemoveContainer: %v", err)
			}
			removed.Store(true)
			racing.Wait()
			t.Logf("codes: %s", &tally)
			for _, r := range tally.raced {
				t.Logf("raced: %s", r)
			}
			for _, b := range tally.bad {
				t.Errorf("unexpected answer: %s", b)
			}
			for g, n := range after {
				if n < len(edgeCalls) {
					t.Errorf("racer %d made %d calls after the removal before its bound of %d, want %d", g, n, maxCalls, len(edgeCalls))
				}
			}
			if !round.podGoes {
				if _, err := e.rt().StopPodSandbox(e.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
					t.Errorf("StopPodSandbox: %v", err)
				}
				if _, err := e.rt().RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
					t.Errorf("RemovePodSandbox: %v", err)
				}
			}
		})
	}
}
