package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent"
	"github.com/crib-dev/crib/internal/agent/source"
)

// runCmd runs the pods of one manifest file in the foreground: it streams
// their logs, and tears them down when they finish or on the first Ctrl-C.
// A second Ctrl-C leaves at once, pods and all. With --wait=ready it
// returns once the pods are ready, leaving them running, unless systemd
// waits for it (NOTIFY_SOCKET): then it stays in the foreground and sends
// READY=1 at that moment, rather than once the pods are handed to the
// agent.
func runCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crib run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	flags := addAgentFlags(fs, "127.0.0.1:10255")
	wait := fs.String("wait", "", `"ready": return 0 once every container of the pod passed its readiness probe (or runs, without one), leaving the pod running; non-zero when the pod fails or --timeout passes first. Under systemd (NOTIFY_SOCKET set) stay in the foreground and send READY=1 only then`)
	timeout := fs.Duration("timeout", DefaultReadyTimeout, "with --wait=ready: how long to wait for the pod to be ready (0: no limit)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: crib run [flags] POD.yaml")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *wait != "" && *wait != "ready" {
		fmt.Fprintf(stderr, "crib run: --wait %q: the only condition is \"ready\"\n", *wait)
		return 2
	}
	// Taken before the runtime starts: runc acts on a NOTIFY_SOCKET it
	// inherits (it waits for the container's own READY=1).
	sd := takeNotifySocket()
	// Signals are caught from the start: one that comes while the runtime
	// starts up still asks for an orderly teardown.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(signals)
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	if *flags.overrides["log-level"] == "" {
		// The containers' output is what a person running a pod wants
		// to read; the agent speaks up for warnings only.
		_ = fs.Set("log-level", "warn")
	}
	setup, err := flags.resolve(fs, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "crib run: %v\n", err)
		return 1
	}
	snap, err := source.LoadFile(fs.Arg(0), source.Options{NodeName: setup.agent.NodeName})
	if err != nil {
		fmt.Fprintf(stderr, "crib run: %v\n", err)
		return 1
	}
	if len(snap.Pods) == 0 {
		fmt.Fprintf(stderr, "crib run: %s holds no pod\n", fs.Arg(0))
		return 1
	}
	// crib run is an agent of its own beside any `crib agent` on the same
	// runtime: its pods carry their own owner label and its files their
	// own directory, so that neither agent takes the other's pods for
	// strays. Named after the file, a second run of it adopts what a
	// killed one left.
	owner := runOwner(fs.Arg(0))
	setup.agent.PodConfig.Owner = owner
	if *flags.agentRoot == "" {
		setup.agent.Root = filepath.Join(setup.cfg.Root, "agent", "runs", owner)
	}

	// The runtime outlives the agent so that teardown can finish.
	runtimeCtx, stopRuntime := context.WithCancel(context.Background())
	defer stopRuntime()
	rc, err := connectRuntime(runtimeCtx, setup.cfg, setup.remote, setup.log)
	if err != nil {
		fmt.Fprintf(stderr, "crib run: %v\n", err)
		return 1
	}
	snapshots := make(chan source.Snapshot, 1)
	snapshots <- snap
	setup.agent.Snapshots = snapshots
	setup.agent.Runtime, setup.agent.Images = rc.Runtime, rc.Images
	setup.agent.PullProgress = rc.PullProgress
	a := agent.New(setup.agent)
	agentCtx, stopAgent := context.WithCancel(context.Background())
	agentDone := make(chan error, 1)
	go func() { agentDone <- a.Run(agentCtx) }()

	var ready *readyWait
	if *wait == "ready" {
		ready = &readyWait{timeout: *timeout, foreground: sd.socket != ""}
		if *timeout > 0 {
			ready.deadline = time.Now().Add(*timeout)
		}
	} else if err := sd.send(daemon.SdNotifyReady); err != nil {
		// Without --wait, the pod is handed to the agent: that is all
		// there is to wait for.
		setup.log.Warn("notify systemd", "err", err)
	}
	w := &runWatch{a: a, snap: snap, snapshots: snapshots, signals: signals, ready: ready, notify: sd.send,
		logs: newLogFollower(setup.agent.PodConfig.PodLogRoot, stdout, stderr, len(snap.Pods) > 1), stderr: stderr}
	code := w.run()
	stopAgent()
	<-agentDone
	stopRuntime()
	<-rc.Done
	return code
}

// runWatch follows the pods of one `crib run` until they are gone, or,
// with --wait=ready and outside systemd, until they are ready.
type runWatch struct {
	a         *agent.Agent
	snap      source.Snapshot
	snapshots chan<- source.Snapshot
	signals   <-chan os.Signal
	// ready, when set, is what --wait=ready waits for; it is cleared once
	// the pods were ready.
	ready  *readyWait
	notify func(state string) error
	logs   *logFollower
	stderr io.Writer

	tearingDown, failed bool
}

// run streams logs and turns signals, finished pods and the readiness
// wait's outcome into a teardown. It returns the exit code: 0 when every
// pod succeeded, was stopped or (--wait=ready) became ready, 1 when one
// failed or never got ready, 130 on a second interrupt.
func (w *runWatch) run() int {
	phases := map[string]corev1.PodPhase{}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case sig := <-w.signals:
			if w.tearingDown {
				fmt.Fprintf(w.stderr, "crib run: %s again; leaving the pod behind\n", sig)
				return 130
			}
			w.teardown(sig.String())
		case <-tick.C:
		}
		pods := w.a.Store().List().Items
		w.logs.poll(pods)
		finished := len(pods) > 0
		for i := range pods {
			p := &pods[i]
			if phases[p.Name] != p.Status.Phase {
				phases[p.Name] = p.Status.Phase
				fmt.Fprintf(w.stderr, "crib run: pod %s is %s\n", p.Name, p.Status.Phase)
			}
			switch p.Status.Phase {
			case corev1.PodFailed:
				w.failed = true
			case corev1.PodSucceeded:
			default:
				finished = false
			}
		}
		if w.ready != nil && !w.tearingDown {
			if done, code := w.checkReady(pods); done {
				return code
			}
		}
		if finished {
			w.teardown("the pod finished")
		}
		if w.tearingDown && len(pods) == 0 {
			w.logs.poll(nil)
			if w.failed {
				return 1
			}
			return 0
		}
	}
}

// checkReady moves the readiness wait on: it tears the pods down when they
// failed or the deadline passed, and once they are ready tells systemd,
// or, outside systemd, ends the run (done) leaving them running.
func (w *runWatch) checkReady(pods []corev1.Pod) (done bool, code int) {
	ready, notReady, failure := podsReady(w.snap.Pods, pods)
	switch {
	case failure != "":
		w.failed = true
		w.teardown(failure + " before the pod was ready")
	case ready:
		fmt.Fprintf(w.stderr, "crib run: %s ready\n", podNames(w.snap.Pods))
		foreground := w.ready.foreground
		w.ready = nil
		if !foreground {
			fmt.Fprintln(w.stderr, "crib run: leaving the pod running; run the same file again to follow it")
			return true, 0
		}
		if err := w.notify(daemon.SdNotifyReady); err != nil {
			fmt.Fprintf(w.stderr, "crib run: notify systemd: %v\n", err)
		}
	case !w.ready.deadline.IsZero() && time.Now().After(w.ready.deadline):
		w.failed = true
		w.teardown(fmt.Sprintf("not ready after %s: %s", w.ready.timeout, notReady))
	}
	return false, 0
}

// teardown asks the agent to remove the pods, once.
func (w *runWatch) teardown(why string) {
	if w.tearingDown {
		return
	}
	w.tearingDown = true
	fmt.Fprintf(w.stderr, "crib run: %s; removing the pod\n", why)
	if err := w.notify(daemon.SdNotifyStopping); err != nil {
		fmt.Fprintf(w.stderr, "crib run: notify systemd: %v\n", err)
	}
	w.snapshots <- source.Snapshot{}
}

// podNames names pods for a message: "pod web is", "pods web, db are".
func podNames(pods []*corev1.Pod) string {
	if len(pods) == 1 {
		return "pod " + pods[0].Name + " is"
	}
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	return "pods " + strings.Join(names, ", ") + " are"
}

// runOwner is the owner label of the pods `crib run` makes from a file.
func runOwner(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	sum := sha256.Sum256([]byte(path))
	return "run-" + hex.EncodeToString(sum[:6])
}
