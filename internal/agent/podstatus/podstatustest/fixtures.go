// Package podstatustest builds the pods and runtime views that the status
// model's tests and the status API's tests compute statuses from, so that
// both test what the agent really computes.
package podstatustest

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/plan"
)

// T0 is the time the fixtures are made at.
var T0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// Pod is pod web with the restart policy, init containers and app
// containers named.
func Pod(policy corev1.RestartPolicy, inits []string, apps ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       corev1.PodSpec{RestartPolicy: policy},
	}
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox:" + n})
	}
	for _, n := range apps {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n, Image: "nginx:" + n})
	}
	return p
}

// ReadySandbox is the pod's ready sandbox, sb1.
func ReadySandbox() plan.Sandbox {
	return plan.Sandbox{ID: "sb1", State: plan.SandboxReady, IP: "10.88.0.5", IPs: []string{"10.88.0.5"}, CreatedAt: T0}
}

// Ctr is a runtime container of sb1; attempt orders instances (higher is
// newer).
func Ctr(name, typ string, state plan.ContainerState, attempt uint32, exit int32) plan.Container {
	created := T0.Add(time.Duration(attempt+1) * time.Minute)
	c := plan.Container{
		ID: fmt.Sprintf("%s-%d", name, attempt), Name: name, Type: typ, SandboxID: "sb1",
		State: state, Attempt: attempt, ExitCode: exit, Image: "img-" + name, ImageRef: "sha256:" + name,
		CreatedAt: created,
	}
	if state == plan.ContainerRunning || state == plan.ContainerExited {
		c.StartedAt = created.Add(time.Second)
	}
	if state == plan.ContainerExited {
		c.FinishedAt = created.Add(30 * time.Second)
	}
	return c
}

// App is an app container of sb1.
func App(name string, state plan.ContainerState, attempt uint32, exit int32) plan.Container {
	return Ctr(name, labels.TypeApp, state, attempt, exit)
}

// Init is an init container of sb1.
func Init(name string, state plan.ContainerState, attempt uint32, exit int32) plan.Container {
	return Ctr(name, labels.TypeInit, state, attempt, exit)
}
