package daemon

import (
	"slices"
	"testing"
	"time"

	"github.com/crib-dev/crib/internal/config"
)

func TestPlanReload(t *testing.T) {
	withMirror := func(c *config.Config) {
		c.Registries = map[string]config.Registry{"docker.io": {Mirrors: []string{"http://127.0.0.1:5000"}}}
	}
	tests := []struct {
		name          string
		change        func(*config.Config)
		before        func(*config.Config) // applied to the old config too
		inUse         []string             // runtime handlers in use
		live, restart []string
		handlers      []string
	}{
		{name: "nothing changed", change: func(*config.Config) {}},
		{
			name:   "log level",
			change: func(c *config.Config) { c.LogLevel = "debug" },
			live:   []string{"log_level"},
		},
		{
			name:   "a signature policy set",
			change: func(c *config.Config) { c.SignaturePolicy.Path = "/etc/containers/policy.json" },
			live:   []string{"signature_policy.path"},
		},
		{
			name:   "a registry added",
			change: withMirror,
			live:   []string{`registries."docker.io"`},
		},
		{
			name:   "a mirror changed",
			before: withMirror,
			change: func(c *config.Config) {
				c.Registries = map[string]config.Registry{"docker.io": {Mirrors: []string{"http://127.0.0.1:5001"}}}
			},
			live: []string{`registries."docker.io".mirrors`},
		},
		{
			name:   "a registry removed, another made insecure",
			before: func(c *config.Config) { c.Registries = map[string]config.Registry{"a.example": {}, "b.example": {}} },
			change: func(c *config.Config) { c.Registries = map[string]config.Registry{"b.example": {Insecure: true}} },
			live:   []string{`registries."a.example"`, `registries."b.example".insecure`},
		},
		{
			name: "restart-only keys, in declaration order",
			change: func(c *config.Config) {
				c.Network.Subnet = "10.99.0.0/16"
				c.Root = "/elsewhere"
				c.ImagePullProgressTimeout = time.Minute
				c.Streaming.Address = "127.0.0.1:10010"
			},
			restart: []string{"root", "image_pull_progress_timeout", "network.subnet", "streaming.address"},
		},
		{
			name: "the default runtime's path, and a new runtime",
			change: func(c *config.Config) {
				c.Runtimes = map[string]config.Runtime{"runc": {Path: "/opt/runc"}, "crun": {Path: "crun"}, "youki": {Path: "youki"}}
			},
			live:     []string{"runtimes.youki"},
			restart:  []string{"runtimes.runc.path"},
			handlers: []string{"youki"},
		},
		{
			name:   "a runtime nothing uses changed, another removed",
			before: func(c *config.Config) { c.Runtimes["youki"] = config.Runtime{Path: "youki"} },
			change: func(c *config.Config) {
				c.Runtimes["crun"] = config.Runtime{Path: "/opt/crun", Root: "/run/crun"}
				delete(c.Runtimes, "youki")
			},
			live:     []string{"runtimes.crun.path", "runtimes.crun.root", "runtimes.youki"},
			handlers: []string{"crun", "youki"},
		},
		{
			name:    "a runtime in use changed",
			inUse:   []string{"crun"},
			change:  func(c *config.Config) { c.Runtimes["crun"] = config.Runtime{Path: "/opt/crun"} },
			restart: []string{"runtimes.crun.path"},
		},
		{
			name: "the default runtime switched, and the new default changed",
			change: func(c *config.Config) {
				c.DefaultRuntime = "crun"
				c.Runtimes["crun"] = config.Runtime{Path: "/opt/crun"}
			},
			restart: []string{"default_runtime", "runtimes.crun.path"},
		},
		{
			name:    "an array replaced whole",
			change:  func(c *config.Config) { c.Network.PluginDirs = []string{"/opt/cni/bin"} },
			restart: []string{"network.plugin_dirs"},
		},
		{
			name: "live and restart at once",
			change: func(c *config.Config) {
				c.LogLevel = "warn"
				c.PinnedImages = []string{"busybox"}
				withMirror(c)
			},
			live:    []string{"log_level", `registries."docker.io"`},
			restart: []string{"pinned_images"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := config.Default()
			if tt.before != nil {
				tt.before(&old)
			}
			new := config.Default()
			if tt.before != nil {
				tt.before(&new)
			}
			tt.change(&new)
			inUse := map[string]bool{}
			for _, h := range tt.inUse {
				inUse[h] = true
			}
			got := planReload(old, new, inUse)
			if !slices.Equal(got.Live, tt.live) || !slices.Equal(got.Restart, tt.restart) || !slices.Equal(got.Handlers, tt.handlers) {
				t.Errorf("planReload = live %q, restart %q, handlers %q; want live %q, restart %q, handlers %q",
					got.Live, got.Restart, got.Handlers, tt.live, tt.restart, tt.handlers)
			}
		})
	}
}
