package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
)

// pprofEnv names the address (host:port) on which `crib daemon` serves Go's
// profiles, for finding where a benchmark's time goes. It is a debugging
// aid, not configuration: unset (the default), nothing is served, and the
// mutex and block profiles stay off, as they cost at every contended lock.
const pprofEnv = "CRIB_DEBUG_PPROF"

// servePprof starts the profile server CRIB_DEBUG_PPROF asks for, if any.
func servePprof(stderr io.Writer) error {
	addr := os.Getenv(pprofEnv)
	if addr == "" {
		return nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: %w", pprofEnv, err)
	}
	runtime.SetMutexProfileFraction(5)
	runtime.SetBlockProfileRate(int(1e6)) // a sample per millisecond blocked
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	fmt.Fprintf(stderr, "crib daemon: Go profiles on http://%s/debug/pprof/ (%s)\n", l.Addr(), pprofEnv)
	go func() { _ = http.Serve(l, mux) }()
	return nil
}
