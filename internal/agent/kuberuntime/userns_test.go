package kuberuntime

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/agent/userns"
)

// handlersRuntime reports its handlers' features in Status, as a runtime
// that knows of user namespaces does.
type handlersRuntime struct {
	internalapi.RuntimeService
	handlers []*runtimeapi.RuntimeHandler
}

func (r handlersRuntime) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{}, RuntimeHandlers: r.handlers}, nil
}

func withUserns(supported bool) func(*Config) {
	return func(c *Config) {
		c.Runtime = handlersRuntime{RuntimeService: c.Runtime, handlers: []*runtimeapi.RuntimeHandler{
			{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: supported}},
		}}
	}
}

// fakeUserns hands out a fixed block and logs each Ensure.
type fakeUserns struct {
	log *callLog
	r   userns.Range
	err error
}

func (f *fakeUserns) Ensure(uid string) (userns.Range, error) {
	f.log.add("UserNamespaces.Ensure:%s", uid)
	return f.r, f.err
}

func noHostUsers(p *corev1.Pod) { p.Spec.HostUsers = ptr(false) }

func TestUserNamespacePod(t *testing.T) {
	var ids *fakeUserns
	e := newEnv(t, withUserns(true), func(c *Config) {
		ids = &fakeUserns{r: userns.Range{First: 5 * userns.BlockSize, Length: userns.BlockSize}}
		c.UserNamespaces = ids
	})
	ids.log = e.log
	pod := testPod(noHostUsers)
	e.mustSync(pod)

	calls := e.log.since(0)
	ensure, run := -1, -1
	for i, c := range calls {
		switch {
		case c == "UserNamespaces.Ensure:uid-1" && ensure < 0:
			ensure = i
		case strings.HasPrefix(c, "RunPodSandbox"):
			run = i
		}
	}
	if ensure < 0 || run < 0 || ensure > run {
		t.Fatalf("the block must be held before the sandbox is made; calls: %v", calls)
	}
	m := []*runtimeapi.IDMapping{{HostId: 5 * userns.BlockSize, ContainerId: 0, Length: userns.BlockSize}}
	want := &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: m, Gids: m}
	e.rt.mu.Lock()
	sb, created := e.rt.sandbox, e.rt.created
	e.rt.mu.Unlock()
	if len(sb) != 1 || len(created) != 1 {
		t.Fatalf("%d sandboxes and %d containers made, want 1 and 1", len(sb), len(created))
	}
	if got := sb[0].GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); !proto.Equal(got, want) {
		t.Errorf("sandbox user namespace = %v, want %v", got, want)
	}
	if got := created[0].GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); !proto.Equal(got, want) {
		t.Errorf("container user namespace = %v, want %v", got, want)
	}
	// Synced again, the pod keeps its sandbox: the block is the same.
	e.mustSync(pod)
	if got := withPrefix(e.log.since(0), "RunPodSandbox"); len(got) != 1 {
		t.Fatalf("RunPodSandbox calls = %v, want one", got)
	}
}

func TestUserNamespaceRefusedBeforeTheSandbox(t *testing.T) {
	tests := []struct {
		name    string
		mutate  []func(*Config)
		ids     *fakeUserns
		wantErr string
	}{
		{name: "handler without user namespaces", mutate: []func(*Config){withUserns(false)},
			ids: &fakeUserns{r: userns.Range{First: userns.BlockSize, Length: userns.BlockSize}}, wantErr: "does not support user namespaces"},
		{name: "runtime that lists no handlers", ids: &fakeUserns{r: userns.Range{First: userns.BlockSize, Length: userns.BlockSize}},
			wantErr: "does not list the runtime's default handler"},
		{name: "no block left", mutate: []func(*Config){withUserns(true)}, ids: &fakeUserns{err: userns.ErrExhausted}, wantErr: "no free user namespace range"},
		{name: "no user namespaces on this agent", mutate: []func(*Config){withUserns(true)}, wantErr: "gives pods no user namespaces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mutate := append(tt.mutate, func(c *Config) {
				if tt.ids != nil {
					c.UserNamespaces = tt.ids
				}
			})
			e := newEnv(t, mutate...)
			if tt.ids != nil {
				tt.ids.log = e.log
			}
			res := e.sync(testPod(noHostUsers))
			if res.Err == nil || !strings.Contains(res.SandboxError, tt.wantErr) {
				t.Fatalf("sandbox error = %q (err %v), want one containing %q", res.SandboxError, res.Err, tt.wantErr)
			}
			if got := withPrefix(e.log.since(0), "RunPodSandbox"); len(got) != 0 {
				t.Fatalf("a sandbox was made: %v", got)
			}
		})
	}
}

func TestHostUsersPodSaysNodeAndKeepsItsHash(t *testing.T) {
	e := newEnv(t)
	pod := testPod()
	e.mustSync(pod)
	e.rt.mu.Lock()
	sb := e.rt.sandbox[0]
	e.rt.mu.Unlock()
	if got := sb.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions().GetMode(); got != runtimeapi.NamespaceMode_NODE {
		t.Fatalf("user namespace mode = %v, want NODE", got)
	}
	if got := withPrefix(e.log.since(0), "UserNamespaces"); len(got) != 0 {
		t.Fatalf("a host users pod asked for a block: %v", got)
	}
	// The hash is the one of the config without user namespace options,
	// which sandboxes made before the agent sent NODE carry.
	old, err := podconfig.SandboxConfig(pod, 0, nil, e.m.cfg.PodConfig)
	if err != nil {
		t.Fatal(err)
	}
	old.Linux.SecurityContext.NamespaceOptions.UsernsOptions = nil
	want, err := hashSandbox(old)
	if err != nil {
		t.Fatal(err)
	}
	if got := sb.Annotations[labels.SandboxHash]; got != want {
		t.Fatalf("sandbox hash = %s, want %s, the hash without user namespace options", got, want)
	}
}
