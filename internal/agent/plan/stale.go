package plan

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
)

// crib's manifest source keeps a pod's UID across edits of its file, where
// the kubelet gives an edited static pod a new UID and so runs it again from
// scratch. To keep "an edit is never ignored" for pods whose containers
// have finished, an instance made from an older version of the pod is
// stale: its container hash differs from the spec's, or it ran in a sandbox
// whose hash differs from Input.SandboxHash. Restart policies look only at
// instances that are not stale; a stale exited instance is started again
// whatever the policy, as the kubelet does for a running one.

// specHash returns ContainerHash (resize: ResizeHash) of the spec
// container typ/name, or "" when the spec has none; hashes are computed
// once per call.
func (p *planner) specHash(typ, name string, resize bool) string {
	key := typ + "/" + name
	if resize {
		key = "resize:" + key
	}
	if h, ok := p.hashes[key]; ok {
		return h
	}
	list := p.pod.Spec.Containers
	if typ == labels.TypeInit {
		list = p.pod.Spec.InitContainers
	}
	h := ""
	for i := range list {
		if list[i].Name != name {
			continue
		}
		if resize {
			h = ResizeHash(p.pod, &list[i])
		} else {
			h = ContainerHash(p.pod, &list[i])
		}
		break
	}
	p.hashes[key] = h
	return h
}

// stale reports whether c was made from another version of the pod; a
// version that differs only in resources (a resize) is the same one. An
// instance whose sandbox the runtime no longer lists is judged by its own
// hash alone.
func (p *planner) stale(c *Container) bool {
	if c.Hash != p.specHash(c.Type, c.Name, false) &&
		(c.ResizeHash == "" || c.ResizeHash != p.specHash(c.Type, c.Name, true)) {
		return true
	}
	for i := range p.obs.Sandboxes {
		if s := &p.obs.Sandboxes[i]; s.ID == c.SandboxID {
			return !sandboxCurrent(s, p.in)
		}
	}
	return false
}

// staleInit returns the first init container whose newest instance in
// sandbox sandboxID (every sandbox when empty) is stale, or nil. Sidecars
// count only when withSidecars is set: in the current sandbox a changed
// sidecar is restarted on its own (sidecarStep), but a finished pod with a
// changed sidecar was still edited since it ran.
func (p *planner) staleInit(sandboxID string, withSidecars bool) *Container {
	for i := range p.pod.Spec.InitContainers {
		c := &p.pod.Spec.InitContainers[i]
		if !withSidecars && isSidecar(c) {
			continue
		}
		if st := newest(p.obs.Containers, labels.TypeInit, c.Name, sandboxID); st != nil && p.stale(st) {
			return st
		}
	}
	return nil
}

// anyStale reports whether the newest instance of any init or app
// container is stale: the pod was edited since it last ran.
func (p *planner) anyStale() bool {
	if p.staleInit("", true) != nil {
		return true
	}
	for _, c := range p.pod.Spec.Containers {
		if st := newest(p.obs.Containers, labels.TypeApp, c.Name, ""); st != nil && p.stale(st) {
			return true
		}
	}
	return false
}

// ranOnce reports whether the restart policy counts st as a run that
// must not be repeated in a new sandbox: Never once it exists, OnFailure
// once it succeeded; never for a stale instance.
func (p *planner) ranOnce(st *Container) bool {
	if st == nil || p.stale(st) {
		return false
	}
	switch p.policy() {
	case corev1.RestartPolicyNever:
		return true
	case corev1.RestartPolicyOnFailure:
		return succeeded(st)
	}
	return false
}
