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
// them by pod UID. Statuses of containers that have exited never change, so
// they are read once and remembered.
func (m *Manager) ListPods(ctx context.Context) (map[string]*PodRuntime, error) {
	return m.list(ctx, map[string]string{labels.ManagedBy: m.cfg.PodConfig.OwnerLabel()}, true)
}

// ObservePod reads what the runtime holds for one pod. A pod the runtime
// knows nothing of comes back empty, not as an error.
func (m *Manager) ObservePod(ctx context.Context, uid string) (*PodRuntime, error) {
	selector := map[string]string{labels.ManagedBy: m.cfg.PodConfig.OwnerLabel(), labels.PodUID: uid}
	pods, err := m.list(ctx, selector, false)
	if err != nil {
		return nil, err
	}
	if p := pods[uid]; p != nil {
		return p, nil
	}
	return &PodRuntime{UID: uid}, nil
}

// list reads the sandboxes and containers that carry selector. forget
// drops remembered statuses of containers not listed, which is only right
// when the selector covers every pod.
func (m *Manager) list(ctx context.Context, selector map[string]string, forget bool) (map[string]*PodRuntime, error) {
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
	seen := map[string]bool{} // IDs of the sandboxes and containers listed
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
		}
		seen[s.Id] = true
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			sb.State = plan.SandboxReady
			ips, err := m.readyIPs(ctx, s.Id)
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
		seen[c.Id] = true
		oc, err := m.container(ctx, c)
		if errdefs.IsNotFound(err) {
			continue // removed between the list and the status
		}
		if err != nil {
			return nil, err
		}
		p := pod(c.Labels)
		p.Observed.Containers = append(p.Observed.Containers, oc)
	}
	if forget {
		m.forgetStatuses(seen)
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

// readyIPs returns a ready sandbox's IPs. A sandbox keeps its IPs for its
// whole life, so they are read once, not on every relist.
func (m *Manager) readyIPs(ctx context.Context, id string) ([]string, error) {
	m.mu.Lock()
	ips, ok := m.ips[id]
	m.mu.Unlock()
	if ok {
		return ips, nil
	}
	st, err := m.sandboxStatus(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil, nil // removed between the list and the status
	}
	if err != nil {
		return nil, err
	}
	_, ips = sandboxIPs(st)
	m.mu.Lock()
	m.ips[id] = ips
	m.mu.Unlock()
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
// status unless an identical one is remembered.
func (m *Manager) container(ctx context.Context, c *runtimeapi.Container) (plan.Container, error) {
	m.mu.Lock()
	cached, ok := m.statuses[c.Id]
	m.mu.Unlock()
	if ok && cached.State == containerState(c.State) {
		return cached, nil
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
		ID:        c.Id,
		Name:      c.Labels[labels.ContainerName],
		Type:      c.Annotations[labels.ContainerType],
		SandboxID: c.PodSandboxId,
		State:     containerState(st.State),
		Hash:      c.Annotations[labels.ContainerHash],
		Attempt:   c.Metadata.Attempt,
		ExitCode:  st.ExitCode,
		Reason:    st.Reason,
		Message:   st.Message,
		Image:     st.GetImage().GetUserSpecifiedImage(),
		ImageRef:  st.ImageRef,
		CreatedAt: time.Unix(0, st.CreatedAt),
	}
	if g, err := strconv.ParseInt(c.Annotations[labels.TerminationGracePeriod], 10, 64); err == nil {
		m.mu.Lock()
		m.grace[c.Id] = g
		m.mu.Unlock()
	}
	if n, err := strconv.ParseUint(c.Annotations[labels.RestartCount], 10, 32); err == nil {
		oc.Attempt = uint32(n)
	}
	if oc.Image == "" {
		oc.Image = st.GetImage().GetImage()
	}
	if st.StartedAt > 0 {
		oc.StartedAt = time.Unix(0, st.StartedAt)
	}
	if st.FinishedAt > 0 {
		oc.FinishedAt = time.Unix(0, st.FinishedAt)
	}
	if oc.State == plan.ContainerExited || oc.State == plan.ContainerRunning {
		m.mu.Lock()
		m.statuses[c.Id] = oc
		m.mu.Unlock()
	}
	return oc, nil
}

// forgetStatuses drops what is remembered of containers and sandboxes the
// runtime no longer lists.
func (m *Manager) forgetStatuses(listed map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.statuses {
		if !listed[id] {
			delete(m.statuses, id)
		}
	}
	for id := range m.grace {
		if !listed[id] {
			delete(m.grace, id)
		}
	}
	for id := range m.ips {
		if !listed[id] {
			delete(m.ips, id)
		}
	}
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
