package monitor

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestReapInBackground: a child that exits at once, before or while its
// reaper starts waiting, is reaped and reported every time; none is left a
// zombie.
func TestReapInBackground(t *testing.T) {
	for range 200 {
		cmd := exec.Command("true")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		done := make(chan struct{})
		reapInBackground(cmd, done)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("pid %d exited but was not reported", pid)
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			t.Fatalf("pid %d is still there (a zombie) after it was reported", pid)
		}
	}
}
