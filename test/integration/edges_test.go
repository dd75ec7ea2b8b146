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

// edgeCalls are the CRI calls that work on a live container's process, each
// with the codes it may answer while the container stops and goes: the
// call's own success, FailedPrecondition for a container that is no longer
// running, NotFound for one that is gone. Never Unknown or Internal.
var edgeCalls = []struct {
	name string
	ok   []codes.Code
	call func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id string, i int) error
}{
	{"ExecSync", []codes.Code{codes.OK, codes.FailedPrecondition, codes.NotFound},
		func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id string, _ int) error {
			_, err := rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"true"}, Timeout: 30})
			return err
		}},
	// As containerd: an exited container's new resources are recorded.
	{"UpdateContainerResources", []codes.Code{codes.OK, codes.NotFound},
		func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id string, i int) error {
			_, err := rt.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{
				ContainerId: id, Linux: &runtimeapi.LinuxContainerResources{CpuShares: int64(512 + i%2)},
			})
			return err
		}},
	{"ReopenContainerLog", []codes.Code{codes.OK, codes.FailedPrecondition, codes.NotFound},
		func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id string, _ int) error {
			_, err := rt.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
			return err
		}},
	{"ContainerStats", []codes.Code{codes.OK, codes.NotFound},
		func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id string, _ int) error {
			_, err := rt.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
			return err
		}},
	{"Exec", []codes.Code{codes.OK, codes.FailedPrecondition, codes.NotFound},
		func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id string, _ int) error {
			_, err := rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"true"}, Stdout: true})
			return err
		}},
	{"Attach", []codes.Code{codes.OK, codes.FailedPrecondition, codes.NotFound},
		func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id string, _ int) error {
			_, err := rt.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id, Stdout: true})
			return err
		}},
}

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
// container's stop and removal, or its own exit, and checks that every
// answer is the call's success or the code containerd gives a container that
// is going away. After the removal each call must be NotFound.
func TestLifeEdgeCodes(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("edges")
	podID := e.runPod(pod)
	stop := func(timeout int64) func(t *testing.T, id string) {
		return func(t *testing.T, id string) {
			if _, err := e.rt().StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout}); err != nil {
				t.Errorf("StopContainer: %v", err)
			}
		}
	}
	rounds := []struct {
		name string
		// end brings the container to its end; the round then removes it.
		end func(t *testing.T, id string)
	}{
		{"stop with SIGKILL", stop(0)},
		{"stop with SIGTERM", stop(10)},
		{"removed while running", func(*testing.T, string) {}},
		{"exits by itself", func(t *testing.T, id string) {
			// The exec'd kill itself races the exit it causes.
			_, err := e.rt().ExecSync(e.ctx(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"kill", "1"}, Timeout: 30})
			if c := status.Code(err); c != codes.OK && c != codes.FailedPrecondition {
				t.Errorf("ExecSync kill 1: %v", err)
			}
			e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 20*time.Second)
		}},
		{"stopped as it exits", func(t *testing.T, id string) {
			// The stop signal races the exit the kill starts: Stop of a
			// container that exits meanwhile succeeds.
			_, err := e.rt().ExecSync(e.ctx(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"kill", "1"}, Timeout: 30})
			if c := status.Code(err); c != codes.OK && c != codes.FailedPrecondition {
				t.Errorf("ExecSync kill 1: %v", err)
			}
			stop(10)(t, id)
		}},
		{"stop and remove at once", func(t *testing.T, id string) {
			var wg sync.WaitGroup
			wg.Go(func() { stop(0)(t, id) })
			wg.Go(func() {
				if _, err := e.rt().RemoveContainer(e.ctx(), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
					t.Errorf("RemoveContainer beside StopContainer: %v", err)
				}
			})
			wg.Wait()
		}},
	}
	const (
		racers = 4
		// maxCalls bounds each racer's calls in a round.
		maxCalls = 3000
	)
	for r, round := range rounds {
		t.Run(round.name, func(t *testing.T) {
			cfg := e.ctrConfig(fmt.Sprintf("edge%d", r), waitTrap(`trap "exit 0" TERM`)...)
			id := e.run(podID, pod, cfg)
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
						err := c.call(e.ctx(), e.rt(), id, i)
						tally.add(c.name, c.ok, err)
						if wasRemoved {
							if status.Code(err) != codes.NotFound {
								t.Errorf("%s after RemoveContainer: %v, want NotFound", c.name, err)
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
			round.end(t, id)
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
		})
	}
}
