package testutil

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crib-dev/crib/internal/ociruntime"
)

// RequireCriuEnv, when set, turns a missing or broken criu from a skip into
// a failure (scripts/test.sh sets it once it has built criu).
const RequireCriuEnv = "CRIB_REQUIRE_CRIU"

// criuBuilt is where scripts/build-criu.sh installs criu, patched to dump
// inet sockets on Linux >= 6.16; criuShared where
// ../shared/conformance/build-criu.sh installs it unpatched.
const (
	criuBuilt  = "/var/lib/cri-conformance/criu-crib/bin/criu"
	criuShared = "/var/lib/cri-conformance/criu/bin/criu"
)

var criu struct {
	once      sync.Once
	path, why string
	dumpOnce  sync.Once
	dumpWhy   string
	// noBreakpoints is set when a dump works only with CRIU's hardware
	// breakpoints off (CRIU_FAULT=130): in a VM that does not deliver them.
	noBreakpoints bool
}

// FindCriu returns a criu binary that passes `criu check` on this host:
// $CRIB_CRIU, else crib's build, else the shared build's, else criu in
// PATH; "" when there is none, with why.
func FindCriu() (path, why string) {
	criu.once.Do(func() { criu.path, criu.why = findCriu() })
	return criu.path, criu.why
}

func findCriu() (string, string) {
	var candidates []string
	if p := os.Getenv("CRIB_CRIU"); p != "" {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, criuBuilt, criuShared)
	if p, err := exec.LookPath("criu"); err == nil {
		candidates = append(candidates, p)
	}
	why := "no criu: not at $CRIB_CRIU, " + criuBuilt + ", " + criuShared + " nor in PATH (scripts/build-criu.sh builds it)"
	for _, p := range candidates {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if out, err := exec.Command(p, "check").CombinedOutput(); err != nil {
			why = "criu " + p + " fails `criu check`: " + strings.TrimSpace(string(out))
			continue
		}
		return p, ""
	}
	return "", why
}

// Criu returns a criu binary that passes `criu check`, or skips the test
// saying why (fails it when CRIB_REQUIRE_CRIU is set).
func Criu(t testing.TB) string {
	t.Helper()
	if why := RuntimeCheckpointMissing(); why != "" {
		// Not a broken host: crib refuses checkpoints on such a handler
		// by design (FailedPrecondition naming the runtime).
		t.Skip(why)
	}
	p, why := FindCriu()
	if p == "" {
		skipOrFailCriu(t, why)
	}
	return p
}

// RuntimeCheckpointMissing says why the default runtime of test daemons
// (DefaultRuntime) cannot checkpoint, by its features as crib reads them;
// "" when it can or does not say.
func RuntimeCheckpointMissing() string {
	f, bin := defaultRuntimeFeatures()
	return f.CheckpointMissing(bin)
}

// defaultRuntimeFeatures is what the default runtime of test daemons says
// it supports, and its binary; no features when it does not answer.
func defaultRuntimeFeatures() (ociruntime.Features, string) {
	_, bin := DefaultRuntime()
	var f ociruntime.Features
	if out, err := exec.Command(bin, "features").Output(); err == nil {
		_ = json.Unmarshal(out, &f)
	}
	return f, bin
}

// CriuRestores is CriuDumps for a test that also restores: it skips the
// test, saying why, when crib refuses restores on the default runtime by
// design (RuntimeRestoreMissing); TestRestoreRefusedOnOldRunc checks the
// refusal there.
func CriuRestores(t testing.TB) string {
	t.Helper()
	p := CriuDumps(t)
	if why := RuntimeRestoreMissing(); why != "" {
		t.Skip(why)
	}
	return p
}

// RuntimeRestoreMissing says why crib refuses to restore checkpoints on
// the default runtime of test daemons on this host, as crib reads its
// features; "" when it restores.
func RuntimeRestoreMissing() string {
	f, bin := defaultRuntimeFeatures()
	return f.RestoreMissing(bin, Unified())
}

// CriuDumps is Criu for a test that needs a dump to succeed: it also
// dumps a sleep of its own once (leaving it running), since `criu check`
// passing does not mean a dump works on this kernel.
func CriuDumps(t testing.TB) string {
	t.Helper()
	Criu(t)
	p, why := FindDumpingCriu()
	if p == "" {
		skipOrFailCriu(t, why)
	}
	return p
}

// FindDumpingCriu is FindCriu for a criu that can also dump a process
// here; "" when there is none, with why.
func FindDumpingCriu() (path, why string) {
	p, why := FindCriu()
	if p == "" {
		return "", why
	}
	criu.dumpOnce.Do(func() {
		criu.dumpWhy = probeDump(p, nil)
		if strings.Contains(criu.dumpWhy, "hangs") && probeDump(p, []string{"CRIU_FAULT=130"}) == "" {
			criu.dumpWhy, criu.noBreakpoints = "", true
		}
	})
	if criu.dumpWhy != "" {
		return "", criu.dumpWhy
	}
	return p, ""
}

// CriuConfig is the daemon's [checkpoint] table for the criu this host
// has: its path, and criu_no_breakpoints where dumps need it; "" without
// a criu that passes its check.
func CriuConfig() string {
	p, _ := FindCriu()
	if p == "" {
		return ""
	}
	cfg := fmt.Sprintf("[checkpoint]\ncriu_path = %q\n", p)
	if _, why := FindDumpingCriu(); why == "" && criu.noBreakpoints {
		cfg += "criu_no_breakpoints = true\n"
	}
	return cfg
}

func skipOrFailCriu(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(RequireCriuEnv) != "" {
		t.Fatalf("%s, and %s is set", why, RequireCriuEnv)
	}
	t.Skip(why)
}

// probeDump dumps a sleep in a session of its own with criu, env added to
// its environment, and says why that failed ("" when it worked).
func probeDump(criuPath string, env []string) string {
	dir, err := os.MkdirTemp("", "crib-criu-probe-")
	if err != nil {
		return err.Error()
	}
	defer os.RemoveAll(dir)
	sleep := exec.Command("sleep", "600")
	sleep.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := sleep.Start(); err != nil {
		return err.Error()
	}
	defer func() { _ = sleep.Process.Kill(); _ = sleep.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, criuPath, "dump", "-t", fmt.Sprint(sleep.Process.Pid), "-D", dir, "--leave-running", "-o", dir+"/dump.log", "-v4")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return ""
	}
	log, _ := os.ReadFile(dir + "/dump.log")
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	if ctx.Err() != nil {
		return fmt.Sprintf("criu %s passes `criu check`, but a dump of a sleep hangs on this host (over 15 s; see criu#162): %s", criuPath, strings.Join(lines, " / "))
	}
	return fmt.Sprintf("criu %s cannot dump a sleep: %v: %s\n%s", criuPath, err, out, strings.Join(lines, "\n"))
}
