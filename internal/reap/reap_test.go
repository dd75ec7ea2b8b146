package reap

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/crib-dev/crib/internal/testutil"
)

// TestInBackground: a child that exits at once, before or while its
// reaper starts waiting, is reaped and reported every time; none is left a
// zombie.
func TestInBackground(t *testing.T) {
	for range 200 {
		cmd := exec.Command("true")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		done := make(chan struct{})
		InBackground(cmd, done)
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

// TestInBackgroundHoldsNoThread: waiting for many live children does not
// take a thread each, so that the threads a daemon keeps do not grow with
// the pods it ran.
func TestInBackgroundHoldsNoThread(t *testing.T) {
	const children = 100
	before := testutil.Threads(t, os.Getpid())
	var cmds []*exec.Cmd
	var dones []chan struct{}
	for range children {
		cmd := exec.Command("sleep", "3600")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		InBackground(cmd, done)
		cmds, dones = append(cmds, cmd), append(dones, done)
	}
	defer func() {
		for i, cmd := range cmds {
			_ = cmd.Process.Kill()
			<-dones[i]
		}
	}()
	// Let a reaper that blocks in a wait reach it.
	time.Sleep(200 * time.Millisecond)
	if grown := testutil.Threads(t, os.Getpid()) - before; grown >= children/2 {
		t.Errorf("threads grew by %d waiting for %d children, want far fewer", grown, children)
	}
}
