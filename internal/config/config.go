package config

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// DefaultPath is where crib looks for its configuration when no --config
// flag names another file.
const DefaultPath = "/etc/crib/crib.toml"

// Config is crib's configuration. The zero value is not useful; start from
// Default() or Load().
type Config struct {
	// Root holds state that survives a reboot: metadata, images, bundles.
	Root string `toml:"root"`
	// State holds state that dies with the machine: the socket, pinned
	// namespaces, monitor sockets, runc's state.
	State string `toml:"state"`
	// Socket is the CRI gRPC socket.
	Socket string `toml:"socket"`
	// LogLevel is one of debug, info, warn, error.
	LogLevel string `toml:"log_level"`

	// CgroupDriver is "cgroupfs" or "systemd".
	CgroupDriver string `toml:"cgroup_driver"`
	// CgroupParent is the cgroup pods go under when the kubelet names none:
	// a path under cgroupfs, a slice under systemd. A configuration that
	// does not set it gets DefaultCgroupParent of its driver.
	CgroupParent string `toml:"cgroup_parent"`

	// DefaultRuntime names the entry of Runtimes used for the empty runtime
	// handler.
	DefaultRuntime string `toml:"default_runtime"`
	// Runtimes are the OCI runtimes, keyed by CRI runtime handler name.
	Runtimes map[string]Runtime `toml:"runtimes"`

	// ShmSize is the size in bytes of each pod's /dev/shm.
	ShmSize int64 `toml:"shm_size"`

	// BlockIOConfigFile is goresctrl's block I/O class configuration
	// (YAML), containerd's and CRI-O's blockio_config_file: the classes NRI
	// plugins and the blockio class annotations name. Empty: none.
	BlockIOConfigFile string `toml:"blockio_config_file"`
	// RdtConfigFile is goresctrl's RDT class configuration, put in force
	// under resctrl at start, as containerd's rdt_config_file. Empty: none.
	RdtConfigFile string `toml:"rdt_config_file"`

	// Registries configures registry hosts (mirrors, plain HTTP), keyed by
	// host as it appears in image references ("registry.k8s.io",
	// "docker.io", "127.0.0.1:5000").
	Registries map[string]Registry `toml:"registries"`
	// PinnedImages are never garbage-collected and report pinned: true.
	PinnedImages []string `toml:"pinned_images"`
	// MaxLayerSize caps the uncompressed size of any image layer in bytes,
	// on top of [layer_limits]; 0 means no such cap.
	MaxLayerSize int64 `toml:"max_layer_size"`
	// ImagePullProgressTimeout abandons a layer download that received no
	// byte for this long, written as a duration string ("5m", "30s").
	ImagePullProgressTimeout time.Duration `toml:"image_pull_progress_timeout"`

	// LayerLimits bound what one image layer may unpack to.
	LayerLimits LayerLimits `toml:"layer_limits"`

	// SignaturePolicy checks image signatures at pull.
	SignaturePolicy SignaturePolicy `toml:"signature_policy"`

	// Network configures pod networking through CNI.
	Network Network `toml:"network"`

	// Streaming configures the server behind Exec, Attach and PortForward.
	Streaming Streaming `toml:"streaming"`

	// Metrics configures the Prometheus endpoint.
	Metrics Metrics `toml:"metrics"`

	// CDI configures Container Device Interface devices.
	CDI CDI `toml:"cdi"`

	// Checkpoint configures container checkpoints (CRIU).
	Checkpoint Checkpoint `toml:"checkpoint"`

	// NRI configures Node Resource Interface plugins, with containerd's
	// key names.
	NRI NRI `toml:"nri"`

	// Agent configures the node agent (`crib agent`, `crib run`).
	Agent Agent `toml:"agent"`
}

// Agent configures the node agent.
type Agent struct {
	// UserNamespaces is the node's range of host ids: each pod with
	// hostUsers: false gets 65536 of them, never another live pod's. Zero
	// (the default) takes the kubelet's: the "kubelet" entry of /etc/subuid
	// and /etc/subgid, or, without one, every id from 65536 up.
	UserNamespaces IDRange `toml:"user_namespaces"`
}

// IDRange is the run of host ids FirstID to FirstID+Length-1.
type IDRange struct {
	// FirstID is a multiple of 65536, at least 65536 (ids below are the
	// host's own users).
	FirstID uint32 `toml:"first_id"`
	// Length is a multiple of 65536: how many pods can have their own
	// user namespace at once, times 65536.
	Length uint32 `toml:"length"`
}

// LayerLimits bound what one image layer may unpack to, so that a
// decompression bomb (a small blob of zeros that expands to more than the
// disk holds) or a flood of entries is refused while it streams, and the
// refused pull leaves nothing behind.
type LayerLimits struct {
	// ExpansionRatio bounds a layer's uncompressed bytes to this many
	// times the size of its compressed blob (real layers compress 2-20
	// times), but never below ExpansionFloor bytes; 0 turns the bound off.
	ExpansionRatio int64 `toml:"expansion_ratio"`
	ExpansionFloor int64 `toml:"expansion_floor"`
	// FreeSpaceReserve is how many bytes of the image file system (under
	// root) an unpack leaves free; 0 turns the check off.
	FreeSpaceReserve int64 `toml:"free_space_reserve"`
	// MaxEntries caps the files, directories and links of one layer; 0
	// means no cap.
	MaxEntries int64 `toml:"max_entries"`
}

// SignaturePolicy names containers-policy.json(5) files that every pull
// is checked against, as CRI-O's signature_policy and
// signature_policy_dir. Both empty (the default), nothing is checked.
type SignaturePolicy struct {
	// Path is a policy file (/etc/containers/policy.json is one).
	Path string `toml:"path"`
	// NamespacedDir holds <namespace>.json policies, each used instead of
	// Path for the pods of its namespace.
	NamespacedDir string `toml:"namespaced_dir"`
}

// CDI configures where CDI device specs are read from.
type CDI struct {
	// SpecDirs hold CDI spec files (*.json, *.yaml); a device named in
	// more than one is taken from the later directory. Empty, no CDI
	// device can be resolved.
	SpecDirs []string `toml:"spec_dirs"`
}

// NRI configures the Node Resource Interface (github.com/containerd/nri):
// plugins that see every pod and container event and adjust containers.
type NRI struct {
	// Enable turns NRI on; on by default, as in containerd 2 and CRI-O.
	Enable bool `toml:"enable"`
	// SocketPath is where external plugins connect. A daemon whose state
	// dir is not the default and whose files name no socket_path gets
	// <state>/nri.sock, so that test daemons never share the host's.
	SocketPath string `toml:"socket_path"`
	// PluginPath holds pre-installed plugins (NN-name executables),
	// started with the daemon; PluginConfigPath their NN-name.conf or
	// name.conf configuration.
	PluginPath       string `toml:"plugin_path"`
	PluginConfigPath string `toml:"plugin_config_path"`
	// PluginRegistrationTimeout bounds a plugin's registration and
	// PluginRequestTimeout each request to it ("5s", "2s").
	PluginRegistrationTimeout time.Duration `toml:"plugin_registration_timeout"`
	PluginRequestTimeout      time.Duration `toml:"plugin_request_timeout"`
	// DisableConnections refuses external plugins: only pre-installed
	// ones run.
	DisableConnections bool `toml:"disable_connections"`
	// DefaultValidator is NRI's built-in validator of adjustments.
	DefaultValidator NRIValidator `toml:"default_validator"`
}

// NRIValidator is the configuration of NRI's default validator, with
// its keys.
type NRIValidator struct {
	Enable                                bool     `toml:"enable"`
	RejectOCIHookAdjustment               bool     `toml:"reject_oci_hook_adjustment"`
	RejectRuntimeDefaultSeccompAdjustment bool     `toml:"reject_runtime_default_seccomp_adjustment"`
	RejectUnconfinedSeccompAdjustment     bool     `toml:"reject_unconfined_seccomp_adjustment"`
	RejectCustomSeccompAdjustment         bool     `toml:"reject_custom_seccomp_adjustment"`
	RejectNamespaceAdjustment             bool     `toml:"reject_namespace_adjustment"`
	RejectSysctlAdjustment                bool     `toml:"reject_sysctl_adjustment"`
	RequiredPlugins                       []string `toml:"required_plugins"`
	TolerateMissingPluginsAnnotation      string   `toml:"tolerate_missing_plugins_annotation"`
}

// Checkpoint configures CheckpointContainer.
type Checkpoint struct {
	// CriuPath is the criu binary the OCI runtime runs, an absolute path
	// to a file named criu (runc runs "criu" from its PATH, which gets the
	// file's directory first); empty, the default, is criu in crib's PATH.
	CriuPath string `toml:"criu_path"`
	// CriuNoBreakpoints makes CRIU stop a dumped task at the end of its
	// parasite by tracing its syscalls rather than with a hardware
	// breakpoint, which some virtual machines never deliver (a dump then
	// hangs; Firecracker guests do). It sets CRIU's own switch for this,
	// CRIU_FAULT=130, in the runtime's environment.
	CriuNoBreakpoints bool `toml:"criu_no_breakpoints"`
	// SyncArchive makes CheckpointContainer and CheckpointPod wait until
	// the archive is on disk before they answer (containerd's content
	// store does; CRI-O does not). Off, the default, an archive survives
	// any process's death whole or not at all, but a host crash soon
	// after can leave it truncated.
	SyncArchive bool `toml:"sync_archive"`
}

// Metrics configures the HTTP server of the runtime's Prometheus metrics.
type Metrics struct {
	// Address is the host:port /metrics is served on ("127.0.0.1:9123");
	// empty, the default, serves no metrics.
	Address string `toml:"address"`
}

// Streaming configures the streaming server.
type Streaming struct {
	// Address is the host:port the streaming server listens on. Port 0
	// picks a free port; the default, "127.0.0.1:0", keeps the server on
	// loopback, where only local clients (the kubelet, crictl) reach it.
	Address string `toml:"address"`
}

// Network configures CNI.
type Network struct {
	// ConfDir holds the CNI network configurations; crib uses the first
	// and writes its default there when there is none.
	ConfDir string `toml:"conf_dir"`
	// PluginDirs are searched for CNI plugin binaries.
	PluginDirs []string `toml:"plugin_dirs"`
	// Name, Bridge and Subnet describe the default network crib writes:
	// its CNI name, the host bridge and the pod CIDR.
	Name   string `toml:"name"`
	Bridge string `toml:"bridge"`
	Subnet string `toml:"subnet"`
}

// Runtime is one OCI runtime binary.
type Runtime struct {
	// Path is the binary, absolute or looked up in PATH.
	Path string `toml:"path"`
	// Root is the runtime's own state directory (its --root); empty means
	// <State>/runtime/<handler>.
	Root string `toml:"root"`
}

// Registry is the configuration of one registry host.
type Registry struct {
	// Mirrors are endpoints ("http://127.0.0.1:5000") tried in order before
	// the host itself; repository paths and tags are kept.
	Mirrors []string `toml:"mirrors"`
	// Insecure allows plain HTTP and unverified TLS for the host itself.
	Insecure bool `toml:"insecure"`
}

// DefaultCgroupParent is the cgroup_parent of a configuration that sets
// none, which follows the driver as CRI-O's does (/crio, system.slice): the
// cgroup /crib under cgroupfs, and under systemd crib.slice, a slice of
// crib's own rather than system.slice, so that crib's pod slices
// (crib-<id>.slice) sit together under it, apart from the host's services.
func DefaultCgroupParent(driver string) string {
	if driver == "systemd" {
		return "crib.slice"
	}
	return "/crib"
}

// Default returns the configuration crib runs with when nothing is set.
func Default() Config {
	return Config{
		Root:           "/var/lib/crib",
		State:          "/run/crib",
		Socket:         "/run/crib/crib.sock",
		LogLevel:       "info",
		CgroupDriver:   "cgroupfs",
		CgroupParent:   DefaultCgroupParent("cgroupfs"),
		DefaultRuntime: "runc",
		Runtimes: map[string]Runtime{
			"runc": {Path: "runc"},
			"crun": {Path: "crun"},
		},
		ShmSize:                  64 << 20,
		ImagePullProgressTimeout: 5 * time.Minute,
		LayerLimits: LayerLimits{
			ExpansionRatio:   100,
			ExpansionFloor:   1 << 30,
			FreeSpaceReserve: 1 << 30,
			MaxEntries:       1_000_000,
		},
		Network: Network{
			ConfDir:    "/etc/cni/net.d",
			PluginDirs: []string{"/opt/cni/bin", "/usr/lib/cni"},
			Name:       "crib",
			Bridge:     "crib0",
			Subnet:     "10.88.0.0/16",
		},
		Streaming: Streaming{Address: "127.0.0.1:0"},
		CDI:       CDI{SpecDirs: []string{"/etc/cdi", "/var/run/cdi"}},
		NRI: NRI{
			Enable:                    true,
			SocketPath:                "/var/run/nri/nri.sock",
			PluginPath:                "/opt/nri/plugins",
			PluginConfigPath:          "/etc/nri/conf.d",
			PluginRegistrationTimeout: 5 * time.Second,
			PluginRequestTimeout:      2 * time.Second,
		},
	}
}

// Decode reads TOML data into cfg, keeping cfg's values for keys the data
// does not set and rejecting keys the schema does not know.
func Decode(data []byte, cfg *Config) error {
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(cfg)
	if err != nil {
		return err
	}
	if undec := md.Undecoded(); len(undec) > 0 {
		keys := make([]string, len(undec))
		for i, k := range undec {
			keys[i] = k.String()
		}
		return fmt.Errorf("unknown keys: %s", strings.Join(keys, ", "))
	}
	return nil
}

// Encode writes cfg as TOML.
func Encode(cfg Config) ([]byte, error) {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(cfg); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// RuntimeRoot is the state directory of the runtime for handler.
func (c Config) RuntimeRoot(handler string) string {
	if r := c.Runtimes[handler]; r.Root != "" {
		return r.Root
	}
	return filepath.Join(c.State, "runtime", handler)
}
