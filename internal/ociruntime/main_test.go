package ociruntime_test

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/crib-dev/crib/internal/ociruntime"
)

// TestMain lets the test binary double as the exec shim.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "exec-shim" {
		os.Exit(ociruntime.ExecShimMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "slow-exec-shim" {
		os.Exit(slowShim(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// shimArgv returns the ExecShim prefix that re-executes this test binary.
func shimArgv(t *testing.T) []string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{self, "exec-shim"}
}

// slowShimArgv returns the ExecShim prefix of a shim that takes a second to
// act on SIGTERM, as a shim on a loaded host may.
func slowShimArgv(t *testing.T) []string {
	t.Helper()
	return append([]string{shimArgv(t)[0]}, "slow-exec-shim")
}

// slowShim runs the real shim as its child and passes SIGTERM on to it a
// second late, then exits with it. The runtime and the real shim get a
// pid file of their own, as if the runtime had not written the exec'd pid yet when the exec
// was cancelled: only the shim can then kill that process.
func slowShim(args []string) int {
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	pidFile, hidden := args[0], args[0]+".shim"
	for i, a := range args {
		if a == pidFile {
			args[i] = hidden
		}
	}
	cmd := exec.Command(os.Args[0], append([]string{"exec-shim"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{os.NewFile(3, "status")}
	if err := cmd.Start(); err != nil {
		return 2
	}
	go func() {
		<-terms
		time.Sleep(time.Second)
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}()
	_ = cmd.Wait()
	return cmd.ProcessState.ExitCode()
}
