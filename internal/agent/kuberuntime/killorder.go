package kuberuntime

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/plan"
)

// killGroups orders the live containers of a pod for killPod, as the
// kubelet terminates a pod with sidecars: first every other container (app,
// ephemeral, a regular init container that still runs, anything the spec
// does not name), then the sidecars one name at a time in reverse spec
// order, so that a sidecar outlives everything that may use it. Containers
// within a group stop in parallel; each group waits for the one before.
//
// Without a pod (its manifest is gone) the spec cannot say which init
// containers are sidecars: every live init container then counts as one,
// and the names go newest instance first, which is reverse spec order
// unless a sidecar was restarted.
func killGroups(pod *corev1.Pod, cs []plan.Container) [][]plan.Container {
	type sidecarGroup struct {
		rank int // spec index, or minus the position of the newest instance
		cs   []plan.Container
	}
	var first []plan.Container
	var sidecars []*sidecarGroup
	byName := map[string]*sidecarGroup{}
	for pos, c := range cs {
		if c.State == plan.ContainerExited {
			continue
		}
		rank, ok := sidecarRank(pod, c, pos)
		if !ok {
			first = append(first, c)
			continue
		}
		g := byName[c.Name]
		if g == nil {
			g = &sidecarGroup{rank: rank}
			byName[c.Name] = g
			sidecars = append(sidecars, g)
		}
		if rank > g.rank {
			g.rank = rank
		}
		g.cs = append(g.cs, c)
	}
	// Highest rank first: the last sidecar in the spec, or the newest.
	slices.SortStableFunc(sidecars, func(a, b *sidecarGroup) int { return b.rank - a.rank })
	var groups [][]plan.Container
	if len(first) > 0 {
		groups = append(groups, first)
	}
	for _, g := range sidecars {
		groups = append(groups, g.cs)
	}
	return groups
}

// sidecarRank reports whether c is a sidecar of pod and its rank in
// killGroups: its spec index; without a pod any init container is one,
// ranked by minus its position pos in the newest-first list.
func sidecarRank(pod *corev1.Pod, c plan.Container, pos int) (int, bool) {
	if c.Type != labels.TypeInit {
		return 0, false
	}
	if pod == nil {
		return -pos, true
	}
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		if ic.Name == c.Name {
			return i, ic.RestartPolicy != nil && *ic.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
	}
	return 0, false
}
