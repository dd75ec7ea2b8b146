package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/failpoint"
	"github.com/crib-dev/crib/internal/ids"
	"github.com/crib-dev/crib/internal/lifecycle"
	"github.com/crib-dev/crib/internal/mount"
	"github.com/crib-dev/crib/internal/netns"
	"github.com/crib-dev/crib/internal/pause"
	"github.com/crib-dev/crib/internal/undo"
)

// Run creates a ready pod sandbox for cfg and returns its id. A kubelet
// retry of a Run that timed out gets the first attempt's sandbox.
func (m *Manager) Run(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	userns, err := validate(cfg)
	if err != nil {
		return "", err
	}
	if err := m.userNamespaceSupport(userns, handler); err != nil {
		return "", err
	}
	id := ids.New()
	return m.names.Create(ctx, nameKey(cfg.GetMetadata()), id, func(ctx context.Context) error {
		return m.create(ctx, id, cfg, handler, userns)
	})
}

// create makes the sandbox; userns is the mapping of its own user
// namespace, nil for the host's users.
func (m *Manager) create(ctx context.Context, id string, cfg *runtimeapi.PodSandboxConfig, handler string, userns *netns.UserNS) (err error) {
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	hostNet := ns.GetNetwork() == runtimeapi.NamespaceMode_NODE
	hostIPC := ns.GetIpc() == runtimeapi.NamespaceMode_NODE
	s := &Sandbox{
		ID:             id,
		Config:         cfg,
		RuntimeHandler: handler,
		State:          Creating,
		CreatedAt:      time.Now(),
		Dir:            filepath.Join(m.cfg.StateDir, id),
	}
	if s.CgroupParent, s.OwnCgroup, err = m.podCgroup(cfg.GetLinux().GetCgroupParent(), id); err != nil {
		return err
	}

	if !hostNet && userns == nil && m.cfg.NetNSSpares != nil {
		// The spare this pod may take is replaced once the pod is made or
		// its making undone, not alongside its CNI ADD or DEL: making a
		// network namespace takes kernel locks the plugins want too.
		// Deferred before the rollback, so that it runs after it.
		defer m.cfg.NetNSSpares.Warm()
	}
	m.cfg.Tracer.BeginPod(id)
	var rollback undo.Stack
	defer func() {
		if err != nil {
			m.cfg.Tracer.EndPod(id, err)
			rollback.Run(ctx, m.log)
		}
	}()
	if !hostNet {
		// Where the namespace will be pinned, in the intent already: a
		// restart that rolls this creation back must find it to have the
		// CNI plugins release what they may have given the pod.
		s.NetNS = filepath.Join(s.Dir, "ns", string(netns.Net))
	}
	// The intent goes to disk first: a restart that finds it rolls back
	// whatever of the rest had been made.
	if err := m.save(s); err != nil {
		return err
	}
	rollback.Push("sandbox", func(ctx context.Context) error {
		// The record goes only with the rest: if something cannot be
		// undone now, the next start finds the record and tries again.
		if err := m.teardown(ctx, s); err != nil {
			return err
		}
		return m.db.Delete(recordKind, id)
	})
	if err := failpoint.Check("RunPodSandbox/intent"); err != nil {
		return err
	}

	if err := m.makeCgroup(ctx, s); err != nil {
		return err
	}
	if err := failpoint.Check("RunPodSandbox/cgroup"); err != nil {
		return err
	}
	if err := os.MkdirAll(s.Dir, 0o711); err != nil {
		return fmt.Errorf("create sandbox dir: %w", err)
	}
	hostname := cfg.GetHostname()
	if hostNet {
		if hostname, err = os.Hostname(); err != nil {
			return fmt.Errorf("read host name: %w", err)
		}
	}
	if err := m.writeFiles(s, hostNet, hostname, userns); err != nil {
		return err
	}
	if err := failpoint.Check("RunPodSandbox/files"); err != nil {
		return err
	}

	var kinds []netns.Kind
	if !hostNet {
		kinds = append(kinds, netns.Net, netns.UTS)
	}
	if !hostIPC {
		kinds = append(kinds, netns.IPC)
	}
	var pinned map[netns.Kind]string
	err = m.timed(id, phaseNamespaces, func() (err error) {
		pinned, err = m.pinNamespaces(s, kinds, hostname, userns)
		return err
	})
	if err != nil {
		return err
	}
	s.NetNS, s.IPCNS, s.UTSNS, s.UserNS = pinned[netns.Net], pinned[netns.IPC], pinned[netns.UTS], pinned[netns.User]
	if err := failpoint.Check("RunPodSandbox/namespaces"); err != nil {
		return err
	}
	if !hostNet {
		if err := m.timed(id, phaseCNIAdd, func() error { return m.attach(ctx, s) }); err != nil {
			return err
		}
		if err := failpoint.Check("RunPodSandbox/network"); err != nil {
			return err
		}
	}

	if hostIPC {
		s.ShmPath = "/dev/shm"
	} else {
		s.ShmPath = filepath.Join(s.Dir, "shm")
		if err := os.MkdirAll(s.ShmPath, 0o1777); err != nil {
			return fmt.Errorf("create shm dir: %w", err)
		}
		shm := mount.Mount{Type: "tmpfs", Source: "shm", Options: []string{
			"nosuid", "nodev", "noexec", "mode=1777", fmt.Sprintf("size=%d", m.cfg.ShmSize),
		}}
		if userns != nil {
			uid, gid := userns.Root()
			shm.Options = append(shm.Options, fmt.Sprintf("uid=%d", uid), fmt.Sprintf("gid=%d", gid))
		}
		if err := shm.Mount(s.ShmPath); err != nil {
			return err
		}
		if err := failpoint.Check("RunPodSandbox/shm"); err != nil {
			return err
		}
	}

	if ns.GetPid() == runtimeapi.NamespaceMode_POD && s.PausePid == 0 {
		pid, err := pause.Start(m.cfg.PauseBinary, s.ID)
		if err != nil {
			return err
		}
		s.PausePid = pid
		if s.PauseStart, err = pause.StartTime(pid); err != nil {
			_ = killPause(s)
			return fmt.Errorf("read pause start time: %w", err)
		}
		if err := failpoint.Check("RunPodSandbox/pause"); err != nil {
			return err
		}
	}

	if m.cfg.Plugins != nil {
		// Made whole, not yet ready, as containerd tells them; a plugin's
		// refusal undoes the pod, and they hear of the undoing.
		if err := m.cfg.Plugins.RunPodSandbox(ctx, *s); err != nil {
			return err
		}
		rollback.Push("plugins' view of the pod", func(ctx context.Context) error {
			m.cfg.Plugins.StopPodSandbox(ctx, *s)
			m.cfg.Plugins.RemovePodSandbox(ctx, *s)
			return nil
		})
	}
	if err := s.State.to(Ready); err != nil {
		return err
	}
	s.State = Ready
	if err := m.save(s); err != nil {
		return err
	}
	if err := failpoint.Check("RunPodSandbox/ready"); err != nil {
		return err
	}
	m.mu.Lock()
	m.byID[id] = s
	// Like containerd: a sandbox that is made is created and started at
	// once.
	m.publish(lifecycle.Created, id)
	m.publish(lifecycle.Started, id)
	m.mu.Unlock()
	m.log.Info("sandbox ready", "sandbox", id, "pod", nameKey(cfg.GetMetadata()))
	if !pinsHeld(s) {
		// The namespace holder ended while the pod was made, and the
		// Rehold it caused did not see the pod, not yet listed: mend it
		// here (it has nothing running yet, so it turns not ready).
		if err := m.rehold(id, func(string) []int { return nil }); err != nil {
			m.log.Error("mend a pod's namespaces after their holder ended", "sandbox", id, "err", err)
		}
	}
	return nil
}

// writeFiles writes the pod's hostname, resolv.conf and hosts. In a pod of
// its own user namespace they belong to the pod's root (its host ids), as
// its /dev/shm does: they are the pod's alone, and so its containers bind
// them without an id-mapped mount, which costs the runtime a user
// namespace of its own at every container start.
func (m *Manager) writeFiles(s *Sandbox, hostNet bool, hostname string, userns *netns.UserNS) error {
	resolv, err := resolvConf(s.Config.GetDnsConfig())
	if err != nil {
		return fmt.Errorf("build resolv.conf: %w", err)
	}
	hosts, err := hostsFile(hostNet, hostname)
	if err != nil {
		return fmt.Errorf("build hosts: %w", err)
	}
	for path, data := range map[string][]byte{
		s.HostnamePath(): []byte(hostname + "\n"),
		s.ResolvPath():   resolv,
		s.HostsPath():    hosts,
	} {
		if err := writeFile(path, data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", filepath.Base(path), err)
		}
		if userns != nil {
			uid, gid := userns.Root()
			if err := os.Chown(path, uid, gid); err != nil {
				return fmt.Errorf("give %s to the pod's root: %w", filepath.Base(path), err)
			}
		}
	}
	return nil
}

// userNamespaceSupport refuses a pod that asks for a user namespace of its
// own when its handler cannot give it one, before anything is made.
func (m *Manager) userNamespaceSupport(userns *netns.UserNS, handler string) error {
	if userns == nil {
		return nil
	}
	if m.cfg.UserNamespaces == nil {
		return fmt.Errorf("%s: user namespaces are not supported by this runtime: %w", usernsField, errdefs.ErrFailedPrecondition)
	}
	if err := m.cfg.UserNamespaces(handler); err != nil {
		return fmt.Errorf("%s: runtime handler %q: %w", usernsField, handler, err)
	}
	return nil
}

// pinNamespaces makes and pins the pod's namespaces of kinds. A pod of its
// own user namespace has them made by a child process inside it: the pause,
// kept as the init of the pod's PID namespace when the pod shares one, else
// ended at once.
func (m *Manager) pinNamespaces(s *Sandbox, kinds []netns.Kind, hostname string, userns *netns.UserNS) (map[netns.Kind]string, error) {
	req := netns.Request{Dir: filepath.Join(s.Dir, "ns"), Kinds: kinds, Hostname: hostname, Hold: m.cfg.NSHold}
	if userns == nil {
		return m.pin(req)
	}
	cmd := pause.Command(m.cfg.PauseBinary, s.ID)
	sharedPID := s.Config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetPid() == runtimeapi.NamespaceMode_POD
	if sharedPID {
		cmd.SysProcAttr.Cloneflags |= unix.CLONE_NEWPID
		pause.Isolate(cmd)
	}
	pinned, err := netns.PinIn(cmd, *userns, req)
	if err != nil {
		return nil, err
	}
	if !sharedPID {
		// Its namespaces are pinned: it has done its job. It is collected
		// off the pod's critical path.
		_ = cmd.Process.Kill()
		pause.Collect(cmd)
		return pinned, nil
	}
	s.PausePid = pause.Collect(cmd)
	if s.PauseStart, err = pause.StartTime(s.PausePid); err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("read pause start time: %w", err)
	}
	return pinned, nil
}

// pin makes and pins req's namespaces, taking the network namespace from
// the spares when there are any.
func (m *Manager) pin(req netns.Request) (map[netns.Kind]string, error) {
	if m.cfg.NetNSSpares == nil {
		return netns.Pin(req)
	}
	return m.cfg.NetNSSpares.Pin(req)
}
