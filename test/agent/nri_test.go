package agenttest

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/crib-dev/crib/internal/agent/statusapi"
	"github.com/crib-dev/crib/internal/testutil"
)

// nriPlugin acts on the pods of the NRI scenario alone: it gives the
// containers of a pod annotated nri.test/adjust an env var holding the
// memory limit it saw, asks for the block I/O class a pod annotated
// nri.test/blockio-class names (one the node has no configuration for),
// and refuses the containers of a pod annotated nri.test/refuse, as a
// validator.
type nriPlugin struct{}

func (nriPlugin) CreateContainer(_ context.Context, p *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	a := &api.ContainerAdjustment{}
	switch ann := p.GetAnnotations(); {
	case ann["nri.test/adjust"] != "":
		a.AddEnv("NRI_SAW_MEMORY", fmt.Sprint(c.GetLinux().GetResources().GetMemory().GetLimit().GetValue()))
	case ann["nri.test/blockio-class"] != "":
		a.SetLinuxBlockIOClass(ann["nri.test/blockio-class"])
	default:
		return nil, nil, nil
	}
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
// the container (its readiness probe finds the env var it added). A pod
// the plugin's validator refuses, and one whose adjustment asks for what
// the node cannot do (a block I/O class it has no configuration for), show
// why: in their container's waiting reason and message, in a Failed event
// with the plugin's reason, and through `crib pods` and `crib events`.
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

	unsupported := podSpec("nri-unsupported", s.env.shell("app", sleepForever))
	unsupported.Annotations = map[string]string{"nri.test/blockio-class": "gold"}
	s.h.writePod(t, unsupported)
	s.h.waitFor(t, "nri-unsupported", "the missing class configuration in the waiting container", longWait, func(p *corev1.Pod) bool {
		st := containerStatus(p, "app")
		return st != nil && st.State.Waiting != nil && st.State.Waiting.Reason == "CreateContainerError" &&
			strings.Contains(st.State.Waiting.Message, `block I/O class "gold": no blockio_config_file is configured`)
	})

	// Why, in the events and crib's tables of them.
	why := map[string]string{"nri-refused": "not-on-this-node", "nri-unsupported": "no blockio_config_file is configured"}
	for pod, reason := range why {
		found := false
		for _, ev := range s.h.Agent().Events().List().Items {
			found = found || ev.InvolvedObject.Name == pod && ev.Type == corev1.EventTypeWarning && ev.Reason == "Failed" &&
				strings.Contains(ev.Message, "create container") && strings.Contains(ev.Message, reason)
		}
		if !found {
			t.Errorf("no Warning Failed event of %s with the reason %q", pod, reason)
		}
	}
	srv := httptest.NewServer(statusapi.Handler(s.h.Store(), s.h.Agent().Events(), statusapi.NewMetrics()))
	t.Cleanup(srv.Close)
	crib := testutil.BuildCrib(t)
	cli := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(crib, append([]string{args[0], "--status-address", strings.TrimPrefix(srv.URL, "http://")}, args[1:]...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("crib %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	pods := cli("pods")
	for pod := range why {
		if !slices.ContainsFunc(strings.Split(pods, "\n"), func(l string) bool {
			return strings.Contains(l, " "+pod+" ") && strings.Contains(l, "CreateContainerError")
		}) {
			t.Errorf("crib pods does not show %s in CreateContainerError:\n%s", pod, pods)
		}
	}
	for pod, reason := range why {
		if out := cli("events", pod); !strings.Contains(out, "Failed") || !strings.Contains(out, reason) || !strings.Contains(out, "pod/"+pod) {
			t.Errorf("crib events %s lacks the Failed event with %q:\n%s", pod, reason, out)
		}
	}
	s.h.removePod(t, "nri-adjusted")
	s.h.removePod(t, "nri-refused")
	s.h.removePod(t, "nri-unsupported")
}
