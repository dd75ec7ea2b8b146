// Package failpoint lets a test make one named step of an operation fail,
// or kill the process right there, to prove that whatever the operation had
// made by then is undone (at once, or by the next start).
//
// It is inert unless the process started with CRIB_FAILPOINTS naming a
// file: then each Check reads that file, which holds at most one line,
// "STEP error" or "STEP kill". Production never sets it: Check is then one
// comparison with an empty string.
//
// A step that fires first appends its name to the file's Fired companion,
// so that a test knows the armed step was reached rather than inferring it
// from the operation's outcome (a daemon may die, or an operation fail, for
// another reason).
//
// Step names are "Operation/step" string literals at the call sites, one
// call site per name, so a test can list every step from the source (see
// test/integration).
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

// Fired is the file beside armFile where each step that fired is appended,
// one name a line.
func Fired(armFile string) string { return armFile + ".fired" }

// Check is called where step has just been done. It returns nil unless a
// test armed step: then it records that step fired and returns ErrInjected,
// or SIGKILLs this process.
func Check(step string) error {
	if file == "" {
		return nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	armed, action, _ := strings.Cut(strings.TrimSpace(string(data)), " ")
	if armed != step || (action != "kill" && action != "error") {
		return nil
	}
	// A test that finds no record fails the step as not reached: a record
	// that cannot be written is no reason to go on unarmed.
	if f, err := os.OpenFile(Fired(file), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err == nil {
		_, _ = f.WriteString(step + "\n")
		_ = f.Close()
	}
	if action == "kill" {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	return fmt.Errorf("%s: %w", step, ErrInjected)
}
