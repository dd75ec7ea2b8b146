package agent

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/crib-dev/crib/internal/agent/kuberuntime"
	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/source"
)

// loop is the sync loop: it turns manifest snapshots, relists, resyncs and
// housekeeping ticks into syncs of the pods they concern, which the pod
// workers run.
func (a *Agent) loop(ctx context.Context, snapshots <-chan source.Snapshot) error {
	relist := a.cfg.Clock.NewTicker(a.cfg.RelistInterval)
	defer relist.Stop()
	resync := a.cfg.Clock.NewTicker(a.cfg.ResyncInterval)
	defer resync.Stop()
	housekeeping := a.cfg.Clock.NewTicker(a.cfg.HousekeepingInterval)
	defer housekeeping.Stop()

	// Nothing is synced before the first snapshot: a pod the runtime holds
	// is only removed once the agent knows its manifest is gone.
	haveSnapshot := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case snap, ok := <-snapshots:
			if !ok {
				snapshots = nil
				continue
			}
			if haveSnapshot {
				a.apply(snap, true)
				continue
			}
			// The first snapshot syncs nothing by itself: the first relist
			// first records which pods already run (they keep their
			// admission), then syncs every pod, wanted or found.
			haveSnapshot = true
			a.apply(snap, false)
			if !a.relist(ctx, true) {
				for _, uid := range a.table.wantedUIDs() {
					a.workers.Sync(uid)
				}
			}
		case <-relist.C():
			if haveSnapshot {
				a.relist(ctx, false)
			}
		case <-resync.C():
			for _, uid := range a.table.wantedUIDs() {
				a.workers.Sync(uid)
			}
		case <-housekeeping.C():
			if haveSnapshot {
				a.housekeeping(ctx)
			}
		}
	}
}

// relist reads the runtime and syncs every pod whose containers changed
// since the last relist, and every pod the runtime holds that no manifest
// asks for. all syncs every pod found or wanted. It reports whether the
// runtime answered.
func (a *Agent) relist(ctx context.Context, all bool) bool {
	pods, err := a.rt.ListPods(ctx, a.table.lastObserved())
	if err != nil {
		a.log.Warn("relist failed", "err", err)
		return false
	}
	dirty := a.table.relisted(pods, all)
	for _, uid := range dirty {
		// A busy pod syncs once more after its current sync: the change
		// may have come after that sync looked.
		a.workers.Sync(uid)
	}
	return true
}

// housekeeping removes the directories, logs and cgroups of pods that
// neither a manifest nor the runtime knows any more and trims backoff
// records.
func (a *Agent) housekeeping(ctx context.Context) {
	uids, err := a.volumes.Pods()
	if err != nil {
		a.log.Warn("list pod volumes", "err", err)
		return
	}
	for _, uid := range uids {
		if a.table.known(uid) || a.workers.Busy(uid) {
			continue
		}
		// The pod directory outlives the pod's cgroup (made after it,
		// removed before it), so a pod of this agent's that lost its
		// sandbox while the agent was down still has one: clean both.
		// Only pods with a directory here are this agent's: another agent
		// on the node has its own.
		if a.cgroups != nil {
			if err := a.cgroups.RemovePod(uid); err != nil {
				a.log.Warn("remove the cgroup of a gone pod", "uid", uid, "err", err)
				continue
			}
		}
		if err := a.rt.RemovePodLogs(uid); err != nil {
			a.log.Warn("remove the logs of a gone pod", "uid", uid, "err", err)
			continue
		}
		if err := (podDirs{a.volumes, a.userns}).Remove(ctx, uid); err != nil {
			a.log.Warn("remove volumes of a gone pod", "uid", uid, "err", err)
		}
	}
	a.crashBackoff.GC()
	a.pullBackoff.GC()
	if now := a.cfg.Clock.Now(); now.Sub(a.lastUsageCheck) >= usageCheckInterval {
		a.lastUsageCheck = now
		a.checkVolumeUsage()
	}
}

// live reports whether any container of the pod runs or is about to.
func live(p *kuberuntime.PodRuntime) bool {
	for _, c := range p.Observed.Containers {
		if c.State == plan.ContainerRunning || c.State == plan.ContainerCreated {
			return true
		}
	}
	return false
}

// fingerprint sums up what a relist can see change in a pod.
func fingerprint(p *kuberuntime.PodRuntime) string {
	var b strings.Builder
	for _, s := range p.Observed.Sandboxes {
		fmt.Fprintf(&b, "s%s:%d:%s;", s.ID, s.State, s.IP)
	}
	ids := make([]string, 0, len(p.Observed.Containers))
	for _, c := range p.Observed.Containers {
		ids = append(ids, fmt.Sprintf("c%s:%d;", c.ID, c.State))
	}
	sort.Strings(ids)
	b.WriteString(strings.Join(ids, ""))
	return b.String()
}
