package testutil

import (
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// netLockDir holds one lock file per test network in use, so that daemons
// of test binaries running side by side never share a bridge or a subnet.
const netLockDir = "/run/crib-test-networks"

// testNetwork is a bridge and a /24 of 10.100.0.0/12 reserved for one
// test daemon while its lock file is held.
type testNetwork struct {
	Bridge string
	Subnet string
	lock   *os.File
}

// reserveNetwork picks a free test network, starting from one derived from
// seed.
func reserveNetwork(seed string) (*testNetwork, error) {
	if err := os.MkdirAll(netLockDir, 0o700); err != nil {
		return nil, err
	}
	h := fnv.New32a()
	h.Write([]byte(seed))
	start := int(h.Sum32() % 4000)
	for i := 0; i < 4000; i++ {
		n := (start + i) % 4000
		f, err := os.OpenFile(filepath.Join(netLockDir, fmt.Sprint(n)), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		return &testNetwork{
			Bridge: fmt.Sprintf("cribt%d", n),
			Subnet: fmt.Sprintf("10.%d.%d.0/24", 100+n/250, n%250),
			lock:   f,
		}, nil
	}
	return nil, fmt.Errorf("no free test network")
}

// ReserveNetwork reserves a test network, a bridge and its /24, for a
// runtime the test configures itself. release deletes the bridge and frees
// the reservation, once the runtime's pods are gone. Set the Daemon's
// Bridge to it so that the leak check looks at its ports and addresses.
func ReserveNetwork(t testing.TB, seed string) (bridge, subnet string, release func() error) {
	t.Helper()
	n, err := reserveNetwork(seed)
	if err != nil {
		t.Fatal(err)
	}
	return n.Bridge, n.Subnet, n.release
}

// bridgePorts lists the interfaces still attached to a bridge.
func bridgePorts(bridge string) []string {
	entries, _ := os.ReadDir(filepath.Join("/sys/class/net", bridge, "brif"))
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// release deletes the bridge and frees the reservation.
func (n *testNetwork) release() error {
	var err error
	if _, statErr := os.Stat(filepath.Join("/sys/class/net", n.Bridge)); statErr == nil {
		if out, e := exec.Command("ip", "link", "del", n.Bridge).CombinedOutput(); e != nil {
			err = fmt.Errorf("delete bridge %s: %v: %s", n.Bridge, e, out)
		}
	}
	n.lock.Close()
	return err
}
