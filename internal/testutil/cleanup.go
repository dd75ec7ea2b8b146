package testutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// cleanup tears the daemon down at the end of its test: pods removed over
// the CRI (starting the daemon again if the test left it down), daemon
// stopped, leak check, forced cleanup of whatever leaked, directories
// removed.
func (d *Daemon) cleanup(t testing.TB) {
	if d.started {
		if !d.Running() {
			if err := d.start(); err != nil {
				t.Errorf("cleanup: restart crib daemon to remove pods: %v", err)
			}
		}
		if d.Running() {
			if err := d.RemoveAll(); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
		if err := d.stop(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
	for _, leak := range d.waitNoLeaks() {
		t.Errorf("leak: %s", leak)
	}
	if err := d.forceClean(); err != nil {
		t.Errorf("cleanup: %v", err)
	}
	if d.network != nil {
		if err := d.network.release(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
	if t.Failed() {
		t.Logf("crib daemon log (%s):\n%s", d.Log, d.ReadLog())
	}
	for _, dir := range d.dirs() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
}

// RemoveAll stops and removes every pod the daemon knows, then checks that
// no container is left.
func (d *Daemon) RemoveAll() error {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	pods, err := d.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	var errs []error
	for _, p := range pods.GetItems() {
		if _, err := d.Runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			errs = append(errs, fmt.Errorf("stop pod %s: %w", p.Id, err))
		}
		if _, err := d.Runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			errs = append(errs, fmt.Errorf("remove pod %s: %w", p.Id, err))
		}
	}
	ctrs, err := d.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list containers: %w", err))...)
	}
	for _, c := range ctrs.GetContainers() {
		errs = append(errs, fmt.Errorf("container %s of pod %s survived RemovePodSandbox", c.Id, c.PodSandboxId))
		if _, err := d.Runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.Id}); err != nil {
			errs = append(errs, fmt.Errorf("remove container %s: %w", c.Id, err))
		}
	}
	return errors.Join(errs...)
}
