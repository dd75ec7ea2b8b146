package userns

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// BlockSize is how many ids each pod's user namespace maps: ids 0 to 65535
// inside are the pod's block outside.
const BlockSize = 1 << 16

// SubIDUser is the user whose /etc/subuid and /etc/subgid entry is the
// node's range, as for the kubelet.
const SubIDUser = "kubelet"

// DefaultRange is the kubelet's range when the node names none: every id
// from 65536 up (ids below are the host's own users).
var DefaultRange = Range{First: BlockSize, Length: 1<<32 - BlockSize}

// Range is a run of host ids: First to First+Length-1. A pod's range is one
// block; the node's range is a whole number of blocks.
type Range struct {
	First  uint32 `json:"first"`
	Length uint32 `json:"length"`
}

// String is "FIRST+LENGTH", as `crib pods` shows it.
func (r Range) String() string { return fmt.Sprintf("%d+%d", r.First, r.Length) }

// end is one past the last id, which may be 1<<32.
func (r Range) end() uint64 { return uint64(r.First) + uint64(r.Length) }

// CheckNode checks r as a node's range: the kubelet's rules, so that every
// block is whole and host root is never mapped.
func (r Range) CheckNode() error {
	switch {
	case r.First%BlockSize != 0:
		return fmt.Errorf("user namespace range %s: first id is not a multiple of %d", r, BlockSize)
	case r.First < BlockSize:
		return fmt.Errorf("user namespace range %s: first id must be at least %d, ids below are the host's", r, BlockSize)
	case r.Length == 0 || r.Length%BlockSize != 0:
		return fmt.Errorf("user namespace range %s: length is not a positive multiple of %d", r, BlockSize)
	case r.end() > 1<<32:
		return fmt.Errorf("user namespace range %s: goes past the last id %d", r, uint64(1<<32-1))
	}
	return nil
}

// ParseSubIDs returns the entries of user in the contents of an /etc/subuid
// or /etc/subgid file ("name:first:count" lines). Blank lines and comments
// are skipped, so are other users' lines however they look; a line of user
// that does not parse is an error, since skipping it would change the
// node's range.
func ParseSubIDs(data []byte, user string) ([]Range, error) {
	var out []Range
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, ":")
		if fields[0] != user {
			continue
		}
		if len(fields) != 3 {
			return nil, fmt.Errorf("line %d: %q is not name:first:count", n, line)
		}
		first, err := strconv.ParseUint(fields[1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("line %d: first id %q: %w", n, fields[1], err)
		}
		count, err := strconv.ParseUint(fields[2], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("line %d: count %q: %w", n, fields[2], err)
		}
		out = append(out, Range{First: uint32(first), Length: uint32(count)})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// NodeRange is the node's range from the contents of /etc/subuid and
// /etc/subgid (nil for a missing file), as the kubelet takes it: the one
// entry of SubIDUser, the same in both files; DefaultRange when neither
// has one. One entry each is all the kubelet accepts.
func NodeRange(subuid, subgid []byte) (Range, error) {
	uids, err := ParseSubIDs(subuid, SubIDUser)
	if err != nil {
		return Range{}, fmt.Errorf("/etc/subuid: %w", err)
	}
	gids, err := ParseSubIDs(subgid, SubIDUser)
	if err != nil {
		return Range{}, fmt.Errorf("/etc/subgid: %w", err)
	}
	switch {
	case len(uids) == 0 && len(gids) == 0:
		return DefaultRange, nil
	case len(uids) != 1 || len(gids) != 1:
		return Range{}, fmt.Errorf("%q has %d entries in /etc/subuid and %d in /etc/subgid: want one in each", SubIDUser, len(uids), len(gids))
	case uids[0] != gids[0]:
		return Range{}, fmt.Errorf("%q has %s in /etc/subuid but %s in /etc/subgid: they must be the same", SubIDUser, uids[0], gids[0])
	}
	if err := uids[0].CheckNode(); err != nil {
		return Range{}, fmt.Errorf("%q in /etc/subuid: %w", SubIDUser, err)
	}
	return uids[0], nil
}

// ErrExhausted says every block of the node's range is taken.
var ErrExhausted = errors.New("no free user namespace range: every block of the node's range is taken")
