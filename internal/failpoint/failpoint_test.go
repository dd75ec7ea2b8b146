package failpoint

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckFiresOnlyTheArmedStepAndRecordsIt(t *testing.T) {
	armFile := filepath.Join(t.TempDir(), "armed")
	defer func(was string) { file = was }(file)
	file = armFile

	if err := Check("Op/step"); err != nil {
		t.Fatalf("Check with nothing armed: %v", err)
	}
	if err := os.WriteFile(armFile, []byte("Op/step error\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Check("Op/other"); err != nil {
		t.Fatalf("Check of a step not armed: %v", err)
	}
	if _, err := os.Stat(Fired(armFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a step not armed left a fired record (stat: %v)", err)
	}
	err := Check("Op/step")
	if !errors.Is(err, ErrInjected) || err.Error() != "Op/step: "+ErrInjected.Error() {
		t.Fatalf("Check of the armed step = %v, want the step's injected failure", err)
	}
	if got, err := os.ReadFile(Fired(armFile)); err != nil || string(got) != "Op/step\n" {
		t.Fatalf("fired record = %q (%v), want the step's name", got, err)
	}
}
