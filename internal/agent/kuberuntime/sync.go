package kuberuntime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/containerd/errdefs"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/agent/prober"
	"github.com/crib-dev/crib/internal/agent/userns"
)

// Data is what a pod may draw from besides its own spec: the ConfigMaps and
// Secrets of the manifest directory, keyed "namespace/name".
type Data struct {
	ConfigMaps map[string]*corev1.ConfigMap
	Secrets    map[string]*corev1.Secret
}

// SyncResult tells the caller what a sync did, what it learned and what
// went wrong.
type SyncResult struct {
	Actions plan.Actions
	// SandboxError says why the sandbox could not be made, if it could not.
	SandboxError string
	// Waiting is what the sync learned of why containers wait; the caller
	// keeps it in its record of the pod for the status to show.
	Waiting WaitingChanges
	// Resized names the containers resized in place: what the runtime
	// reports of them changed, so the next observation reads them again
	// (PodRuntime.Forget).
	Resized []string
	// ResizeError says why a resize in place failed, empty when none did.
	ResizeError string
	// Err joins every failure of this sync; the pod is synced again later.
	Err error
}

// SyncPod brings one pod closer to its spec: it computes the plan from obs
// and carries it out. Failures of single steps are recorded as the reasons
// containers wait and joined into the result's Err.
func (m *Manager) SyncPod(ctx context.Context, pod *corev1.Pod, obs plan.Observed, data Data) SyncResult {
	res := SyncResult{Waiting: WaitingChanges{}}
	userNS, err := m.userNamespace(pod)
	var sbConfig *runtimeapi.PodSandboxConfig
	if err == nil {
		sbConfig, err = m.sandboxConfig(pod, 0, userNS)
	}
	if err != nil {
		res.SandboxError = err.Error()
		res.Err = err
		m.cfg.Recorder.Event(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", err.Error())
		return res
	}
	res.Actions = m.planFor(pod, obs, sbConfig)
	m.carryOut(ctx, pod, obs, data, sbConfig, userNS, &res)
	return res
}

// userNamespace is the pod's block of host ids when it has hostUsers:
// false, which it gets before anything of its sandbox is made; nil for
// any other pod.
func (m *Manager) userNamespace(pod *corev1.Pod) (*userns.Range, error) {
	if podconfig.HostUsers(pod) {
		return nil, nil
	}
	if m.cfg.UserNamespaces == nil {
		return nil, fmt.Errorf("hostUsers false: this agent gives pods no user namespaces: %w", errdefs.ErrFailedPrecondition)
	}
	r, err := m.cfg.UserNamespaces.Ensure(string(pod.UID))
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// planFor asks package plan what to do with the pod, given what the runtime
// holds and what the prober found.
func (m *Manager) planFor(pod *corev1.Pod, obs plan.Observed, sbConfig *runtimeapi.PodSandboxConfig) plan.Actions {
	act := plan.ComputeActions(plan.Input{
		Pod:               pod,
		Observed:          obs,
		SandboxHash:       sbConfig.Annotations[labels.SandboxHash],
		SandboxResizeHash: sbConfig.Annotations[labels.SandboxResizeHash],
		Resources:         m.wantedResources(pod),
		LivenessFailed:    m.failedProbes(obs, prober.Liveness),
		StartupFailed:     m.failedProbes(obs, prober.Startup),
		Started:           m.startedProbes(obs),
	})
	m.cfg.Log.Debug("pod plan", "pod", podKey(pod), "reason", act.Reason, "killPod", act.KillPod,
		"createSandbox", act.CreateSandbox, "kill", len(act.ContainersToKill), "sidecars", len(act.SidecarsToStart),
		"resize", len(act.ContainersToResize), "nextInit", act.NextInit, "start", len(act.ContainersToStart))
	return act
}

// carryOut carries res.Actions out in the kubelet's order: kill, volumes,
// resize with the pod cgroup, sandbox, sidecars to restart, next init
// container, app containers. It fills in the rest of res.
func (m *Manager) carryOut(ctx context.Context, pod *corev1.Pod, obs plan.Observed, data Data, sbConfig *runtimeapi.PodSandboxConfig, userNS *userns.Range, res *SyncResult) {
	act := res.Actions
	var errs []error
	if act.KillPod {
		if err := m.killPod(ctx, pod, obs); err != nil {
			res.Err = err
			return
		}
		if !act.CreateSandbox {
			return
		}
	}
	for _, k := range act.ContainersToKill {
		c := findContainer(obs, k.ID)
		if err := m.killContainer(ctx, pod, c, firstIP(sandboxIPsByID(obs, c.SandboxID)), k.Reason); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// A container that would not stop must not get a twin.
		res.Err = errors.Join(errs...)
		return
	}

	volumes, err := m.cfg.Volumes.Prepare(ctx, pod, data.ConfigMaps, data.Secrets)
	if err != nil {
		m.cfg.Recorder.Event(pod, corev1.EventTypeWarning, "FailedMount", err.Error())
		res.SandboxError = err.Error()
		res.Err = fmt.Errorf("prepare volumes: %w", err)
		return
	}

	// A resize in place, in the kubelet's order: containers whose limits
	// shrink, the pod cgroup, containers whose limits grow, and then the
	// runtime is told the pod's new size.
	shrinking, growing := splitResizes(act.ContainersToResize, obs)
	resize := func(rs []plan.Resize) {
		done, err := m.resizeContainers(ctx, pod, rs)
		res.Resized = append(res.Resized, done...)
		if err != nil {
			errs = append(errs, err)
			res.ResizeError = err.Error()
		}
	}
	resize(shrinking)
	// The pod cgroup comes after the pod's directory (made by the volumes),
	// which is how the agent knows the cgroup is its own when it cleans up.
	if m.cfg.Cgroups != nil {
		// Every sync, so that a resized pod's limits follow its spec.
		if _, err := m.cfg.Cgroups.EnsurePod(pod); err != nil {
			if act.CreateSandbox {
				res.SandboxError = err.Error()
				res.Err = fmt.Errorf("pod cgroup: %w", err)
				return
			}
			m.cfg.Log.Warn("update pod cgroup", "pod", podKey(pod), "err", err)
		}
	}

	if len(act.ContainersToResize) > 0 {
		resize(growing)
		m.updateSandboxResources(ctx, pod, act.SandboxID, sbConfig)
	}

	sandboxID, podIPs := act.SandboxID, sandboxIPsByID(obs, act.SandboxID)
	if act.CreateSandbox {
		sbConfig.Metadata.Attempt = act.Attempt
		sandboxID, podIPs, err = m.createSandbox(ctx, pod, sbConfig)
		if err != nil {
			res.SandboxError = err.Error()
			res.Err = err
			return
		}
	}
	start := startEnv{pod: pod, sandboxID: sandboxID, sandboxConfig: sbConfig, userNS: userNS, podIPs: podIPs, volumes: volumes, data: data, obs: obs, waiting: res.Waiting}

	// Sidecars that had their turn come back first, in spec order, as the
	// kubelet starts its init containers; each start fails on its own.
	for _, s := range act.SidecarsToStart {
		if s.Index < 0 || s.Index >= len(pod.Spec.InitContainers) {
			continue
		}
		if err := m.startContainer(ctx, start, &pod.Spec.InitContainers[s.Index], labels.TypeInit, s.RestartCount); err != nil {
			errs = append(errs, err)
		}
	}
	if act.NextInit >= 0 && act.NextInit < len(pod.Spec.InitContainers) {
		c := &pod.Spec.InitContainers[act.NextInit]
		if err := m.startContainer(ctx, start, c, labels.TypeInit, act.NextInitRestartCount); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range act.ContainersToStart {
		if s.Index < 0 || s.Index >= len(pod.Spec.Containers) {
			continue
		}
		if err := m.startContainer(ctx, start, &pod.Spec.Containers[s.Index], labels.TypeApp, s.RestartCount); err != nil {
			errs = append(errs, err)
		}
	}
	res.Err = errors.Join(errs...)
}

// sandboxConfig generates the pod's sandbox config and stamps it with the
// hash of what it holds, so that a later change of any pod-level field is
// seen as a sandbox that must be replaced. userNS is the pod's block of
// host ids with hostUsers: false.
func (m *Manager) sandboxConfig(pod *corev1.Pod, attempt uint32, userNS *userns.Range) (*runtimeapi.PodSandboxConfig, error) {
	cfg, err := podconfig.SandboxConfig(pod, attempt, userNS, m.cfg.PodConfig)
	if err != nil {
		return nil, err
	}
	// The hash covers what the pod asks for, not what the node happens to
	// be: a changed host resolv.conf or address must not replace every
	// sandbox when the agent restarts (the kubelet ignores them too).
	podOnly := m.cfg.PodConfig
	podOnly.HostDNS, podOnly.HostIPs = nil, nil
	podOnly.NodeMemoryBytes, podOnly.NodeMilliCPU = 0, 0
	hashed, err := podconfig.SandboxConfig(pod, 0, userNS, podOnly)
	if err != nil {
		return nil, err
	}
	// Sandboxes made before the agent said NODE for the host's users had
	// no user namespace options, which meant the same: they are kept. A
	// pod's own block is hashed, so a pod that got another one gets a new
	// sandbox with it.
	if ns := hashed.GetLinux().GetSecurityContext().GetNamespaceOptions(); ns.GetUsernsOptions().GetMode() == runtimeapi.NamespaceMode_NODE {
		ns.UsernsOptions = nil
	}
	full, err := hashSandbox(hashed)
	if err != nil {
		return nil, err
	}
	// The resize hash leaves out the resources summed from the
	// containers', which a resize in place changes, but keeps the pod's
	// own (pod-level resources are not resized in place).
	if l := hashed.GetLinux(); l != nil {
		l.Resources = nil
	}
	podLevel, err := json.Marshal(pod.Spec.Resources)
	if err != nil {
		return nil, fmt.Errorf("hash sandbox config: %w", err)
	}
	if hashed.Annotations == nil {
		hashed.Annotations = map[string]string{}
	}
	hashed.Annotations[labels.SandboxResizeHash] = string(podLevel)
	resize, err := hashSandbox(hashed)
	if err != nil {
		return nil, err
	}
	if cfg.Annotations == nil {
		cfg.Annotations = map[string]string{}
	}
	cfg.Annotations[labels.SandboxHash] = full
	cfg.Annotations[labels.SandboxResizeHash] = resize
	return cfg, nil
}

// hashSandbox is the hash stored in labels.SandboxHash (or
// SandboxResizeHash) of a sandbox made from cfg.
func hashSandbox(cfg *runtimeapi.PodSandboxConfig) (string, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("hash sandbox config: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

func (m *Manager) failedProbes(obs plan.Observed, k prober.Kind) map[string]bool {
	if m.cfg.Probes == nil {
		return nil
	}
	out := map[string]bool{}
	for _, c := range obs.Containers {
		if c.State == plan.ContainerRunning && m.cfg.Probes.Result(c.ID, k) == prober.Failure {
			out[c.ID] = true
		}
	}
	return out
}

// startedProbes names the running containers whose startup probe
// succeeded, for plan.Input.Started. A container without a startup probe
// is not named: the plan counts it as started by its spec. Without a
// prober no probe ever succeeds, so a sidecar with a startup probe never
// counts as started.
func (m *Manager) startedProbes(obs plan.Observed) map[string]bool {
	if m.cfg.Probes == nil {
		return nil
	}
	out := map[string]bool{}
	for _, c := range obs.Containers {
		if c.State == plan.ContainerRunning && m.cfg.Probes.Result(c.ID, prober.Startup) == prober.Success {
			out[c.ID] = true
		}
	}
	return out
}

func findContainer(obs plan.Observed, id string) plan.Container {
	for _, c := range obs.Containers {
		if c.ID == id {
			return c
		}
	}
	return plan.Container{ID: id}
}

func sandboxIPsByID(obs plan.Observed, id string) []string {
	for _, s := range obs.Sandboxes {
		if s.ID == id {
			return s.IPs
		}
	}
	return nil
}

func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }
