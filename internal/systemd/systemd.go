// Package systemd makes, resizes and stops the slices of crib's systemd
// cgroup driver through systemd's D-Bus API (go-systemd, the client runc
// and the kubelet use). Containers' scopes are runc's (--systemd-cgroup);
// slices, the pods' cgroups, are made here so that systemd owns every
// cgroup it would otherwise fight crib over, and so that stopping one
// leaves nothing in systemd.
//
// A Client holds one connection (the system bus, or systemd's private
// socket as root when the bus is down) and reconnects once when it finds
// it closed, as the private socket is by `systemctl daemon-reexec`.
package systemd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	sd "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// Booted reports whether systemd is the init system, the way
// sd_booted(3) tells.
func Booted() bool {
	fi, err := os.Lstat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

// Resources are the unit properties crib sets on a slice. Zero fields are
// left as systemd has them.
type Resources struct {
	// CPUWeight is cpu.weight (1-10000); systemd maps it to cpu.shares
	// on cgroup v1.
	CPUWeight uint64
	// CPUQuotaPerSecUSec is the CPU time allowed per second of wall time,
	// in microseconds; Unlimited lifts a quota.
	CPUQuotaPerSecUSec uint64
	// MemoryMax is memory.max in bytes; Unlimited lifts a limit.
	MemoryMax uint64
	// TasksMax is pids.max; Unlimited lifts a limit.
	TasksMax uint64
}

// Unlimited is systemd's "infinity" for the Resources fields.
const Unlimited = ^uint64(0)

func (r Resources) properties() []sd.Property {
	var props []sd.Property
	add := func(name string, v uint64) {
		if v != 0 {
			props = append(props, sd.Property{Name: name, Value: godbus.MakeVariant(v)})
		}
	}
	add("CPUWeight", r.CPUWeight)
	add("CPUQuotaPerSecUSec", r.CPUQuotaPerSecUSec)
	add("MemoryMax", r.MemoryMax)
	add("TasksMax", r.TasksMax)
	return props
}

// Client talks to systemd. It is safe for concurrent use.
type Client struct {
	mu   sync.Mutex
	conn *sd.Conn
}

// New returns a Client; it connects on first use.
func New() *Client { return &Client{} }

// Close closes the connection, if any.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// do runs f on a connected client, reconnecting and retrying once when the
// connection turns out to be closed.
func (c *Client) do(ctx context.Context, f func(*sd.Conn) error) error {
	for attempt := 0; ; attempt++ {
		conn, err := c.connection(ctx)
		if err != nil {
			return err
		}
		err = f(conn)
		if err == nil || conn.Connected() || attempt > 0 {
			return err
		}
		c.mu.Lock()
		if c.conn == conn {
			c.conn.Close()
			c.conn = nil
		}
		c.mu.Unlock()
	}
}

func (c *Client) connection(ctx context.Context) (*sd.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		conn, err := sd.NewWithContext(ctx)
		if err != nil {
			return nil, fmt.Errorf("connect to systemd: %w", err)
		}
		c.conn = conn
	}
	return c.conn, nil
}

// EnsureSlice starts the transient slice name (its parents, named by its
// dashes, are systemd's to make) with resource accounting on, or, when it
// exists already, sets res on it.
func (c *Client) EnsureSlice(ctx context.Context, name, description string, res Resources) error {
	if !strings.HasSuffix(name, ".slice") {
		return fmt.Errorf("systemd slice %q: name does not end in .slice", name)
	}
	return c.do(ctx, func(conn *sd.Conn) error {
		props := append([]sd.Property{
			sd.PropDescription(description),
			{Name: "CPUAccounting", Value: godbus.MakeVariant(true)},
			{Name: "MemoryAccounting", Value: godbus.MakeVariant(true)},
			{Name: "TasksAccounting", Value: godbus.MakeVariant(true)},
			{Name: "IOAccounting", Value: godbus.MakeVariant(true)},
		}, res.properties()...)
		done := make(chan string, 1)
		_, err := conn.StartTransientUnitContext(ctx, name, "replace", props, done)
		if isDBusError(err, "org.freedesktop.systemd1.UnitExists") {
			return c.setProperties(ctx, conn, name, res)
		}
		if err != nil {
			return fmt.Errorf("start systemd slice %s: %w", name, err)
		}
		return waitJob(ctx, "start", name, done)
	})
}

// SetResources sets res on the existing unit name.
func (c *Client) SetResources(ctx context.Context, name string, res Resources) error {
	return c.do(ctx, func(conn *sd.Conn) error { return c.setProperties(ctx, conn, name, res) })
}

func (c *Client) setProperties(ctx context.Context, conn *sd.Conn, name string, res Resources) error {
	props := res.properties()
	if len(props) == 0 {
		return nil
	}
	if err := conn.SetUnitPropertiesContext(ctx, name, true, props...); err != nil {
		return fmt.Errorf("set properties of systemd unit %s: %w", name, err)
	}
	return nil
}

// Stop stops the unit name and forgets it if it failed. A unit systemd
// does not know is no error: Stop is idempotent.
func (c *Client) Stop(ctx context.Context, name string) error {
	return c.do(ctx, func(conn *sd.Conn) error {
		done := make(chan string, 1)
		_, err := conn.StopUnitContext(ctx, name, "replace", done)
		if isDBusError(err, "org.freedesktop.systemd1.NoSuchUnit") {
			return nil
		}
		if err != nil {
			return fmt.Errorf("stop systemd unit %s: %w", name, err)
		}
		err = waitJob(ctx, "stop", name, done)
		// A unit that failed stays loaded until its failure is reset.
		_ = conn.ResetFailedUnitContext(ctx, name)
		return err
	})
}

// Units lists the loaded units matching the glob patterns, by name.
func (c *Client) Units(ctx context.Context, patterns ...string) ([]string, error) {
	var names []string
	err := c.do(ctx, func(conn *sd.Conn) error {
		units, err := conn.ListUnitsByPatternsContext(ctx, nil, patterns)
		if err != nil {
			return fmt.Errorf("list systemd units %v: %w", patterns, err)
		}
		names = names[:0]
		for _, u := range units {
			names = append(names, u.Name)
		}
		return nil
	})
	return names, err
}

// waitJob waits for a job's result; anything but "done" is an error.
func waitJob(ctx context.Context, verb, name string, done <-chan string) error {
	select {
	case result := <-done:
		if result != "done" {
			return fmt.Errorf("%s systemd unit %s: job %s", verb, name, result)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s systemd unit %s: %w", verb, name, ctx.Err())
	}
}

func isDBusError(err error, name string) bool {
	var e godbus.Error
	if errors.As(err, &e) {
		return e.Name == name
	}
	var pe *godbus.Error
	return errors.As(err, &pe) && pe.Name == name
}
