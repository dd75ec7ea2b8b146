package stats

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPUPoint is a cumulative CPU counter at one time.
type CPUPoint struct {
	Time       time.Time
	UsageNanos uint64
}

// NanoCores is the CPU rate between prev and cur in billionths of a core
// (1e9 is one core busy all the time). It is false when there is no rate
// to give: prev is unset, time did not advance, or the counter went back
// (the cgroup was made anew).
func NanoCores(prev, cur CPUPoint) (uint64, bool) {
	if prev.Time.IsZero() || !cur.Time.After(prev.Time) || cur.UsageNanos < prev.UsageNanos {
		return 0, false
	}
	elapsed := cur.Time.Sub(prev.Time)
	used := float64(cur.UsageNanos - prev.UsageNanos)
	return uint64(used / float64(elapsed) * float64(time.Second)), true
}

// CPURate returns the CPU rate since the point last recorded in file (see
// NanoCores) and records cur there for the next caller. The file belongs
// to one cgroup's owner and should live in a directory that goes away with
// it; a missing or unreadable previous point only means there is no rate
// yet. Concurrent callers each see a whole point: the file is replaced,
// never rewritten in place.
func CPURate(file string, cur CPUPoint) (uint64, bool, error) {
	prev, _ := readPoint(file)
	rate, ok := NanoCores(prev, cur)
	if err := writePoint(file, cur); err != nil {
		return rate, ok, err
	}
	return rate, ok, nil
}

func readPoint(file string) (CPUPoint, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return CPUPoint{}, err
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return CPUPoint{}, fmt.Errorf("cpu sample %s: malformed", file)
	}
	at, err1 := strconv.ParseInt(f[0], 10, 64)
	usage, err2 := strconv.ParseUint(f[1], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return CPUPoint{}, fmt.Errorf("cpu sample %s: %w", file, err)
	}
	return CPUPoint{Time: time.Unix(0, at), UsageNanos: usage}, nil
}

func writePoint(file string, p CPUPoint) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+"-*")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// The owner's directory is gone: it was removed meanwhile.
			return nil
		}
		return fmt.Errorf("record cpu sample: %w", err)
	}
	_, err = fmt.Fprintf(tmp, "%d %d\n", p.Time.UnixNano(), p.UsageNanos)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("record cpu sample: %w", err)
	}
	return nil
}
