package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/crib-dev/crib/internal/agent/statusapi"
)

// listCmd is `crib pods` and `crib ps`: tables of the agent's pods or
// containers, read from its status API.
func listCmd(name string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crib "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("status-address", "127.0.0.1:10255", "address of the agent's status API")
	wide := false
	if name == "pods" {
		fs.BoolVar(&wide, "wide", false, "also show each pod's user namespace: its block of host ids, or host")
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods, err := statusapi.NewClient("http://" + *addr).Pods(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "crib %s: no agent answers on %s (is `crib agent` or `crib run` running?): %v\n", name, *addr, err)
		return 1
	}
	write := statusapi.WritePods
	if wide {
		write = statusapi.WritePodsWide
	}
	if name == "ps" {
		write = statusapi.WriteContainers
	}
	if err := write(stdout, pods, time.Now()); err != nil {
		fmt.Fprintf(stderr, "crib %s: %v\n", name, err)
		return 1
	}
	return 0
}
