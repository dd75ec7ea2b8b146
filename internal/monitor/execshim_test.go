package monitor_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/ociruntime"
)

// The monitor binary doubles as the OCI runtime exec shim.
func TestExecShimThroughMonitorMain(t *testing.T) {
	e := newEnv(t, []string{"sleep", "3600"}, nil)
	e.run(t)
	rt := *e.rt
	rt.ExecShim = monitor.ExecShimArgs(e.cfg.Binary)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	p := specs.Process{Args: []string{"sh", "-c", "echo via-shim; sleep 63 & exit 4"}, Env: []string{"PATH=/bin"}, Cwd: "/"}
	code, err := rt.Exec(ctx, e.cfg.ID, p, ociruntime.ExecIO{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if code != 4 || out.String() != "via-shim\n" {
		t.Errorf("exec: code %d, output %q; want 4, \"via-shim\\n\"", code, out.String())
	}
}
