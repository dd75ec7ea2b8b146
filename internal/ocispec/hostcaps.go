package ocispec

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ReadHostCaps reads what the running daemon can grant: the kernel's
// highest capability number and the daemon's effective capability set. The
// daemon calls it once at start and passes the result in every Input.
func ReadHostCaps() (HostCaps, error) {
	data, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return HostCaps{}, fmt.Errorf("read cap_last_cap: %w", err)
	}
	last, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return HostCaps{}, fmt.Errorf("parse cap_last_cap %q: %w", data, err)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return HostCaps{}, fmt.Errorf("read process status: %w", err)
	}
	mask, err := parseCapEff(status)
	if err != nil {
		return HostCaps{}, err
	}
	return HostCaps{Last: last, Mask: mask}, nil
}

// parseCapEff finds the CapEff line of /proc/<pid>/status.
func parseCapEff(status []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return 0, fmt.Errorf("parse CapEff %q: %w", v, err)
			}
			return mask, nil
		}
	}
	return 0, fmt.Errorf("parse process status: no CapEff line")
}
