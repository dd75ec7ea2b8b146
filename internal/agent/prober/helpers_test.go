package prober

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
)

// exitError is what cri-client returns for a command that exited non-zero.
type exitError struct{ code int }

func (e exitError) Error() string   { return fmt.Sprintf("exit status %d", e.code) }
func (e exitError) ExitStatus() int { return e.code }

type execCall struct {
	containerID string
	cmd         string
	timeout     time.Duration
}

// fakeExec records ExecSync calls and answers from a table keyed by the
// command's first word: nil means exit 0, anything else is returned as is.
// A command "block" waits until the context ends.
type fakeExec struct {
	mu      sync.Mutex
	calls   []execCall
	results map[string]error
	output  string
}

func newFakeExec() *fakeExec { return &fakeExec{results: map[string]error{}} }

func (f *fakeExec) set(cmd string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.results[cmd] = err
}

func (f *fakeExec) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	f.mu.Lock()
	f.calls = append(f.calls, execCall{containerID, strings.Join(cmd, " "), timeout})
	err, out := f.results[cmd[0]], f.output
	f.mu.Unlock()
	if cmd[0] == "block" {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	}
	return []byte(out), nil, err
}

// count returns how many calls ran cmd (all calls when cmd is empty).
func (f *fakeExec) count(cmd string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if cmd == "" || c.cmd == cmd {
			n++
		}
	}
	return n
}

func (f *fakeExec) callsFor(containerID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c.containerID == containerID {
			n++
		}
	}
	return n
}

// eventually polls cond for up to five seconds of real time: it waits for
// goroutines to act, it never measures time.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// harness is a manager on a fake clock with a fake runtime.
type harness struct {
	t       *testing.T
	clock   *testingclock.FakeClock
	exec    *fakeExec
	m       *Manager
	mu      sync.Mutex
	changes map[string]int
	results map[Kind]map[Result]int
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, clock: testingclock.NewFakeClock(t0), exec: newFakeExec(),
		changes: map[string]int{}, results: map[Kind]map[Result]int{}}
	h.m = NewManager(Config{
		Exec:  h.exec,
		Clock: h.clock,
		OnChange: func(uid string) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.changes[uid]++
		},
		OnResult: func(k Kind, r Result) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.results[k] == nil {
				h.results[k] = map[Result]int{}
			}
			h.results[k][r]++
		},
	})
	t.Cleanup(func() {
		h.m.Stop()
		if n := h.m.live.Load(); n != 0 {
			t.Errorf("%d workers still running after Stop", n)
		}
	})
	return h
}

func (h *harness) changesOf(uid string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changes[uid]
}

// step advances the fake clock and waits until the probes expected by then
// ran (execs counts every exec so far) and waiters timers are armed again.
func (h *harness) step(d time.Duration, execs, waiters int) {
	h.t.Helper()
	h.clock.Step(d)
	h.settle(execs, waiters)
}

func (h *harness) settle(execs, waiters int) {
	h.t.Helper()
	eventually(h.t, fmt.Sprintf("%d execs and %d waiters", execs, waiters), func() bool {
		return h.exec.count("") == execs && h.clock.Waiters() == waiters
	})
}

func execProbe(cmd string, period, delay, success, failure int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{cmd}}},
		PeriodSeconds:       period,
		InitialDelaySeconds: delay,
		SuccessThreshold:    success,
		FailureThreshold:    failure,
		TimeoutSeconds:      1,
	}
}

func testPod(uid string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID(uid)},
		Spec:       corev1.PodSpec{Containers: containers},
	}
}

func running(id string) Running { return Running{ID: id, StartedAt: t0} }
