package agenttest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/testutil"
)

// EndpointEnv names an external CRI endpoint to run the suite against
// instead of a crib daemon of its own.
const EndpointEnv = "CRIB_AGENT_TEST_ENDPOINT"

// criTimeout bounds each CRI call of the clients the tests dial.
const criTimeout = 2 * time.Minute

// runtimeEnv is the CRI runtime the suite runs on and the image its pods
// use.
type runtimeEnv struct {
	endpoint string
	// image is the busybox reference every test pod runs.
	image string
	// daemon is the crib daemon, nil for an external endpoint.
	daemon *testutil.Daemon
	rt     internalapi.RuntimeService
	images internalapi.ImageManagerService
}

// newRuntimeEnv starts a crib daemon with the busybox image, or connects to
// the endpoint EndpointEnv names and pulls busybox there.
func newRuntimeEnv(t *testing.T) *runtimeEnv {
	t.Helper()
	return newRuntimeEnvConfig(t, "")
}

// newRuntimeEnvConfig is newRuntimeEnv with extra, tables added to the crib
// daemon's configuration.
func newRuntimeEnvConfig(t *testing.T, extra string) *runtimeEnv {
	t.Helper()
	testutil.RequiresRoot(t)
	e := &runtimeEnv{}
	if ep := os.Getenv(EndpointEnv); ep != "" {
		if !strings.Contains(ep, "://") {
			ep = "unix://" + ep
		}
		e.endpoint = ep
		e.image = testutil.RegistryBusyboxRef
	} else {
		img := testutil.Busybox(t)
		e.daemon = testutil.StartDaemon(t, testutil.Options{Image: &img, LogLevel: "info", ExtraConfig: extra + "\n" + signaturePolicyConfig(t)})
		e.endpoint = "unix://" + e.daemon.Socket
		e.image = img.Ref
	}
	e.rt, e.images = dial(t, e.endpoint)
	if e.daemon == nil {
		ctx, cancel := context.WithTimeout(context.Background(), criTimeout)
		defer cancel()
		if _, err := e.images.PullImage(ctx, &runtimeapi.ImageSpec{Image: e.image}, nil, nil); err != nil {
			t.Fatalf("pull %s on %s: %v", e.image, e.endpoint, err)
		}
	}
	return e
}

// dial connects CRI clients to endpoint; they are closed at cleanup.
func dial(t testing.TB, endpoint string) (internalapi.RuntimeService, internalapi.ImageManagerService) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(criTimeout).Build(ctx)
	if err != nil {
		t.Fatalf("connect to runtime %s: %v", endpoint, err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	img, err := remote.NewRemoteImageServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(criTimeout).Build(ctx)
	if err != nil {
		t.Fatalf("connect to image service %s: %v", endpoint, err)
	}
	return rt, img
}

// ctx is a context for one CRI call or a short run of them.
func rpcCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), criTimeout)
	t.Cleanup(cancel)
	return ctx
}

// sandboxes are the runtime's sandboxes of the pod with uid.
func (e *runtimeEnv) sandboxes(t testing.TB, uid string) []*runtimeapi.PodSandbox {
	t.Helper()
	items, err := e.rt.ListPodSandbox(rpcCtx(t), &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labels.PodUID: uid}})
	if err != nil {
		t.Fatalf("list sandboxes of %s: %v", uid, err)
	}
	return items
}

// containers are the runtime's containers of the pod with uid; state nil
// means any state.
func (e *runtimeEnv) containers(t testing.TB, uid string, state *runtimeapi.ContainerState) []*runtimeapi.Container {
	t.Helper()
	f := &runtimeapi.ContainerFilter{LabelSelector: map[string]string{labels.PodUID: uid}}
	if state != nil {
		f.State = &runtimeapi.ContainerStateValue{State: *state}
	}
	items, err := e.rt.ListContainers(rpcCtx(t), f)
	if err != nil {
		t.Fatalf("list containers of %s: %v", uid, err)
	}
	return items
}

// managed lists the sandboxes and containers any agent created.
func (e *runtimeEnv) managed(ctx context.Context) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container, error) {
	sel := map[string]string{labels.ManagedBy: labels.ManagedByValue}
	sbs, err := e.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, nil, err
	}
	ctrs, err := e.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	return sbs, ctrs, err
}
