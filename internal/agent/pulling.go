package agent

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/plan"
	"github.com/crib-dev/crib/internal/agent/podstatus"
)

// PullProgress is a runtime that can tell how far a pull of an image got:
// bytes done and total (over every layer), ok false when it knows of no
// such pull. The CRI has no such call; crib's local API has.
type PullProgress interface {
	PullProgress(image string) (done, total int64, ok bool)
}

// pullShowInterval is how often a pod waiting for its image has its
// status's percent refreshed.
const pullShowInterval = time.Second

// watchPull shows, while the pod's worker waits for a pull of a
// container's image, that the container waits in ContainerCreating for it:
// at once, then every pullShowInterval with the pull's percent when the
// runtime tells it. The status is interim: the sync shows the real one
// after the pull, which replaces it as the record's last status. The
// returned function stops the refreshing and returns once it stopped, so
// that no interim status comes after the sync's own.
func (a *Agent) watchPull(pod *corev1.Pod, container, image string) (ended func()) {
	a.showPulling(pod, container, podstatus.PullingMessage(image, 0, 0, false))
	if a.cfg.PullProgress == nil {
		return func() {}
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := a.cfg.Clock.NewTicker(pullShowInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C():
			}
			done, total, ok := a.cfg.PullProgress.PullProgress(image)
			select {
			case <-stop:
				return // the pull ended while the runtime was asked
			default:
			}
			a.showPulling(pod, container, podstatus.PullingMessage(image, done, total, ok))
		}
	}()
	return func() {
		close(stop)
		<-stopped
	}
}

// showPulling shows the pod's status with the container waiting for its
// image, from the pod's last observation.
func (a *Agent) showPulling(pod *corev1.Pod, container, msg string) {
	rec, ok := a.table.snapshot(string(pod.UID))
	if !ok {
		return
	}
	var obs plan.Observed
	if rec.runtime != nil {
		obs = rec.runtime.Observed
	}
	v := a.view(pod, obs)
	v.Waiting = map[string]podstatus.Waiting{container: {Reason: podstatus.ReasonContainerCreating, Message: msg}}
	a.showStatus(rec, pod, obs, statusOf(rec, pod, v), false)
}
