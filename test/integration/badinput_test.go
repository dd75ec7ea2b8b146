package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestBadRequests sends requests the daemon must refuse (or, for Stop and
// Remove of unknown objects, accept) and checks the gRPC code, that the
// message names the field or object, and that nothing is left behind.
func TestBadRequests(t *testing.T) {
	e := newEnv(t)
	const unknown = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

	// readyPod runs a pod for a case; the harness removes it afterwards.
	readyPod := func(name string) (string, *runtimeapi.PodSandboxConfig) {
		cfg := e.podConfig(name)
		return e.runPod(cfg), cfg
	}
	createIn := func(ctx context.Context, podID string, pod *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) error {
		_, err := e.rt().CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
		return err
	}

	tests := []struct {
		name string
		call func(ctx context.Context) error
		code codes.Code
		// msg must appear in the error message.
		msg string
	}{
		{"sandbox without metadata", func(ctx context.Context) error {
			cfg := e.podConfig("x")
			cfg.Metadata = nil
			_, err := e.rt().RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
			return err
		}, codes.InvalidArgument, "metadata"},
		{"sandbox without config", func(ctx context.Context) error {
			_, err := e.rt().RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{})
			return err
		}, codes.InvalidArgument, "config"},
		{"sandbox with empty name", func(ctx context.Context) error {
			cfg := e.podConfig("x")
			cfg.Metadata.Name = ""
			_, err := e.rt().RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
			return err
		}, codes.InvalidArgument, "metadata.name"},
		{"sandbox with empty uid", func(ctx context.Context) error {
			cfg := e.podConfig("x")
			cfg.Metadata.Uid = ""
			_, err := e.rt().RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
			return err
		}, codes.InvalidArgument, "metadata.uid"},
		{"sandbox with unknown runtime handler", func(ctx context.Context) error {
			_, err := e.rt().RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: e.podConfig("x"), RuntimeHandler: "nope"})
			return err
		}, codes.InvalidArgument, "runtime_handler"},
		{"duplicate sandbox", func(ctx context.Context) error {
			readyPod("dup")
			_, err := e.rt().RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: e.podConfig("dup")})
			return err
		}, codes.AlreadyExists, "dup"},
		{"status of unknown sandbox", func(ctx context.Context) error {
			_, err := e.rt().PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: unknown})
			return err
		}, codes.NotFound, unknown},
		{"status of unknown container", func(ctx context.Context) error {
			_, err := e.rt().ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: unknown})
			return err
		}, codes.NotFound, unknown},
		{"start of unknown container", func(ctx context.Context) error {
			_, err := e.rt().StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: unknown})
			return err
		}, codes.NotFound, unknown},
		{"stop of unknown sandbox", func(ctx context.Context) error {
			_, err := e.rt().StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: unknown})
			return err
		}, codes.OK, ""},
		{"remove of unknown sandbox", func(ctx context.Context) error {
			_, err := e.rt().RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: unknown})
			return err
		}, codes.OK, ""},
		{"stop of unknown container", func(ctx context.Context) error {
			_, err := e.rt().StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: unknown, Timeout: 1})
			return err
		}, codes.OK, ""},
		{"remove of unknown container", func(ctx context.Context) error {
			_, err := e.rt().RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: unknown})
			return err
		}, codes.OK, ""},
		{"container in unknown sandbox", func(ctx context.Context) error {
			return createIn(ctx, unknown, e.podConfig("x"), e.ctrConfig("c", "true"))
		}, codes.NotFound, unknown},
		{"container without metadata", func(ctx context.Context) error {
			podID, pod := readyPod("nometa")
			cfg := e.ctrConfig("c", "true")
			cfg.Metadata = nil
			return createIn(ctx, podID, pod, cfg)
		}, codes.InvalidArgument, "metadata"},
		{"container with empty name", func(ctx context.Context) error {
			podID, pod := readyPod("noname")
			return createIn(ctx, podID, pod, e.ctrConfig("", "true"))
		}, codes.InvalidArgument, "metadata.name"},
		{"container without image", func(ctx context.Context) error {
			podID, pod := readyPod("noimage")
			cfg := e.ctrConfig("c", "true")
			cfg.Image = nil
			return createIn(ctx, podID, pod, cfg)
		}, codes.InvalidArgument, "image"},
		{"container with an image not in the store", func(ctx context.Context) error {
			podID, pod := readyPod("badimage")
			cfg := e.ctrConfig("c", "true")
			cfg.Image.Image = "example.invalid/none:1"
			return createIn(ctx, podID, pod, cfg)
		}, codes.NotFound, "example.invalid/none:1"},
		{"container in a not-ready sandbox", func(ctx context.Context) error {
			podID, pod := readyPod("stopped")
			if _, err := e.rt().StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
				t.Fatal(err)
			}
			return createIn(ctx, podID, pod, e.ctrConfig("c", "true"))
		}, codes.FailedPrecondition, "ready"},
		{"duplicate container", func(ctx context.Context) error {
			podID, pod := readyPod("dupctr")
			e.create(podID, pod, e.ctrConfig("twin", "true"))
			return createIn(ctx, podID, pod, e.ctrConfig("twin", "true"))
		}, codes.AlreadyExists, "twin"},
		{"mount of a missing host path", func(ctx context.Context) error {
			podID, pod := readyPod("badmount")
			cfg := e.ctrConfig("c", "true")
			cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/no/such/host/path"}}
			return createIn(ctx, podID, pod, cfg)
		}, codes.InvalidArgument, "host_path"},
		{"mount with a relative container path", func(ctx context.Context) error {
			podID, pod := readyPod("relmount")
			cfg := e.ctrConfig("c", "true")
			cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "data", HostPath: "/tmp"}}
			return createIn(ctx, podID, pod, cfg)
		}, codes.InvalidArgument, "container_path"},
		{"log path outside the log directory", func(ctx context.Context) error {
			podID, pod := readyPod("badlog")
			cfg := e.ctrConfig("c", "true")
			cfg.LogPath = "../x.log"
			return createIn(ctx, podID, pod, cfg)
		}, codes.InvalidArgument, "log_path"},
		{"sandbox with an unknown network mode", func(ctx context.Context) error {
			cfg := e.podConfig("x")
			cfg.Linux.SecurityContext.NamespaceOptions.Network = 7
			_, err := e.rt().RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
			return err
		}, codes.InvalidArgument, "config.linux.security_context.namespace_options.network"},
		{"sandbox with a sysctl of the host", func(ctx context.Context) error {
			cfg := e.podConfig("x")
			cfg.Linux.Sysctls = map[string]string{"kernel.panic": "1"}
			_, err := e.rt().RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
			return err
		}, codes.InvalidArgument, `config.linux.sysctls["kernel.panic"]`},
		{"sandbox on the host network with a net sysctl", func(ctx context.Context) error {
			cfg := e.podConfig("x")
			cfg.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
			cfg.Linux.Sysctls = map[string]string{"net.ipv4.ip_forward": "1"}
			_, err := e.rt().RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
			return err
		}, codes.InvalidArgument, `config.linux.sysctls["net.ipv4.ip_forward"]`},
		{"sandbox with 1 MiB of annotations", func(ctx context.Context) error {
			cfg := e.podConfig("x")
			cfg.Annotations = map[string]string{"big": strings.Repeat("x", 1<<20)}
			_, err := e.rt().RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
			return err
		}, codes.InvalidArgument, "config.annotations"},
		{"sandbox over the message bound", func(ctx context.Context) error {
			cfg := e.podConfig("x")
			cfg.Annotations = map[string]string{"big": strings.Repeat("x", 17<<20)}
			_, err := e.rt().RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg}, grpc.MaxCallSendMsgSize(32<<20))
			return err
		}, codes.ResourceExhausted, ""},
		{"sandbox with an unclean log directory", func(ctx context.Context) error {
			cfg := e.podConfig("x")
			cfg.LogDirectory += "/../x"
			_, err := e.rt().RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
			return err
		}, codes.InvalidArgument, "config.log_directory"},
		{"container with an unknown mount propagation", func(ctx context.Context) error {
			podID, pod := readyPod("badprop")
			cfg := e.ctrConfig("c", "true")
			cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/tmp", Propagation: 9}}
			return createIn(ctx, podID, pod, cfg)
		}, codes.InvalidArgument, "config.mounts[0].propagation"},
		{"container logging through a symlink", func(ctx context.Context) error {
			podID, pod := readyPod("symlog")
			cfg := e.ctrConfig("c", "true")
			if err := os.MkdirAll(pod.GetLogDirectory(), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere.log"), filepath.Join(pod.GetLogDirectory(), cfg.GetLogPath())); err != nil {
				t.Fatal(err)
			}
			return createIn(ctx, podID, pod, cfg)
		}, codes.InvalidArgument, "symlink"},
		{"exec with an argument over execve's bound", func(ctx context.Context) error {
			podID, pod := readyPod("bigexec")
			id := e.run(podID, pod, e.ctrConfig("c", "sleep", "3600"))
			_, err := e.rt().ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"echo", strings.Repeat("a", 200<<10)}})
			return err
		}, codes.InvalidArgument, "cmd[1]"},
		{"start of a running container", func(ctx context.Context) error {
			podID, pod := readyPod("twice")
			id := e.run(podID, pod, e.ctrConfig("c", "sleep", "3600"))
			_, err := e.rt().StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
			return err
		}, codes.FailedPrecondition, "running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(e.ctx())
			if got := status.Code(err); got != tt.code {
				t.Errorf("code = %s, want %s (err: %v)", got, tt.code, err)
			} else if tt.msg != "" && !strings.Contains(status.Convert(err).Message(), tt.msg) {
				t.Errorf("message %q does not name %q", status.Convert(err).Message(), tt.msg)
			}
			if err != nil {
				e.checkNoStrayContainer(t)
			}
			if err := e.d.RemoveAll(); err != nil {
				t.Errorf("remove pods: %v", err)
			}
			if leaks := e.d.Leaks(); len(leaks) != 0 {
				t.Errorf("left behind: %v", leaks)
			}
		})
	}
}

// checkNoStrayContainer fails the test if a container's mount, runc
// container, monitor or directory exists that the daemon does not list: a
// refused request leaves nothing behind, even in a pod that stays.
func (e *env) checkNoStrayContainer(t *testing.T) {
	t.Helper()
	resp, err := e.rt().ListContainers(e.ctx(), &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	known := func(leak string) bool {
		for _, c := range resp.Containers {
			// Monitor sockets are named by a prefix of the id.
			if strings.Contains(leak, c.Id[:16]) {
				return true
			}
		}
		return false
	}
	for _, leak := range e.d.Leaks() {
		isContainer := strings.Contains(leak, "/containers/") || strings.HasPrefix(leak, "runc container")
		if isContainer && !known(leak) {
			t.Errorf("refused request left %s", leak)
		}
	}
}
