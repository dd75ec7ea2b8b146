package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
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
	// Handlers are the runtime handlers among Live: added, changed or
	// removed.
	Handlers []string
}

// planReload compares the configuration in force with a new one and sorts
// each changed key into what applies live and what needs a restart. Live
// are the log level, the registry settings and the signature policy (both
// read at each pull) and the runtime handlers that no sandbox or container
// uses (inUse) and that are not the default one, before or after. Everything else, including tables
// added later, needs a restart until taught here.
func planReload(old, new config.Config, inUse map[string]bool) reloadPlan {
	var p reloadPlan
	for _, key := range changedKeys(nil, reflect.ValueOf(old), reflect.ValueOf(new)) {
		live := false
		switch key[0] {
		case "log_level", "registries", "signature_policy":
			live = true
		case "runtimes":
			h := key[1]
			live = !inUse[h] && h != old.DefaultRuntime && h != new.DefaultRuntime
			if live && !slices.Contains(p.Handlers, h) {
				p.Handlers = append(p.Handlers, h)
			}
		}
		if live {
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
// change live (see planReload; the log level through level, the LevelVar
// of the daemon's logger, when not nil) is applied and logged; each
// changed key that needs a restart is logged, one line each, and stays as
// it was. The CNI configuration directory is read again in any case. An
// invalid cfg changes nothing. ctx bounds asking new runtimes what they
// support.
func (d *Daemon) Reload(ctx context.Context, cfg config.Config, level *slog.LevelVar) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	plan := planReload(d.cfg, cfg, d.handlersInUse())
	if len(plan.Handlers) > 0 {
		if err := d.reloadRuntimes(ctx, cfg, plan.Handlers); err != nil {
			return err
		}
	}
	for _, key := range plan.Restart {
		d.log.Warn("configuration change needs a restart of crib; not applied", "key", key)
	}
	if level != nil {
		var l slog.Level
		if err := l.UnmarshalText([]byte(cfg.LogLevel)); err == nil {
			level.Set(l)
		}
	}
	d.images.SetRegistries(registries(cfg.Registries))
	d.cfg.LogLevel = cfg.LogLevel
	d.cfg.Registries = cfg.Registries
	d.images.SetSignaturePolicy(signaturePolicy(cfg.SignaturePolicy))
	d.cfg.SignaturePolicy = cfg.SignaturePolicy
	d.network.Reload()
	d.log.Info("configuration reloaded", "applied", plan.Live, "needs_restart", plan.Restart)
	return nil
}

// handlersInUse names the runtime handlers of every sandbox and container,
// the default one as itself.
func (d *Daemon) handlersInUse() map[string]bool {
	inUse := map[string]bool{}
	mark := func(h string) {
		if h == "" {
			h = d.cfg.DefaultRuntime
		}
		inUse[h] = true
	}
	for _, sb := range d.sandboxes.List() {
		mark(sb.RuntimeHandler)
	}
	for _, c := range d.containers.List() {
		mark(c.RuntimeHandler)
	}
	return inUse
}

// reloadRuntimes takes the settings of handlers from cfg, resolves the
// runtimes again and hands them to the container manager and the CRI
// server; the other handlers keep theirs.
func (d *Daemon) reloadRuntimes(ctx context.Context, cfg config.Config, handlers []string) error {
	next := d.cfg
	next.Runtimes = maps.Clone(d.cfg.Runtimes)
	for _, h := range handlers {
		if rc, ok := cfg.Runtimes[h]; ok {
			next.Runtimes[h] = rc
		} else {
			delete(next.Runtimes, h)
		}
	}
	runtimes, offered, err := d.runtimes(ctx, next)
	if err != nil {
		return fmt.Errorf("runtime handlers: %w", err)
	}
	d.containers.SetRuntimes(runtimes)
	d.server.SetHandlers(offered)
	d.cfg.Runtimes = next.Runtimes
	return nil
}
