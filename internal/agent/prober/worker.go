package prober

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// worker probes one container with one probe, on the manager's clock, and
// writes the verdict into the container's entry when a threshold is reached.
type worker struct {
	m      *Manager
	e      *containerEntry
	kind   Kind
	probe  *corev1.Probe
	ctx    context.Context
	cancel context.CancelFunc
	// trigger asks for a probe now (readiness right after startup passed).
	trigger chan struct{}

	// Owned by the worker goroutine.
	last Result
	run  int
}

// startWorker starts the goroutine of a new worker; m.mu is held.
func (m *Manager) startWorker(e *containerEntry, k Kind) *worker {
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{m: m, e: e, kind: k, probe: e.probes[k], ctx: ctx, cancel: cancel, trigger: make(chan struct{}, 1)}
	m.wg.Add(1)
	m.live.Add(1)
	go w.loop()
	return w
}

func seconds(v, def int32) time.Duration {
	if v <= 0 {
		v = def
	}
	return time.Duration(v) * time.Second
}

// loop probes at startedAt+initialDelay and then every period (ticks that a
// slow probe overran are skipped, like a ticker's), until the worker is
// stopped or has nothing left to decide.
func (w *worker) loop() {
	defer func() {
		w.m.live.Add(-1)
		w.m.wg.Done()
	}()
	clk := w.m.cfg.Clock
	period := seconds(w.probe.PeriodSeconds, int32(defaultPeriod/time.Second))
	next := w.e.startedAt.Add(time.Duration(w.probe.InitialDelaySeconds) * time.Second)
	if now := clk.Now(); next.Before(now) {
		next = now
	}
	for {
		scheduled, ok := w.wait(next)
		if !ok || !w.probeOnce() {
			return
		}
		if scheduled {
			now := clk.Now()
			for !next.After(now) {
				next = next.Add(period)
			}
		}
	}
}

// wait blocks until next on the manager's clock or a trigger. scheduled is
// false for a trigger; ok is false when the worker was stopped.
func (w *worker) wait(next time.Time) (scheduled, ok bool) {
	d := next.Sub(w.m.cfg.Clock.Now())
	if d <= 0 {
		return true, w.ctx.Err() == nil
	}
	t := w.m.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ctx.Done():
		return false, false
	case <-t.C():
		return true, true
	case <-w.trigger:
		return false, true
	}
}

// probeOnce runs the probe if it may run now and applies the thresholds. It
// returns false when the worker has nothing more to do: it was stopped, its
// startup probe passed, or a liveness or startup probe failed (the container
// is to be replaced, and a new container gets a new worker).
func (w *worker) probeOnce() bool {
	m, e := w.m, w.e
	m.mu.Lock()
	if w.ctx.Err() != nil {
		m.mu.Unlock()
		return false
	}
	if w.kind == Startup && e.results[Startup] == Success {
		m.mu.Unlock()
		return false
	}
	if w.kind != Startup && !startedLocked(e) {
		m.mu.Unlock()
		return true
	}
	t := target{pod: e.pod, container: e.container, containerID: e.id, podIP: e.podIP}
	m.mu.Unlock()

	res, msg := m.handlers.run(w.ctx, w.probe, t)
	if w.ctx.Err() != nil {
		return false
	}
	if m.cfg.OnResult != nil {
		m.cfg.OnResult(w.kind, res)
	}
	if res == w.last {
		w.run++
	} else {
		w.last, w.run = res, 1
	}
	success := int(w.probe.SuccessThreshold)
	if success < 1 || w.kind != Readiness {
		success = 1
	}
	failure := int(w.probe.FailureThreshold)
	if failure < 1 {
		failure = defaultFailureThreshold
	}
	if (res == Failure && w.run < failure) || (res == Success && w.run < success) {
		return true
	}
	w.set(res, msg)
	switch {
	case res == Failure && w.kind != Readiness:
		return false
	case res == Success && w.kind == Startup:
		return false
	}
	return true
}

// set stores a verdict, and on a change logs it and tells OnChange. A worker
// that was stopped meanwhile writes nothing.
func (w *worker) set(res Result, msg string) {
	m, e := w.m, w.e
	m.mu.Lock()
	if w.ctx.Err() != nil || e.workers[w.kind] != w {
		m.mu.Unlock()
		return
	}
	changed := e.results[w.kind] != res
	e.results[w.kind] = res
	e.message[w.kind] = msg
	var readiness *worker
	if w.kind == Startup && res == Success {
		readiness = e.workers[Readiness]
	}
	m.mu.Unlock()
	if !changed {
		return
	}
	m.cfg.Log.Info("probe result changed", "pod", e.podUID, "container", e.name,
		"probe", w.kind.String(), "result", res.String(), "output", truncate(msg, 256))
	if readiness != nil {
		select {
		case readiness.trigger <- struct{}{}:
		default:
		}
	}
	if m.cfg.OnChange != nil {
		m.cfg.OnChange(e.podUID)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
