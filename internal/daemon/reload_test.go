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
		live, restart []string
	}{
		{name: "nothing changed", change: func(*config.Config) {}},
		{
			name:   "log level",
			change: func(c *config.Config) { c.LogLevel = "debug" },
			live:   []string{"log_level"},
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
			name: "a runtime's path and a new runtime",
			change: func(c *config.Config) {
				c.Runtimes = map[string]config.Runtime{"runc": {Path: "/opt/runc"}, "crun": {Path: "crun"}, "youki": {Path: "youki"}}
			},
			restart: []string{"runtimes.runc.path", "runtimes.youki"},
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
			got := planReload(old, new)
			if !slices.Equal(got.Live, tt.live) || !slices.Equal(got.Restart, tt.restart) {
				t.Errorf("planReload = live %q, restart %q; want live %q, restart %q", got.Live, got.Restart, tt.live, tt.restart)
			}
		})
	}
}
