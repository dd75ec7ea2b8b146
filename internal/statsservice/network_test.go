package statsservice

import (
	"testing"

	"github.com/crib-dev/crib/internal/kernelstats"
	"github.com/crib-dev/crib/internal/testutil"
)

// Joining the test's own network namespace must read what the process
// itself sees: the namespace, not the thread's origin, decides net/dev.
func TestReadNetworkJoinsTheNamespace(t *testing.T) {
	testutil.RequiresRoot(t)
	got, err := readNetwork("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	want, err := kernelstats.ReadNetDev("/proc/self")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Interfaces) != len(want.Interfaces) {
		t.Fatalf("read %d interfaces through the namespace, %d directly", len(got.Interfaces), len(want.Interfaces))
	}
	for i := range want.Interfaces {
		if got.Interfaces[i].Name != want.Interfaces[i].Name {
			t.Errorf("interface %d = %s, want %s", i, got.Interfaces[i].Name, want.Interfaces[i].Name)
		}
	}
	if _, err := readNetwork("/nonexistent/ns/net"); err == nil {
		t.Error("reading a namespace that is not there succeeded")
	}
}
