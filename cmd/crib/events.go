package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/crib-dev/crib/internal/agent/statusapi"
)

// eventsCmd is `crib events [POD]`: the agent's events as `kubectl get
// events` prints them, all or one pod's (NAME or NAMESPACE/NAME).
func eventsCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crib events", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("status-address", "127.0.0.1:10255", "address of the agent's status API")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 1 {
		fmt.Fprintln(stderr, "usage: crib events [flags] [POD]")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events, err := statusapi.NewClient("http://" + *addr).Events(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "crib events: no agent answers on %s (is `crib agent` or `crib run` running?): %v\n", *addr, err)
		return 1
	}
	if err := statusapi.WriteEvents(stdout, events, fs.Arg(0), time.Now()); err != nil {
		fmt.Fprintf(stderr, "crib events: %v\n", err)
		return 1
	}
	return 0
}
