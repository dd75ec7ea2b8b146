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
