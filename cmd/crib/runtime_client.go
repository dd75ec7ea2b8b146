package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	internalapi "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"

	"github.com/crib-dev/crib/internal/config"
)

// dialRuntime connects to the CRI runtime at endpoint, or, when it is
// empty, at the socket of the crib configuration cfgPath names (with the
// command line's overrides).
func dialRuntime(ctx context.Context, fs *flag.FlagSet, endpoint, cfgPath string, overrides map[string]*string) (internalapi.RuntimeService, string, error) {
	if endpoint == "" {
		cfg, err := loadConfig(fs, cfgPath, overrides)
		if err != nil {
			return nil, "", err
		}
		endpoint = cfg.Socket
	}
	if !strings.Contains(endpoint, "://") {
		endpoint = "unix://" + endpoint
	}
	// The CRI client logs failed calls through klog; the commands report
	// them themselves.
	klog.SetLogger(logr.Discard())
	rt, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(30 * time.Second).Build(ctx)
	if err != nil {
		return nil, endpoint, fmt.Errorf("connect to runtime %s: %w", endpoint, err)
	}
	return rt, endpoint, nil
}

// podTarget names a container of an agent's pod, and where to find the
// agent's status API and the CRI runtime that runs it: what `crib exec`
// and `crib checkpoint` share.
type podTarget struct {
	namespace, pod, container string
	statusAddr                string
	endpoint                  string
	cfgPath                   string
	overrides                 map[string]*string
}

// addFlags registers the target's flags (all but POD, an argument) on fs.
func (t *podTarget) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&t.container, "c", "", "container name (default: the annotated default container, else the only one)")
	fs.StringVar(&t.namespace, "n", "default", "the pod's namespace")
	fs.StringVar(&t.statusAddr, "status-address", "127.0.0.1:10255", "address of the agent's status API")
	fs.StringVar(&t.endpoint, "runtime-endpoint", "", "CRI runtime socket (default: the socket of the crib configuration)")
	fs.StringVar(&t.cfgPath, "config", config.DefaultPath, "crib configuration file, for its socket")
	t.overrides = map[string]*string{
		"state":  fs.String("state", "", "crib's runtime state directory, for its socket (default /run/crib)"),
		"socket": fs.String("socket", "", "crib's CRI socket (default /run/crib/crib.sock)"),
	}
}
