package daemon

import (
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/crib-dev/crib/internal/config"
)

// reloadPlan is what a new configuration changes, as dotted keys the way
// `crib config dump` writes them (registries."docker.io".mirrors).
type reloadPlan struct {
	// Live are the changed keys a running daemon applies.
	Live []string
	// Restart are the changed keys that take effect only when crib
	// restarts.
	Restart []string
}

// liveKey reports whether a running daemon applies a change of key: the
// log level and the registry settings (read at each pull). Everything
// else, including tables added later, needs a restart until taught here.
func liveKey(key toml.Key) bool {
	switch key[0] {
	case "log_level", "registries":
		return true
	}
	return false
}

// planReload compares the configuration in force with a new one and sorts
// each changed key into what applies live and what needs a restart.
func planReload(old, new config.Config) reloadPlan {
	var p reloadPlan
	for _, key := range changedKeys(nil, reflect.ValueOf(old), reflect.ValueOf(new)) {
		if liveKey(key) {
			p.Live = append(p.Live, key.String())
		} else {
			p.Restart = append(p.Restart, key.String())
		}
	}
	return p
}

// changedKeys walks two values of one type by their toml tags and returns
// the keys whose values differ: a struct field or map entry per key,
// anything else (scalars, arrays) compared whole. Keys come in a stable
// order: struct fields as declared, map keys sorted.
func changedKeys(prefix toml.Key, a, b reflect.Value) []toml.Key {
	switch a.Kind() {
	case reflect.Struct:
		var out []toml.Key
		for i := range a.NumField() {
			f := a.Type().Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			out = append(out, changedKeys(appendKey(prefix, name), a.Field(i), b.Field(i))...)
		}
		return out
	case reflect.Map:
		var keys []string
		for _, k := range a.MapKeys() {
			keys = append(keys, k.String())
		}
		for _, k := range b.MapKeys() {
			if !a.MapIndex(k).IsValid() {
				keys = append(keys, k.String())
			}
		}
		slices.Sort(keys)
		var out []toml.Key
		for _, k := range keys {
			kv := reflect.ValueOf(k).Convert(a.Type().Key())
			av, bv := a.MapIndex(kv), b.MapIndex(kv)
			if !av.IsValid() || !bv.IsValid() {
				// Added or removed: the entry as a whole changed.
				out = append(out, appendKey(prefix, k))
				continue
			}
			out = append(out, changedKeys(appendKey(prefix, k), av, bv)...)
		}
		return out
	}
	if reflect.DeepEqual(a.Interface(), b.Interface()) {
		return nil
	}
	return []toml.Key{prefix}
}

func appendKey(prefix toml.Key, name string) toml.Key {
	return append(slices.Clone(prefix), name)
}

// Reload applies a new configuration to the running daemon: what can
// change live (the log level, through level, the LevelVar of the daemon's
// logger, when not nil; registry mirrors and settings for the pulls that
// start next) is applied and logged; each changed key that needs a restart
// is logged, one line each, and stays as it was. The CNI configuration
// directory is read again in any case. An invalid cfg changes nothing.
func (d *Daemon) Reload(cfg config.Config, level *slog.LevelVar) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	plan := planReload(d.cfg, cfg)
	for _, key := range plan.Restart {
		d.log.Warn("configuration change needs a restart of crib; not applied", "key", key)
	}
	if len(plan.Live) > 0 {
		if level != nil {
			var l slog.Level
			if err := l.UnmarshalText([]byte(cfg.LogLevel)); err == nil {
				level.Set(l)
			}
		}
		d.images.SetRegistries(registries(cfg.Registries))
		d.cfg.LogLevel = cfg.LogLevel
		d.cfg.Registries = cfg.Registries
	}
	d.network.Reload()
	d.log.Info("configuration reloaded", "applied", plan.Live, "needs_restart", plan.Restart)
	return nil
}
