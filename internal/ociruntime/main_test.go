package ociruntime_test

import (
	"os"
	"testing"

	"github.com/crib-dev/crib/internal/ociruntime"
)

// TestMain lets the test binary double as the exec shim.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "exec-shim" {
		os.Exit(ociruntime.ExecShimMain(os.Args[2:]))
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
