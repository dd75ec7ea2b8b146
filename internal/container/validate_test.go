package container

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	cv "github.com/crib-dev/crib/internal/crivalidate"
)

// kubeletContainer is a config as the kubelet sends it.
func kubeletContainer() *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata:   &runtimeapi.ContainerMetadata{Name: "web", Attempt: 2},
		Image:      &runtimeapi.ImageSpec{Image: "sha256:0123abcd", UserSpecifiedImage: "nginx:1.27"},
		Command:    []string{"nginx"},
		Args:       []string{"-g", "daemon off;"},
		WorkingDir: "/srv",
		Envs:       []*runtimeapi.KeyValue{{Key: "KUBERNETES_SERVICE_HOST", Value: []byte("10.96.0.1")}, {Key: "EMPTY"}},
		Mounts: []*runtimeapi.Mount{
			{ContainerPath: "/etc/hosts", HostPath: "/var/lib/kubelet/pods/uid/etc-hosts"},
			{ContainerPath: "/data", HostPath: "/srv/data", Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, MountOptions: []string{"nosuid", "nodev"}},
		},
		Devices:     []*runtimeapi.Device{{ContainerPath: "/dev/fuse", HostPath: "/dev/fuse", Permissions: "rwm"}},
		Labels:      map[string]string{"io.kubernetes.container.name": "web", "io.kubernetes.pod.name": strings.Repeat("p", 253)},
		Annotations: map[string]string{"io.kubernetes.container.hash": "1a2b3c", "io.kubernetes.container.terminationMessagePath": "/dev/termination-log"},
		LogPath:     "web/2.log",
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuPeriod: 100000, OomScoreAdj: 999, MemoryLimitInBytes: 128 << 20},
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				Capabilities:     &runtimeapi.Capability{AddCapabilities: []string{"NET_ADMIN"}, DropCapabilities: []string{"ALL"}},
				NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
				MaskedPaths:      []string{"/proc/kcore"},
				ReadonlyPaths:    []string{"/proc/sys"},
				Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			},
		},
	}
}

func TestValidate(t *testing.T) {
	const sc = "config.linux.security_context"
	tests := []struct {
		name  string
		edit  func(c *runtimeapi.ContainerConfig)
		field string // "" for valid
	}{
		{"kubelet's", func(*runtimeapi.ContainerConfig) {}, ""},
		{"minimal", func(c *runtimeapi.ContainerConfig) {
			*c = runtimeapi.ContainerConfig{Metadata: c.Metadata, Image: c.Image}
		}, ""},
		{"pid TARGET", func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.NamespaceOptions = &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_TARGET, TargetId: "abc"}
		}, ""},
		{"no name", func(c *runtimeapi.ContainerConfig) { c.Metadata.Name = "" }, "config.metadata.name"},
		{"long name", func(c *runtimeapi.ContainerConfig) { c.Metadata.Name = strings.Repeat("n", 254) }, "config.metadata.name"},
		{"long image", func(c *runtimeapi.ContainerConfig) { c.Image.Image = strings.Repeat("i", 4097) }, "config.image.image"},
		{"argument too long", func(c *runtimeapi.ContainerConfig) { c.Args[1] = strings.Repeat("a", 128<<10+1) }, "config.args[1]"},
		{"NUL in command", func(c *runtimeapi.ContainerConfig) { c.Command[0] = "ngi\x00nx" }, "config.command[0]"},
		{"env key with =", func(c *runtimeapi.ContainerConfig) { c.Envs[1].Key = "A=B" }, "config.envs[1].key"},
		{"env over execve's total", func(c *runtimeapi.ContainerConfig) {
			for range 50 {
				c.Envs = append(c.Envs, &runtimeapi.KeyValue{Key: "V", Value: []byte(strings.Repeat("v", 128<<10-3))})
			}
		}, "config.envs"},
		{"arguments and env over the total together", func(c *runtimeapi.ContainerConfig) {
			for range 24 {
				c.Args = append(c.Args, strings.Repeat("a", 128<<10))
				c.Envs = append(c.Envs, &runtimeapi.KeyValue{Key: "V", Value: []byte(strings.Repeat("v", 128<<10-3))})
			}
		}, "config:"},
		{"relative working_dir", func(c *runtimeapi.ContainerConfig) { c.WorkingDir = "srv" }, "config.working_dir"},
		{"relative mount", func(c *runtimeapi.ContainerConfig) { c.Mounts[0].ContainerPath = "etc/hosts" }, "config.mounts[0].container_path"},
		{"unknown propagation", func(c *runtimeapi.ContainerConfig) { c.Mounts[1].Propagation = 3 }, "config.mounts[1].propagation"},
		{"mount options", func(c *runtimeapi.ContainerConfig) { c.Mounts[1].MountOptions = []string{"noexec", "nosuid", "nodev"} }, ""},
		{"unsupported mount option", func(c *runtimeapi.ContainerConfig) { c.Mounts[1].MountOptions = []string{"nosuid", "suid"} }, "config.mounts[1].mount_options[1]"},
		{"repeated mount option", func(c *runtimeapi.ContainerConfig) { c.Mounts[0].MountOptions = []string{"noexec", "noexec"} }, "config.mounts[0].mount_options[1]"},
		{"relative device", func(c *runtimeapi.ContainerConfig) { c.Devices[0].HostPath = "dev/fuse" }, "config.devices[0].host_path"},
		{"device permissions", func(c *runtimeapi.ContainerConfig) { c.Devices[0].Permissions = "rwx" }, "config.devices[0].permissions"},
		{"bad label key", func(c *runtimeapi.ContainerConfig) { c.Labels["a/b/c"] = "" }, "config.labels"},
		{"label value too long", func(c *runtimeapi.ContainerConfig) { c.Labels["app"] = strings.Repeat("v", 254) }, "config.labels"},
		{"annotations over the bound", func(c *runtimeapi.ContainerConfig) {
			c.Annotations["big"] = strings.Repeat("x", cv.MaxMapTotal)
		}, "config.annotations"},
		{"absolute log_path", func(c *runtimeapi.ContainerConfig) { c.LogPath = "/var/log/web.log" }, "config.log_path"},
		{"log_path leaving by ..", func(c *runtimeapi.ContainerConfig) { c.LogPath = "web/../../x.log" }, "config.log_path"},
		{"unclean log_path", func(c *runtimeapi.ContainerConfig) { c.LogPath = "web//2.log" }, "config.log_path"},
		{"unknown stop signal", func(c *runtimeapi.ContainerConfig) { c.StopSignal = 1000 }, "config.stop_signal"},
		{"bad resources", func(c *runtimeapi.ContainerConfig) { c.Linux.Resources.OomScoreAdj = 2000 }, "config.linux.resources.oom_score_adj"},
		{"unknown pid mode", func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.NamespaceOptions.Pid = 4
		}, sc + ".namespace_options.pid"},
		{"network TARGET", func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_TARGET
		}, sc + ".namespace_options"},
		{"pid TARGET without a target", func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_TARGET
		}, sc + ".namespace_options.target_id"},
		{"long capability", func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.Capabilities.AddCapabilities = []string{strings.Repeat("C", 65)}
		}, sc + ".capabilities.add_capabilities[0]"},
		{"relative masked path", func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.MaskedPaths = []string{"proc/kcore"}
		}, sc + ".masked_paths[0]"},
		{"unknown apparmor type", func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.Apparmor = &runtimeapi.SecurityProfile{ProfileType: 3}
		}, sc + ".apparmor.profile_type"},
	}
	for _, tt := range tests {
		cfg := kubeletContainer()
		tt.edit(cfg)
		err := validate(cfg)
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s: %v, want no error", tt.name, err)
		case tt.field != "" && (!errdefs.IsInvalidArgument(err) || !strings.HasPrefix(err.Error(), tt.field)):
			t.Errorf("%s: %v, want InvalidArgument naming %s", tt.name, err, tt.field)
		}
	}
}

func TestLogPath(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	for _, d := range []string{"web", "real"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"escape": outside, "inside": "real", "web/0.log": "/etc/passwd"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		dir, rel string
		want     string // "" for an error
	}{
		{dir, "", ""},
		{dir, "web/1.log", filepath.Join(dir, "web/1.log")},
		{dir, "new/1.log", filepath.Join(dir, "new/1.log")},
		{dir, "web/0.log", ""},
		{dir, "escape/1.log", ""},
		{dir, "inside/1.log", ""},
		{dir, "../1.log", ""},
		{dir, "/1.log", ""},
		{"", "web/1.log", ""},
	}
	for _, tt := range tests {
		got, err := logPath(tt.dir, tt.rel)
		switch {
		case tt.want == "" && tt.rel == "" && (got != "" || err != nil):
			t.Errorf("logPath(%q, %q) = %q, %v, want no log", tt.dir, tt.rel, got, err)
		case tt.want == "" && tt.rel != "" && !errdefs.IsInvalidArgument(err):
			t.Errorf("logPath(%q, %q) = %q, %v, want InvalidArgument", tt.dir, tt.rel, got, err)
		case tt.want != "" && (got != tt.want || err != nil):
			t.Errorf("logPath(%q, %q) = %q, %v, want %q", tt.dir, tt.rel, got, err, tt.want)
		}
	}
}

// FuzzValidateContainerConfig feeds validate any config protobuf can
// decode: it must never panic, and an accepted config keeps the
// invariants the rest of CreateContainer relies on.
func FuzzValidateContainerConfig(f *testing.F) {
	seed, err := proto.Marshal(kubeletContainer())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := &runtimeapi.ContainerConfig{}
		if proto.Unmarshal(data, cfg) != nil {
			return
		}
		if err := validate(cfg); err != nil {
			if !errdefs.IsInvalidArgument(err) {
				t.Fatalf("validate: %v, want InvalidArgument", err)
			}
			return
		}
		if cfg.GetMetadata().GetName() == "" || cfg.GetImage().GetImage() == "" {
			t.Fatalf("accepted metadata %v, image %v", cfg.GetMetadata(), cfg.GetImage())
		}
		if p := cfg.GetLogPath(); p != "" && (filepath.IsAbs(p) || filepath.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../")) {
			t.Fatalf("accepted log_path %q", p)
		}
		for _, m := range cfg.GetMounts() {
			if !filepath.IsAbs(m.GetContainerPath()) {
				t.Fatalf("accepted mount %v", m)
			}
			if _, ok := runtimeapi.MountPropagation_name[int32(m.GetPropagation())]; !ok {
				t.Fatalf("accepted propagation %d", m.GetPropagation())
			}
			for j, o := range m.GetMountOptions() {
				if (o != "noexec" && o != "nodev" && o != "nosuid") || slices.Contains(m.GetMountOptions()[:j], o) {
					t.Fatalf("accepted mount options %q", m.GetMountOptions())
				}
			}
		}
		for _, a := range append(cfg.GetCommand(), cfg.GetArgs()...) {
			if len(a) > 128<<10 || strings.IndexByte(a, 0) >= 0 {
				t.Fatalf("accepted argument of %d bytes", len(a))
			}
		}
	})
}
