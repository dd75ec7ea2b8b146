package monitor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/crib-dev/crib/internal/monitor"
)

// TestMain lets the test binary double as the crib binary (`monitor`
// subcommand) and as a throwaway daemon (`start-helper`) that starts a
// monitor, prints its handle and waits to be killed.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "monitor":
			os.Exit(monitor.Main(os.Args[2:]))
		case "start-helper":
			os.Exit(startHelper(os.Args[2]))
		}
	}
	os.Exit(m.Run())
}

func startHelper(cfgJSON string) int {
	var cfg monitor.StartConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := monitor.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(h); err != nil {
		return 1
	}
	select {}
}
