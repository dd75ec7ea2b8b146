// Command marker is a pre-installed NRI plugin for crib's tests: the
// runtime starts it from its plugin_path, and it gives every container
// the env var NRI_PREINSTALLED=<its configuration, or "yes">.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
)

type marker struct{ value string }

func (m *marker) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	if v := strings.TrimSpace(config); v != "" {
		m.value = v
	}
	return api.MustParseEventMask("CreateContainer"), nil
}

func (m *marker) CreateContainer(_ context.Context, _ *api.PodSandbox, _ *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	a := &api.ContainerAdjustment{}
	a.AddEnv("NRI_PREINSTALLED", m.value)
	return a, nil, nil
}

func main() {
	s, err := stub.New(&marker{value: "yes"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := s.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
