// Command demo drives a running crib over its CRI socket: it runs a pod
// with one busybox container that prints a few lines, shows the
// container's CRI log as it grows, and removes the pod again.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	socket := flag.String("socket", "/run/crib/crib.sock", "crib's CRI socket")
	image := flag.String("image", "docker.io/library/busybox:latest", "image of the container")
	logDir := flag.String("log-dir", "", "pod log directory (default: a temp dir)")
	flag.Parse()
	if err := run(*socket, *image, *logDir); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(socket, image, logDir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)

	if logDir == "" {
		if logDir, err = os.MkdirTemp("", "crib-demo-logs-"); err != nil {
			return err
		}
		defer os.RemoveAll(logDir)
	}
	pod := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "demo", Namespace: "default", Uid: fmt.Sprintf("demo-%d", time.Now().UnixNano())},
		Hostname:     "demo",
		LogDirectory: logDir,
	}
	start := time.Now()
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pod})
	if err != nil {
		return fmt.Errorf("run pod: %w", err)
	}
	defer func() {
		_, _ = rt.StopPodSandbox(context.Background(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.PodSandboxId})
		_, _ = rt.RemovePodSandbox(context.Background(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.PodSandboxId})
		fmt.Println("pod removed")
	}()
	ctr, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  sb.PodSandboxId,
		SandboxConfig: pod,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "hello"},
			Image:    &runtimeapi.ImageSpec{Image: image},
			Command:  []string{"sh", "-c", `for i in 1 2 3 4 5; do echo "hello from $(hostname), line $i"; sleep 0.2; done`},
			LogPath:  "hello/0.log",
		},
	})
	if err != nil {
		return fmt.Errorf("create container: %w", err)
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctr.ContainerId}); err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	fmt.Printf("pod %.12s and container %.12s running %v after RunPodSandbox\n", sb.PodSandboxId, ctr.ContainerId, time.Since(start).Round(time.Millisecond))

	for {
		st, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctr.ContainerId})
		if err != nil {
			return err
		}
		if st.Status.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			fmt.Printf("container exited: code %d (%s)\n", st.Status.ExitCode, st.Status.Reason)
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	log, err := os.ReadFile(filepath.Join(logDir, "hello/0.log"))
	if err != nil {
		return err
	}
	fmt.Printf("--- CRI log %s ---\n%s", filepath.Join(logDir, "hello/0.log"), log)
	return nil
}
