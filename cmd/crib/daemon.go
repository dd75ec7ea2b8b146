package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/crib-dev/crib/internal/config"
	"github.com/crib-dev/crib/internal/daemon"
)

func version() string { return daemon.Version }

// loadConfig reads the configuration file and its drop-ins and applies
// the flags that were set on top of them. A bad value a file set is
// reported with the file and line.
func loadConfig(fs *flag.FlagSet, path string, overrides map[string]*string) (config.Config, error) {
	l, err := config.LoadFiles(path, path == config.DefaultPath)
	if err != nil {
		return l.Config, err
	}
	cfg := &l.Config
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, v := range overrides {
		if !set[name] {
			continue
		}
		switch name {
		case "root":
			cfg.Root = *v
		case "state":
			cfg.State = *v
		case "socket":
			cfg.Socket = *v
		case "log-level":
			cfg.LogLevel = *v
		}
		// The flag, not a file, set the key now.
		delete(l.Sources, strings.ReplaceAll(name, "-", "_"))
	}
	// A socket not named anywhere follows the state dir, so that one flag
	// moves a whole test daemon.
	if _, inFile := l.Sources["socket"]; !set["socket"] && !inFile && cfg.State != config.Default().State {
		cfg.Socket = cfg.State + "/crib.sock"
	}
	// So does NRI's, so that such a daemon never takes over the host's.
	if _, inFile := l.Sources["nri.socket_path"]; !inFile && cfg.State != config.Default().State {
		cfg.NRI.SocketPath = cfg.State + "/nri.sock"
	}
	return *cfg, l.Validate()
}

func daemonCmd(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("crib daemon", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", config.DefaultPath, "configuration file")
	overrides := map[string]*string{
		"root":      fs.String("root", "", "persistent state directory (default /var/lib/crib)"),
		"state":     fs.String("state", "", "runtime state directory (default /run/crib)"),
		"socket":    fs.String("socket", "", "CRI socket (default /run/crib/crib.sock)"),
		"log-level": fs.String("log-level", "", "debug, info, warn or error"),
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// Under systemd, only this process speaks to the notify socket: the
	// monitors and OCI runtimes it starts must not inherit it (runc would
	// hand it to the container and wait for the container's READY=1).
	notify := takeNotifySocket()
	// A SIGHUP from now on asks for a reload, once the daemon is built;
	// before this it would have ended the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	cfg, err := loadConfig(fs, *cfgPath, overrides)
	if err != nil {
		fmt.Fprintf(stderr, "crib daemon: %v\n", err)
		return 1
	}
	var level slog.LevelVar
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: &level}))
	if err := servePprof(stderr); err != nil {
		fmt.Fprintf(stderr, "crib daemon: %v\n", err)
		return 1
	}

	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "crib daemon: find own binary: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	reload := func(d *daemon.Daemon) {
		_ = notify.send(reloadingState())
		defer func() { _ = notify.send("READY=1") }()
		cfg, err := loadConfig(fs, *cfgPath, overrides)
		if err == nil {
			err = d.Reload(ctx, cfg, &level)
		}
		if err != nil {
			log.Error("configuration not reloaded; the one in force stays", "err", err)
		}
	}
	if err := runDaemon(ctx, cfg, monitorBinary(self, log), log, notify, hup, reload); err != nil {
		log.Error("crib daemon stopped", "err", err)
		return 1
	}
	return 0
}

// runDaemon runs crib's runtime until ctx is done (SIGTERM or SIGINT),
// then shuts it down; containers keep running. It tells systemd (notify)
// when the daemon serves and when it stops, and calls reload for each
// signal on hup once the daemon is built.
func runDaemon(ctx context.Context, cfg config.Config, monitorBin string, log *slog.Logger,
	notify notifier, hup <-chan os.Signal, reload func(*daemon.Daemon)) error {
	d, err := daemon.New(ctx, cfg, monitorBin, log)
	if err != nil {
		return err
	}
	// ctx ends on a signal; run also ends when Run fails, so that no
	// reload overlaps the shutdown.
	run, endRun := context.WithCancel(ctx)
	defer endRun()
	served := make(chan struct{})
	go func() {
		defer close(served)
		select {
		case <-d.Ready(): // restored and serving
		case <-run.Done():
			return
		}
		if err := notify.send("READY=1"); err != nil {
			log.Warn("tell systemd crib is ready", "err", err)
		}
		for {
			select {
			case <-hup:
				reload(d)
			case <-run.Done():
				return
			}
		}
	}()
	runErr := d.Run(run)
	endRun()
	<-served
	_ = notify.send("STOPPING=1")
	// ctx is done by now, or Run failed: the graceful stop gets a time of
	// its own.
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), daemon.ShutdownGrace)
	defer cancel()
	return errors.Join(runErr, d.Shutdown(shutdownCtx))
}
