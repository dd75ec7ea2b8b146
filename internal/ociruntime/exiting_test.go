package ociruntime_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/crib-dev/crib/internal/ociruntime"
)

func TestExiting(t *testing.T) {
	if ociruntime.Exiting(os.Getpid()) {
		t.Error("Exiting(self) = true for a live process")
	}
	if ociruntime.Exiting(0) {
		t.Error("Exiting(0) = true")
	}
	// A child that exited and is not waited for stays a zombie.
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	deadline := time.Now().Add(30 * time.Second)
	for !ociruntime.Exiting(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("Exiting(%d) still false for a child that ran true", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}
