package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/crib-dev/crib/internal/agent"
	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/agent/userns"
	"github.com/crib-dev/crib/internal/config"
)

// DefaultManifestDir is where `crib agent` looks for pods.
const DefaultManifestDir = "/etc/crib/pods"

// agentFlags are the flags `crib agent` and `crib run` share.
type agentFlags struct {
	cfgPath    *string
	overrides  map[string]*string
	endpoint   *string
	agentRoot  *string
	podLogRoot *string
	nodeName   *string
	status     *string
	cgroups    *string
	cgroupRoot *string
}

func addAgentFlags(fs *flag.FlagSet, statusDefault string) agentFlags {
	return agentFlags{
		cfgPath: fs.String("config", config.DefaultPath, "configuration file of the in-process runtime"),
		overrides: map[string]*string{
			"root":      fs.String("root", "", "persistent state directory (default /var/lib/crib)"),
			"state":     fs.String("state", "", "runtime state directory (default /run/crib)"),
			"socket":    fs.String("socket", "", "CRI socket of the in-process runtime (default /run/crib/crib.sock)"),
			"log-level": fs.String("log-level", "", "debug, info, warn or error"),
		},
		endpoint:   fs.String("runtime-endpoint", "", "CRI runtime to drive, e.g. unix:///run/containerd/containerd.sock (default: crib's own, in-process)"),
		agentRoot:  fs.String("agent-root", "", "the agent's own files, such as pod volumes (default <root>/agent)"),
		podLogRoot: fs.String("pod-log-root", "/var/log/pods", "where container logs go"),
		nodeName:   fs.String("node-name", "", "this node's name (default the hostname)"),
		status:     fs.String("status-address", statusDefault, "address of the read-only status API (empty: none)"),
		cgroupRoot: fs.String("cgroup-root", "kubepods", "the cgroup the pod cgroups go under"),
		cgroups:    fs.String("cgroup-driver", "", `pod cgroups per QoS class under /kubepods: "cgroupfs" or "systemd" (default the runtime configuration's), "none" leaves them to the runtime`),
	}
}

// agentSetup is what the flags resolve to.
type agentSetup struct {
	cfg    config.Config
	log    *slog.Logger
	agent  agent.Config
	remote string
}

func (f agentFlags) resolve(fs *flag.FlagSet, stderr io.Writer) (agentSetup, error) {
	cfg, err := loadConfig(fs, *f.cfgPath, f.overrides)
	if err != nil {
		return agentSetup{}, err
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	// The CRI client logs every failed call through klog; the agent
	// reports what matters itself, so klog speaks only when debugging.
	if level > slog.LevelDebug {
		klog.SetLogger(logr.Discard())
	} else {
		klog.SetSlogLogger(log)
	}
	node := *f.nodeName
	if node == "" {
		if node, err = os.Hostname(); err != nil {
			return agentSetup{}, fmt.Errorf("node name: %w", err)
		}
	}
	root := *f.agentRoot
	if root == "" {
		root = filepath.Join(cfg.Root, "agent")
	}
	opts := podconfig.Options{
		PodLogRoot:    *f.podLogRoot,
		ClusterDomain: "cluster.local",
		NodeName:      node,
		HostIPs:       hostIPs(),
	}
	if data, err := os.ReadFile("/etc/resolv.conf"); err == nil {
		opts.HostDNS = podconfig.ParseResolvConf(data)
	}
	opts.NodeMemoryBytes, opts.NodeMilliCPU = nodeCapacity()
	ids, err := nodeUserNamespaces(cfg.Agent.UserNamespaces, "/etc/subuid", "/etc/subgid")
	if err != nil {
		return agentSetup{}, err
	}
	driver := *f.cgroups
	switch driver {
	case "":
		driver = cfg.CgroupDriver
	case "none":
		driver = ""
	case "cgroupfs", "systemd":
	default:
		return agentSetup{}, fmt.Errorf("--cgroup-driver %q: want cgroupfs, systemd or none", driver)
	}
	return agentSetup{
		cfg: cfg,
		log: log,
		agent: agent.Config{
			NodeName:     node,
			Root:         root,
			PodConfig:    opts,
			StatusAddr:   *f.status,
			CgroupDriver: driver,
			CgroupRoot:   *f.cgroupRoot,
			Log:          log,

			UserNamespaces: ids,
		},
		remote: *f.endpoint,
	}, nil
}

// nodeUserNamespaces is the node's range of host ids for pods' user
// namespaces: the configured one, else the kubelet's, from the "kubelet"
// entry of the subuid and subgid files (missing files name none).
func nodeUserNamespaces(configured config.IDRange, subuid, subgid string) (userns.Range, error) {
	if configured != (config.IDRange{}) {
		return userns.Range{First: configured.FirstID, Length: configured.Length}, nil
	}
	read := func(path string) ([]byte, error) {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return data, err
	}
	uids, err := read(subuid)
	if err != nil {
		return userns.Range{}, fmt.Errorf("user namespaces: %w", err)
	}
	gids, err := read(subgid)
	if err != nil {
		return userns.Range{}, fmt.Errorf("user namespaces: %w", err)
	}
	r, err := userns.NodeRange(uids, gids)
	if err != nil {
		return userns.Range{}, fmt.Errorf("user namespaces: %w (or set [agent.user_namespaces] in the configuration)", err)
	}
	return r, nil
}

func agentCmd(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("crib agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	manifests := fs.String("manifests", DefaultManifestDir, "directory of Pod, ConfigMap and Secret manifests")
	flags := addAgentFlags(fs, "127.0.0.1:10255")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	setup, err := flags.resolve(fs, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "crib agent: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	rc, err := connectRuntime(ctx, setup.cfg, setup.remote, setup.log)
	if err != nil {
		fmt.Fprintf(stderr, "crib agent: %v\n", err)
		return 1
	}
	setup.agent.ManifestDir = *manifests
	setup.agent.Runtime, setup.agent.Images = rc.Runtime, rc.Images
	setup.agent.PullProgress = rc.PullProgress
	if err := agent.New(setup.agent).Run(ctx); err != nil {
		setup.log.Error("crib agent stopped", "err", err)
		return 1
	}
	stop()
	<-rc.Done
	if err := rc.Err(); err != nil {
		setup.log.Error("crib runtime stopped", "err", err)
		return 1
	}
	return 0
}
