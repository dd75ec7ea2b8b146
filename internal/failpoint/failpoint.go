// Package failpoint lets a test make one named step of an operation fail,
// or kill the process right there, to prove that whatever the operation had
// made by then is undone (at once, or by the next start).
//
// It is inert unless the process started with CRIB_FAILPOINTS naming a
// file: then each Check reads that file, which holds at most one line,
// "STEP error" or "STEP kill". Production never sets it: Check is then one
// comparison with an empty string.
//
// Step names are "Operation/step" string literals at the call sites, so a
// test can list every step from the source (see test/integration).
package failpoint

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Env names the file of the armed step.
const Env = "CRIB_FAILPOINTS"

// ErrInjected is what an armed step returns in error mode.
var ErrInjected = errors.New("failure injected by a test")

// file is read once: arming a process is decided when it starts.
var file = os.Getenv(Env)

// Check is called where step has just been done. It returns nil unless a
// test armed step: then it returns ErrInjected, or SIGKILLs this process.
func Check(step string) error {
	if file == "" {
		return nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	armed, action, _ := strings.Cut(strings.TrimSpace(string(data)), " ")
	if armed != step {
		return nil
	}
	switch action {
	case "kill":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "error":
		return fmt.Errorf("%s: %w", step, ErrInjected)
	}
	return nil
}
