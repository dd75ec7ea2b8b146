package agenttest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// nriPlugin acts on the pods of the NRI scenario alone: it gives the
// containers of a pod annotated nri.test/adjust an env var holding the
// memory limit it saw, and refuses those of a pod annotated
// nri.test/refuse, as a validator.
type nriPlugin struct{}

func (nriPlugin) CreateContainer(_ context.Context, p *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	if p.GetAnnotations()["nri.test/adjust"] == "" {
		return nil, nil, nil
	}
	a := &api.ContainerAdjustment{}
	a.AddEnv("NRI_SAW_MEMORY", fmt.Sprint(c.GetLinux().GetResources().GetMemory().GetLimit().GetValue()))
	return a, nil, nil
}

func (nriPlugin) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	if why := req.GetPod().GetAnnotations()["nri.test/refuse"]; why != "" {
		return errors.New("the scenario's validator refuses: " + why)
	}
	return nil
}

// testNRI: an NRI plugin on the daemon's socket sees a pod's annotations
// and its container's memory limit, as the agent passed them, and adjusts
// the container (its readiness probe finds the env var it added); a pod
// the plugin's validator refuses shows why in its container's waiting
// reason and message.
func testNRI(t *testing.T, s *suite) {
	if s.env.daemon == nil {
		t.Skip("NRI's socket is known only for a crib daemon this suite started")
	}
	p, err := stub.New(nriPlugin{}, stub.WithSocketPath(s.env.daemon.NRISocket), stub.WithPluginIdx("50"), stub.WithPluginName("scenario"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)

	const limit = 64 << 20
	app := s.env.shell("app", sleepForever)
	app.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(limit, resource.BinarySI)}
	app.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: execAction("sh", "-c", fmt.Sprintf(`test "$NRI_SAW_MEMORY" = %d`, limit))},
		PeriodSeconds: 1,
	}
	adjusted := podSpec("nri-adjusted", app)
	adjusted.Annotations = map[string]string{"nri.test/adjust": "yes"}
	s.h.writePod(t, adjusted)
	s.h.waitFor(t, "nri-adjusted", "ready: the plugin's env var holds the memory limit", longWait, func(p *corev1.Pod) bool {
		return condition(p, corev1.PodReady) == corev1.ConditionTrue
	})

	refused := podSpec("nri-refused", s.env.shell("app", sleepForever))
	refused.Annotations = map[string]string{"nri.test/refuse": "not-on-this-node"}
	s.h.writePod(t, refused)
	s.h.waitFor(t, "nri-refused", "the validator's reason in the waiting container", longWait, func(p *corev1.Pod) bool {
		st := containerStatus(p, "app")
		return st != nil && st.State.Waiting != nil && st.State.Waiting.Reason == "CreateContainerError" &&
			strings.Contains(st.State.Waiting.Message, "not-on-this-node")
	})
	s.h.removePod(t, "nri-adjusted")
	s.h.removePod(t, "nri-refused")
}
