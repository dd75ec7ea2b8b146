package kernelstats

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadNetDev(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"net/dev": `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     100       2    0    0    0     0          0         0      100       2    0    0    0     0       0          0
  eth0:    5000      40    1    2    0     0          0         0     3000      30    3    4    0     0       0          0
  eth1:       7       1    0    0    0     0          0         0        8       1    0    0    0     0       0          0
`})
	got, err := ReadNetDev(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Interface{
		{Name: "eth0", RxBytes: 5000, RxPackets: 40, RxErrors: 1, RxDropped: 2, TxBytes: 3000, TxPackets: 30, TxErrors: 3, TxDropped: 4},
		{Name: "eth1", RxBytes: 7, RxPackets: 1, TxBytes: 8, TxPackets: 1},
	}
	if diff := cmp.Diff(want, got.Interfaces); diff != "" {
		t.Errorf("interfaces (-want +got):\n%s", diff)
	}
	if got.Time.IsZero() {
		t.Error("reading has no time")
	}
	if _, err := ReadNetDev(t.TempDir()); err == nil {
		t.Error("ReadNetDev without a net/dev succeeded")
	}
}
