package kuberuntime

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/plan"
)

// PodRuntime is what the runtime holds for one pod the agent made.
type PodRuntime struct {
	UID       string
	Name      string
	Namespace string
	Observed  plan.Observed
}

// ListPods reads every sandbox and container the agent made and groups
// them by pod UID. last holds the previous observation of each pod, if
// any: what cannot have changed since (see list) is taken from it rather
// than asked of the runtime again.
func (m *Manager) ListPods(ctx context.Context, last map[string]*PodRuntime) (map[string]*PodRuntime, error) {
	return m.list(ctx, map[string]string{labels.ManagedBy: m.cfg.PodConfig.OwnerLabel()}, last)
}

// ObservePod reads what the runtime holds for one pod, taking from last,
// the pod's previous observation (nil for none), what cannot have changed.
// A pod the runtime knows nothing of comes back empty, not as an error.
func (m *Manager) ObservePod(ctx context.Context, uid string, last *PodRuntime) (*PodRuntime, error) {
	selector := map[string]string{labels.ManagedBy: m.cfg.PodConfig.OwnerLabel(), labels.PodUID: uid}
	var known map[string]*PodRuntime
	if last != nil {
		known = map[string]*PodRuntime{uid: last}
	}
	pods, err := m.list(ctx, selector, known)
	if err != nil {
		return nil, err
	}
	if p := pods[uid]; p != nil {
		return p, nil
	}
	return &PodRuntime{UID: uid}, nil
}

// list reads the sandboxes and containers that carry selector. The
// statuses of exited containers never change, those of running ones only
// by exiting, and a ready sandbox keeps its IPs for its whole life: those
// are taken from last, the previous observations by pod UID, when they
// hold them, and read from the runtime otherwise.
func (m *Manager) list(ctx context.Context, selector map[string]string, last map[string]*PodRuntime) (map[string]*PodRuntime, error) {
	sandboxes, err := m.cfg.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", fromGRPC(err))
	}
	containers, err := m.cfg.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", fromGRPC(err))
	}
	pods := map[string]*PodRuntime{}
	pod := func(l map[string]string) *PodRuntime {
		uid := l[labels.PodUID]
		p := pods[uid]
		if p == nil {
			p = &PodRuntime{UID: uid, Name: l[labels.PodName], Namespace: l[labels.PodNamespace]}
			pods[uid] = p
		}
		return p
	}
	for _, s := range sandboxes {
		if s.GetMetadata() == nil || s.Labels[labels.PodUID] == "" {
			continue
		}
		p := pod(s.Labels)
		sb := plan.Sandbox{
			ID:        s.Id,
			Attempt:   s.Metadata.Attempt,
			CreatedAt: time.Unix(0, s.CreatedAt),
			Hash:      s.Annotations[labels.SandboxHash],

			ResizeHash: s.Annotations[labels.SandboxResizeHash],
		}
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			sb.State = plan.SandboxReady
			ips, err := m.readyIPs(ctx, s.Id, last[p.UID])
			if err != nil {
				return nil, err
			}
			if len(ips) > 0 {
				sb.IP, sb.IPs = ips[0], ips
			}
		}
		p.Observed.Sandboxes = append(p.Observed.Sandboxes, sb)
	}
	for _, c := range containers {
		if c.GetMetadata() == nil || c.Labels[labels.PodUID] == "" {
			continue
		}
		oc, err := m.container(ctx, c, last[c.Labels[labels.PodUID]])
		if errdefs.IsNotFound(err) {
			continue // removed between the list and the status
		}
		if err != nil {
			return nil, err
		}
		p := pod(c.Labels)
		p.Observed.Containers = append(p.Observed.Containers, oc)
	}
	for _, p := range pods {
		sortObserved(&p.Observed)
	}
	return pods, nil
}

func sortObserved(o *plan.Observed) {
	sort.SliceStable(o.Sandboxes, func(i, j int) bool { return o.Sandboxes[i].CreatedAt.After(o.Sandboxes[j].CreatedAt) })
	sort.SliceStable(o.Containers, func(i, j int) bool { return o.Containers[i].CreatedAt.After(o.Containers[j].CreatedAt) })
}

func (m *Manager) sandboxStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatus, error) {
	resp, err := m.cfg.Runtime.PodSandboxStatus(ctx, id, false)
	if err != nil {
		return nil, fmt.Errorf("sandbox status %s: %w", id, fromGRPC(err))
	}
	return resp.GetStatus(), nil
}

// readyIPs returns a ready sandbox's IPs: those last read of it, or else
// the runtime's.
func (m *Manager) readyIPs(ctx context.Context, id string, last *PodRuntime) ([]string, error) {
	if last != nil {
		for _, sb := range last.Observed.Sandboxes {
			if sb.ID == id && sb.State == plan.SandboxReady {
				return sb.IPs, nil
			}
		}
	}
	st, err := m.sandboxStatus(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil, nil // removed between the list and the status
	}
	if err != nil {
		return nil, err
	}
	_, ips := sandboxIPs(st)
	return ips, nil
}

func sandboxIPs(st *runtimeapi.PodSandboxStatus) (string, []string) {
	n := st.GetNetwork()
	if n == nil || n.Ip == "" {
		return "", nil
	}
	ips := []string{n.Ip}
	for _, ip := range n.AdditionalIps {
		ips = append(ips, ip.GetIp())
	}
	return n.Ip, ips
}

// container turns a listed container into the plan's view, reading its full
// status unless last holds one that cannot have changed.
func (m *Manager) container(ctx context.Context, c *runtimeapi.Container, last *PodRuntime) (plan.Container, error) {
	if known, ok := unchanged(last, c); ok {
		return known, nil
	}
	resp, err := m.cfg.Runtime.ContainerStatus(ctx, c.Id, false)
	if err != nil {
		return plan.Container{}, fmt.Errorf("container status %s: %w", c.Id, fromGRPC(err))
	}
	st := resp.GetStatus()
	if st == nil {
		return plan.Container{}, fmt.Errorf("container status %s: empty answer: %w", c.Id, errdefs.ErrUnknown)
	}
	oc := plan.Container{
		ID:         c.Id,
		Name:       c.Labels[labels.ContainerName],
		Type:       c.Annotations[labels.ContainerType],
		SandboxID:  c.PodSandboxId,
		State:      containerState(st.State),
		Hash:       c.Annotations[labels.ContainerHash],
		ResizeHash: c.Annotations[labels.ContainerResizeHash],
		Resources:  planResources(st.GetResources().GetLinux()),
		Attempt:    c.Metadata.Attempt,
		ExitCode:   st.ExitCode,
		Reason:     st.Reason,
		Message:    st.Message,
		Image:      st.GetImage().GetUserSpecifiedImage(),
		ImageRef:   st.ImageRef,
		CreatedAt:  time.Unix(0, st.CreatedAt),
	}
	if g, err := strconv.ParseInt(c.Annotations[labels.TerminationGracePeriod], 10, 64); err == nil {
		oc.GracePeriod = &g
	}
	if n, err := strconv.ParseUint(c.Annotations[labels.RestartCount], 10, 32); err == nil {
		oc.Attempt = uint32(n)
	}
	if oc.Image == "" {
		oc.Image = st.GetImage().GetImage()
	}
	if c.Annotations[labels.RuntimeRestored] == "true" {
		oc.RestoredFrom = c.Annotations[labels.RuntimeCheckpointImage]
		if oc.RestoredFrom == "" {
			oc.RestoredFrom = "(unknown)"
		}
	}
	if st.StartedAt > 0 {
		oc.StartedAt = time.Unix(0, st.StartedAt)
	}
	if st.FinishedAt > 0 {
		oc.FinishedAt = time.Unix(0, st.FinishedAt)
	}
	return oc, nil
}

// unchanged returns the container as last observed if that is still what
// it is: an exited container's status never changes, and a running one's
// only by exiting, which the list shows.
func unchanged(last *PodRuntime, c *runtimeapi.Container) (plan.Container, bool) {
	if last == nil {
		return plan.Container{}, false
	}
	for _, known := range last.Observed.Containers {
		if known.ID != c.Id {
			continue
		}
		final := known.State == plan.ContainerExited || known.State == plan.ContainerRunning
		return known, final && known.State == containerState(c.State)
	}
	return plan.Container{}, false
}

func containerState(s runtimeapi.ContainerState) plan.ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return plan.ContainerCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return plan.ContainerRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return plan.ContainerExited
	default:
		return plan.ContainerUnknown
	}
}
