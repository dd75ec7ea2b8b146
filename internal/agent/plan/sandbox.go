package plan

import corev1 "k8s.io/api/core/v1"

// sandboxChange decides whether the pod needs a new sandbox, as the
// kubelet's podSandboxChanged does, with the pod-level hash standing in for
// its network-namespace comparison. It returns the newest sandbox (nil when
// there is none) and, when a new one is needed, why.
func sandboxChange(pod *corev1.Pod, sbs []Sandbox, in Input) (*Sandbox, string) {
	cur := newestSandbox(sbs)
	if cur == nil {
		return nil, "no sandbox"
	}
	ready := 0
	for i := range sbs {
		if sbs[i].State == SandboxReady {
			ready++
		}
	}
	switch {
	case ready > 1:
		return cur, "more than one sandbox is ready"
	case cur.State != SandboxReady:
		return cur, "sandbox is not ready"
	case !sandboxCurrent(cur, in):
		return cur, "pod-level spec changed"
	case !pod.Spec.HostNetwork && cur.IP == "":
		return cur, "sandbox has no IP"
	}
	return cur, ""
}

// sandboxCurrent reports whether s was made from the pod-level spec the pod
// has now, or from one that differs only in resources (a resize, which the
// sandbox survives: its cgroup is resized in place).
func sandboxCurrent(s *Sandbox, in Input) bool {
	if s.Hash == in.SandboxHash {
		return true
	}
	return s.ResizeHash != "" && s.ResizeHash == in.SandboxResizeHash
}
