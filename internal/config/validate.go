package config

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

var errEmpty = errors.New("empty")

// Validate checks the configuration without touching the system. Each
// problem is a *FieldError naming its key; several are joined.
func (c Config) Validate() error {
	var errs []error
	bad := func(err error, key ...string) {
		errs = append(errs, &FieldError{Key: toml.Key(key).String(), Err: err})
	}
	for _, p := range []struct{ key, path string }{{"root", c.Root}, {"state", c.State}, {"socket", c.Socket}} {
		if !filepath.IsAbs(p.path) {
			bad(fmt.Errorf("%q is not an absolute path", p.path), p.key)
		}
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.LogLevel) {
		bad(fmt.Errorf("%q is not one of debug, info, warn, error", c.LogLevel), "log_level")
	}
	switch c.CgroupDriver {
	case "cgroupfs":
		if c.CgroupParent != "" && !filepath.IsAbs(c.CgroupParent) {
			bad(fmt.Errorf("%q must be an absolute cgroup path with the cgroupfs driver", c.CgroupParent), "cgroup_parent")
		}
	case "systemd":
		if c.CgroupParent != "" && !strings.HasSuffix(c.CgroupParent, ".slice") {
			bad(fmt.Errorf("%q must be a systemd slice with the systemd driver, such as its default %s",
				c.CgroupParent, DefaultCgroupParent("systemd")), "cgroup_parent")
		}
	default:
		bad(fmt.Errorf("%q is not cgroupfs or systemd", c.CgroupDriver), "cgroup_driver")
	}
	if _, ok := c.Runtimes[c.DefaultRuntime]; !ok {
		bad(fmt.Errorf("%q is not a key of [runtimes]", c.DefaultRuntime), "default_runtime")
	}
	for _, name := range sortedKeys(c.Runtimes) {
		if c.Runtimes[name].Path == "" {
			bad(errEmpty, "runtimes", name, "path")
		}
	}
	if c.ShmSize <= 0 {
		bad(fmt.Errorf("%d is not positive", c.ShmSize), "shm_size")
	}
	if c.MaxLayerSize < 0 {
		bad(fmt.Errorf("%d is negative", c.MaxLayerSize), "max_layer_size")
	}
	for _, l := range []struct {
		key string
		v   int64
	}{
		{"expansion_ratio", c.LayerLimits.ExpansionRatio},
		{"expansion_floor", c.LayerLimits.ExpansionFloor},
		{"free_space_reserve", c.LayerLimits.FreeSpaceReserve},
		{"max_entries", c.LayerLimits.MaxEntries},
	} {
		if l.v < 0 {
			bad(fmt.Errorf("%d is negative", l.v), "layer_limits", l.key)
		}
	}
	if c.ImagePullProgressTimeout <= 0 {
		bad(fmt.Errorf("%s is not positive", c.ImagePullProgressTimeout), "image_pull_progress_timeout")
	}
	if !filepath.IsAbs(c.Network.ConfDir) {
		bad(fmt.Errorf("%q is not an absolute path", c.Network.ConfDir), "network", "conf_dir")
	}
	if len(c.Network.PluginDirs) == 0 {
		bad(errEmpty, "network", "plugin_dirs")
	}
	if _, _, err := net.ParseCIDR(c.Network.Subnet); err != nil {
		bad(fmt.Errorf("%q is not a CIDR", c.Network.Subnet), "network", "subnet")
	}
	if c.Network.Name == "" {
		bad(errEmpty, "network", "name")
	}
	if c.Network.Bridge == "" || len(c.Network.Bridge) > 15 {
		bad(fmt.Errorf("%q: a bridge name has 1 to 15 characters", c.Network.Bridge), "network", "bridge")
	}
	if err := validateAddress(c.Streaming.Address); err != nil {
		bad(err, "streaming", "address")
	}
	if c.Metrics.Address != "" {
		if err := validateAddress(c.Metrics.Address); err != nil {
			bad(err, "metrics", "address")
		}
	}
	for i, dir := range c.CDI.SpecDirs {
		switch {
		case !filepath.IsAbs(dir):
			bad(fmt.Errorf("entry %d, %q, is not an absolute path", i, dir), "cdi", "spec_dirs")
		case slices.Contains(c.CDI.SpecDirs[:i], dir):
			bad(fmt.Errorf("entry %d, %q, is listed twice", i, dir), "cdi", "spec_dirs")
		}
	}
	for _, p := range []struct{ key, path string }{
		{"socket_path", c.NRI.SocketPath}, {"plugin_path", c.NRI.PluginPath}, {"plugin_config_path", c.NRI.PluginConfigPath},
	} {
		if !filepath.IsAbs(p.path) {
			bad(fmt.Errorf("%q is not an absolute path", p.path), "nri", p.key)
		}
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"plugin_registration_timeout", c.NRI.PluginRegistrationTimeout}, {"plugin_request_timeout", c.NRI.PluginRequestTimeout}} {
		if d.v <= 0 {
			bad(fmt.Errorf("%s is not positive", d.v), "nri", d.key)
		}
	}
	for _, p := range []struct{ key, path string }{{"blockio_config_file", c.BlockIOConfigFile}, {"rdt_config_file", c.RdtConfigFile}} {
		if p.path != "" && !filepath.IsAbs(p.path) {
			bad(fmt.Errorf("%q is not an absolute path", p.path), p.key)
		}
	}
	if p := c.SignaturePolicy.Path; p != "" && !filepath.IsAbs(p) {
		bad(fmt.Errorf("%q is not an absolute path", p), "signature_policy", "path")
	}
	if p := c.SignaturePolicy.NamespacedDir; p != "" && !filepath.IsAbs(p) {
		bad(fmt.Errorf("%q is not an absolute path", p), "signature_policy", "namespaced_dir")
	}
	if p := c.Checkpoint.CriuPath; p != "" {
		switch {
		case !filepath.IsAbs(p):
			bad(fmt.Errorf("%q is not an absolute path", p), "checkpoint", "criu_path")
		case filepath.Base(p) != "criu":
			bad(fmt.Errorf("%q is not named criu (runc runs criu by that name from its PATH)", p), "checkpoint", "criu_path")
		}
	}
	if r := c.Agent.UserNamespaces; r != (IDRange{}) {
		if err := validateIDRange(r); err != nil {
			bad(err, "agent", "user_namespaces")
		}
	}
	for _, host := range sortedKeys(c.Registries) {
		for i, m := range c.Registries[host].Mirrors {
			if !strings.HasPrefix(m, "http://") && !strings.HasPrefix(m, "https://") {
				bad(fmt.Errorf("entry %d, %q, needs an http:// or https:// scheme", i, m), "registries", host, "mirrors")
			}
		}
	}
	return errors.Join(errs...)
}

// validateIDRange checks a node's range of ids for pods' user namespaces as
// the kubelet checks its own: whole blocks of 65536, none of the host's ids
// below 65536.
func validateIDRange(r IDRange) error {
	const block = 1 << 16
	switch {
	case r.FirstID < block || r.FirstID%block != 0:
		return fmt.Errorf("first_id %d is not a multiple of %d of at least %d", r.FirstID, block, block)
	case r.Length == 0 || r.Length%block != 0:
		return fmt.Errorf("length %d is not a positive multiple of %d", r.Length, block)
	case uint64(r.FirstID)+uint64(r.Length) > 1<<32:
		return fmt.Errorf("first_id %d + length %d goes past the last id %d", r.FirstID, r.Length, uint64(1<<32-1))
	}
	return nil
}

// validateAddress checks a host:port listen address without resolving it:
// the host must be empty or an IP address, the port a number 0-65535.
func validateAddress(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	if host != "" && net.ParseIP(host) == nil {
		return fmt.Errorf("%q: host %q is not an IP address", addr, host)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || strconv.FormatUint(n, 10) != port {
		return fmt.Errorf("%q: port %q is not a number from 0 to 65535", addr, port)
	}
	return nil
}

// sortedKeys returns the keys of m in order, so that errors and output do
// not depend on map iteration.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
