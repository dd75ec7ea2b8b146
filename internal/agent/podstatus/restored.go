package podstatus

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/plan"
)

// Restored names the containers of pod, init containers first, in spec
// order, whose newest instance the runtime restored from a checkpoint.
func Restored(pod *corev1.Pod, obs plan.Observed) []string {
	var out []string
	add := func(specs []corev1.Container, isInit bool) {
		for i := range specs {
			if inst := instances(obs, specs[i].Name, isInit); len(inst) > 0 && inst[0].RestoredFrom != "" {
				out = append(out, specs[i].Name)
			}
		}
	}
	add(pod.Spec.InitContainers, true)
	add(pod.Spec.Containers, false)
	return out
}
