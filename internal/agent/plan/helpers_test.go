package plan

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
)

// Test vocabulary: pods are built with newPod and options, the runtime's
// view with sandbox and container constructors, and the expected plan with
// want and its options. The current sandbox is "sb1" unless a case says
// otherwise.

const (
	wantHash = "sandbox-hash"
	curSB    = "sb1"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

// newPod returns a pod with restart policy rp and one app container "app",
// changed by opts.
func newPod(rp corev1.RestartPolicy, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: corev1.PodSpec{
			RestartPolicy: rp,
			Containers:    []corev1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "inf"}}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// withInit gives the pod init containers of these names.
func withInit(names ...string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.InitContainers = nil
		for _, n := range names {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox:1.36", Command: []string{"true"}})
		}
	}
}

// withApps replaces the app containers by containers of these names.
func withApps(names ...string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers = nil
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n, Image: "busybox:1.36", Command: []string{"sleep", "inf"}})
		}
	}
}

func hostNetwork(p *corev1.Pod) { p.Spec.HostNetwork = true }

// readySB is a ready sandbox with an IP and the wanted hash; attempt n is
// created n minutes after t0.
func readySB(id string, attempt uint32) Sandbox {
	return Sandbox{
		ID: id, Attempt: attempt, State: SandboxReady, IP: "10.88.0.2", IPs: []string{"10.88.0.2"},
		CreatedAt: t0.Add(time.Duration(attempt) * time.Minute), Hash: wantHash,
	}
}

func notReadySB(id string, attempt uint32) Sandbox {
	s := readySB(id, attempt)
	s.State = SandboxNotReady
	return s
}

// inst is an instance of the pod's container typ/name in the current
// sandbox with the spec's hash, created (state Created) attempt seconds
// after t0.
func inst(p *corev1.Pod, typ, name string, attempt uint32) Container {
	var spec *corev1.Container
	list := p.Spec.Containers
	if typ == labels.TypeInit {
		list = p.Spec.InitContainers
	}
	for i := range list {
		if list[i].Name == name {
			spec = &list[i]
		}
	}
	hash := "no-spec"
	if spec != nil {
		hash = ContainerHash(p, spec)
	}
	return Container{
		ID: fmt.Sprintf("%s-%s-%d", typ, name, attempt), Name: name, Type: typ, SandboxID: curSB,
		State: ContainerCreated, Hash: hash, Attempt: attempt,
		CreatedAt: t0.Add(time.Duration(attempt) * time.Second),
	}
}

func app(p *corev1.Pod, name string, attempt uint32) Container {
	return inst(p, labels.TypeApp, name, attempt)
}

func initC(p *corev1.Pod, name string, attempt uint32) Container {
	return inst(p, labels.TypeInit, name, attempt)
}

func running(c Container) Container { c.State = ContainerRunning; return c }
func created(c Container) Container { c.State = ContainerCreated; return c }
func unknown(c Container) Container { c.State = ContainerUnknown; return c }

func exited(code int32, c Container) Container {
	c.State = ContainerExited
	c.ExitCode = code
	c.Reason = "Completed"
	if code != 0 {
		c.Reason = "Error"
	}
	return c
}

func inSandbox(sb string, c Container) Container { c.SandboxID = sb; return c }
func withHash(h string, c Container) Container   { c.Hash = h; return c }

// obs is the runtime's view: the current ready sandbox and cs.
func obs(cs ...Container) Observed {
	return Observed{Sandboxes: []Sandbox{readySB(curSB, 1)}, Containers: cs}
}

type wantOpt func(*Actions)

// want builds the expected plan: by default, nothing to do in sandbox sb1.
func want(opts ...wantOpt) Actions {
	a := Actions{SandboxID: curSB, NextInit: -1}
	for _, o := range opts {
		o(&a)
	}
	return a
}

// nothing is the plan of a healthy pod.
var nothing = want()

func start(idx int, rc uint32) wantOpt {
	return func(a *Actions) {
		a.ContainersToStart = append(a.ContainersToStart, Start{Index: idx, RestartCount: rc})
	}
}

func kill(c Container, reason string) wantOpt {
	return func(a *Actions) {
		a.ContainersToKill = append(a.ContainersToKill, Kill{ID: c.ID, Name: c.Name, Reason: reason})
	}
}

func nextInit(idx int, rc uint32) wantOpt {
	return func(a *Actions) { a.NextInit = idx; a.NextInitRestartCount = rc }
}

// killPod: the pod is done, everything stops, nothing starts.
func killPod(a *Actions) { a.KillPod = true }

func initFailedPod(a *Actions) { a.KillPod = true; a.InitFailed = true }

// newSandbox: stop what is there (when kill), create sandbox attempt n.
func newSandbox(attempt uint32, kill bool) wantOpt {
	return func(a *Actions) {
		a.SandboxID = ""
		a.CreateSandbox = true
		a.Attempt = attempt
		a.KillPod = kill
	}
}

// noSandbox: a plan outside any sandbox (the pod's sandboxes are not ready).
func noSandbox(a *Actions) { a.SandboxID = "" }

// withSidecars turns the named init containers into sidecars
// (restartPolicy Always).
func withSidecars(names ...string) podOpt {
	return func(p *corev1.Pod) {
		always := corev1.ContainerRestartPolicyAlways
		for i := range p.Spec.InitContainers {
			for _, n := range names {
				if p.Spec.InitContainers[i].Name == n {
					p.Spec.InitContainers[i].RestartPolicy = &always
					p.Spec.InitContainers[i].Command = []string{"sleep", "inf"}
				}
			}
		}
	}
}

// withStartupProbe gives init container name a startup probe.
func withStartupProbe(name string) podOpt {
	return func(p *corev1.Pod) {
		for i := range p.Spec.InitContainers {
			if p.Spec.InitContainers[i].Name == name {
				p.Spec.InitContainers[i].StartupProbe = &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
				}
			}
		}
	}
}

// sidecar expects sidecar idx (in Spec.InitContainers) to start again with
// restart count rc.
func sidecar(idx int, rc uint32) wantOpt {
	return func(a *Actions) {
		a.SidecarsToStart = append(a.SidecarsToStart, Start{Index: idx, RestartCount: rc})
	}
}
