package kernelstats

import (
	"fmt"
	"sort"
	"time"

	"github.com/prometheus/procfs"
)

// Network is the usage of a network namespace's interfaces at one time.
type Network struct {
	// Time is when the reading started.
	Time time.Time
	// Interfaces are sorted by name; the loopback is left out, as
	// cAdvisor and the kubelet leave it out.
	Interfaces []Interface
}

// Interface is one network interface's counters since it was made.
type Interface struct {
	Name                                    string
	RxBytes, RxPackets, RxErrors, RxDropped uint64
	TxBytes, TxPackets, TxErrors, TxDropped uint64
}

// ReadNetDev reads the interfaces' counters from procDir/net/dev, where
// procDir is a proc directory of a task in the namespace to read
// (/proc/<pid>, or /proc/thread-self on a thread that joined it).
func ReadNetDev(procDir string) (Network, error) {
	now := time.Now()
	fs, err := procfs.NewFS(procDir)
	if err != nil {
		return Network{}, fmt.Errorf("read net/dev: %w", err)
	}
	dev, err := fs.NetDev()
	if err != nil {
		return Network{}, fmt.Errorf("read net/dev: %w", err)
	}
	n := Network{Time: now}
	for name, l := range dev {
		if name == "lo" {
			continue
		}
		n.Interfaces = append(n.Interfaces, Interface{
			Name:    name,
			RxBytes: l.RxBytes, RxPackets: l.RxPackets, RxErrors: l.RxErrors, RxDropped: l.RxDropped,
			TxBytes: l.TxBytes, TxPackets: l.TxPackets, TxErrors: l.TxErrors, TxDropped: l.TxDropped,
		})
	}
	sort.Slice(n.Interfaces, func(i, j int) bool { return n.Interfaces[i].Name < n.Interfaces[j].Name })
	return n, nil
}
