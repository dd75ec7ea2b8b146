package statusapi

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/plan"
)

// The pods and runtime views the tables are tested on, built as
// podstatus's own tests build them, so that the tables print statuses the
// agent really computes.

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

const (
	always  = corev1.RestartPolicyAlways
	never   = corev1.RestartPolicyNever
	running = plan.ContainerRunning
	exited  = plan.ContainerExited
)

func testPod(policy corev1.RestartPolicy, inits []string, apps ...string) *corev1.Pod {
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

func readySandbox() plan.Sandbox {
	return plan.Sandbox{ID: "sb1", State: plan.SandboxReady, IP: "10.88.0.5", IPs: []string{"10.88.0.5"}, CreatedAt: t0}
}

// ctr makes a runtime container; age orders instances (higher is newer).
func ctr(name, typ string, state plan.ContainerState, attempt uint32, exit int32) plan.Container {
	created := t0.Add(time.Duration(attempt+1) * time.Minute)
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

func app(name string, state plan.ContainerState, attempt uint32, exit int32) plan.Container {
	return ctr(name, labels.TypeApp, state, attempt, exit)
}

func initC(name string, state plan.ContainerState, attempt uint32, exit int32) plan.Container {
	return ctr(name, labels.TypeInit, state, attempt, exit)
}
