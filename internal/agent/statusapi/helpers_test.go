package statusapi

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/podstatus/podstatustest"
)

// The pods and runtime views the tables are tested on, podstatus's own
// tests' fixtures, so that the tables print statuses the agent really
// computes.
var (
	t0           = podstatustest.T0
	testPod      = podstatustest.Pod
	readySandbox = podstatustest.ReadySandbox
	app          = podstatustest.App
	initC        = podstatustest.Init
)

const (
	always  = corev1.RestartPolicyAlways
	never   = corev1.RestartPolicyNever
	running = plan.ContainerRunning
	exited  = plan.ContainerExited
)
