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
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent"
	"github.com/crib-dev/crib/internal/agent/source"
)

// runCmd runs the pods of one manifest file in the foreground: it streams
// their logs, and tears them down when they finish or on the first Ctrl-C.
// A second Ctrl-C leaves at once, pods and all.
func runCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crib run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	flags := addAgentFlags(fs, "127.0.0.1:10255")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: crib run [flags] POD.yaml")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
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

	code := watchRun(a, snap, snapshots, signals, setup.agent.PodConfig.PodLogRoot, stdout, stderr)
	stopAgent()
	<-agentDone
	stopRuntime()
	<-rc.Done
	return code
}

// watchRun follows the pods until they are gone, streaming logs and
// turning signals and finished pods into a teardown. It returns the exit
// code: 0 when every pod succeeded or was stopped, 1 when one failed, 130
// on a second interrupt.
func watchRun(a *agent.Agent, snap source.Snapshot, snapshots chan<- source.Snapshot, signals <-chan os.Signal, logRoot string, stdout, stderr io.Writer) int {
	logs := newLogFollower(logRoot, stdout, stderr, len(snap.Pods) > 1)
	phases := map[string]corev1.PodPhase{}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	tearingDown, failed := false, false
	teardown := func(why string) {
		if tearingDown {
			return
		}
		tearingDown = true
		fmt.Fprintf(stderr, "crib run: %s; removing the pod\n", why)
		snapshots <- source.Snapshot{}
	}
	for {
		select {
		case sig := <-signals:
			if tearingDown {
				fmt.Fprintf(stderr, "crib run: %s again; leaving the pod behind\n", sig)
				return 130
			}
			teardown(sig.String())
		case <-tick.C:
		}
		pods := a.Store().List().Items
		logs.poll(pods)
		finished := len(pods) > 0
		for i := range pods {
			p := &pods[i]
			if phases[p.Name] != p.Status.Phase {
				phases[p.Name] = p.Status.Phase
				fmt.Fprintf(stderr, "crib run: pod %s is %s\n", p.Name, p.Status.Phase)
			}
			switch p.Status.Phase {
			case corev1.PodFailed:
				failed = true
			case corev1.PodSucceeded:
			default:
				finished = false
			}
		}
		if finished {
			teardown("the pod finished")
		}
		if tearingDown && len(pods) == 0 {
			logs.poll(nil)
			if failed {
				return 1
			}
			return 0
		}
	}
}

// runOwner is the owner label of the pods `crib run` makes from a file.
func runOwner(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	sum := sha256.Sum256([]byte(path))
	return "run-" + hex.EncodeToString(sum[:6])
}
