package snapshot

import (
	"archive/tar"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
)

// Limits bound what one layer may unpack to, so that a decompression bomb
// (a small blob that expands to far more than the disk holds) or a tar of
// millions of entries is refused while it streams. The zero value bounds
// nothing. The config keys that set each bound are named in the errors, so
// that whoever meets one knows what to change.
type Limits struct {
	// MaxSize caps the uncompressed bytes of any layer; 0: no cap.
	MaxSize int64
	// ExpansionRatio bounds a layer's uncompressed bytes to this many times
	// the size of its blob as stored (compressed), but never below
	// ExpansionFloor; 0: no such bound.
	ExpansionRatio int64
	ExpansionFloor int64
	// FreeSpaceReserve is how many bytes of the snapshot file system an
	// unpack leaves free: it stops once less is available; 0: not checked.
	FreeSpaceReserve int64
	// MaxEntries caps the tar entries of one layer; 0: no cap.
	MaxEntries int64
}

// The config keys behind each limit (internal/config).
const (
	keyMaxSize    = "max_layer_size"
	keyExpansion  = "[layer_limits] expansion_ratio and expansion_floor"
	keyReserve    = "[layer_limits] free_space_reserve"
	keyMaxEntries = "[layer_limits] max_entries"
)

// Lengths the kernel refuses anyway (PATH_MAX with its NUL, NAME_MAX):
// checked first so that the error says so, and so that a megabyte-long
// name from a PAX header never reaches a system call or an error message.
const (
	maxPathLen = 4095
	maxNameLen = 255
)

// statfsEvery is how many uncompressed bytes are unpacked between two
// checks of the free space: a counter on every read, a system call only
// this often.
const statfsEvery = 64 << 20

// guard applies the limits to one unpack. It counts the bytes of the
// uncompressed tar stream (countingReader) and, from the headers, the
// entries and the bytes they declare: a sparse entry declares more than
// the stream holds, and an entry's size is known before its data is
// written, so a bomb of one huge file is refused at its header.
type guard struct {
	limits  Limits
	dir     string // on the file system whose free space is checked
	bounded bool   // whether max applies
	max     int64  // the expansion bound of this layer
	maxWhy  string // how max was reached, for the error
	entries int64
	// streamed counts the tar stream's bytes, declared the entries' sizes.
	streamed, declared int64
	// room is what was free above the reserve at the last statfs, taken
	// when streamed was statStreamed and declared statDeclared.
	room                       int64
	statStreamed, statDeclared int64
}

// newGuard computes the bounds of a layer whose blob is blobSize bytes (0
// when unknown) and checks the free space once.
func newGuard(l Limits, dir string, blobSize int64) (*guard, error) {
	g := &guard{limits: l, dir: dir}
	blobSize = max(blobSize, 0) // a manifest may lie; a lie cannot raise the bound
	if l.ExpansionRatio > 0 {
		g.bounded = true
		g.max = math.MaxInt64
		if blobSize <= math.MaxInt64/l.ExpansionRatio {
			g.max = max(blobSize*l.ExpansionRatio, l.ExpansionFloor)
		}
		g.maxWhy = fmt.Sprintf("%d times its %d-byte blob, at least %d; %s set this",
			l.ExpansionRatio, blobSize, l.ExpansionFloor, keyExpansion)
	}
	if l.MaxSize > 0 && (!g.bounded || l.MaxSize < g.max) {
		g.bounded = true
		g.max = l.MaxSize
		g.maxWhy = keyMaxSize + " sets this"
	}
	if l.FreeSpaceReserve > 0 {
		if err := g.statfs(); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// read counts n more bytes of the tar stream.
func (g *guard) read(n int) error {
	g.streamed += int64(n)
	if g.bounded && g.streamed > g.max {
		return g.tooBig()
	}
	if g.limits.FreeSpaceReserve > 0 && g.streamed-g.statStreamed >= statfsEvery {
		return g.statfs()
	}
	return nil
}

// entry checks one tar header before anything of it is written.
func (g *guard) entry(hdr *tar.Header) error {
	g.entries++
	if m := g.limits.MaxEntries; m > 0 && g.entries > m {
		return limitErr(errdefs.ErrResourceExhausted, "layer has more than %d entries (%s sets this)", m, keyMaxEntries)
	}
	if err := checkName("name", hdr.Name); err != nil {
		return err
	}
	if hdr.Typeflag == tar.TypeSymlink || hdr.Typeflag == tar.TypeLink {
		if err := checkName("link target", hdr.Linkname); err != nil {
			return err
		}
	}
	if hdr.Size <= 0 || (hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeGNUSparse) {
		return nil
	}
	// Sizes come from the archive: compare before adding, so that a
	// huge one cannot wrap the sum around.
	if g.bounded && hdr.Size > g.max-g.declared {
		return g.tooBig()
	}
	g.declared += min(hdr.Size, math.MaxInt64-g.declared)
	if g.limits.FreeSpaceReserve > 0 && g.declared-g.statDeclared > g.room {
		// Look again before refusing: another unpack may have finished.
		if err := g.statfs(); err != nil {
			return err
		}
		if hdr.Size > g.room {
			return g.noRoom(hdr.Size)
		}
	}
	return nil
}

func (g *guard) tooBig() error {
	return limitErr(errdefs.ErrResourceExhausted, "layer unpacks to more than %d bytes (%s)", g.max, g.maxWhy)
}

// statfs refreshes room and fails when less than the reserve is free.
func (g *guard) statfs() error {
	var st unix.Statfs_t
	if err := unix.Statfs(g.dir, &st); err != nil {
		return fmt.Errorf("free space of %s: %w", g.dir, err)
	}
	g.room = int64(st.Bavail)*int64(st.Bsize) - g.limits.FreeSpaceReserve
	g.statStreamed, g.statDeclared = g.streamed, g.declared
	if g.room < 0 {
		return g.noRoom(0)
	}
	return nil
}

func (g *guard) noRoom(need int64) error {
	if need > 0 {
		return limitErr(errdefs.ErrResourceExhausted, "an entry of %d bytes would leave less than %d bytes free on %s (%s keeps that much free)",
			need, g.limits.FreeSpaceReserve, g.dir, keyReserve)
	}
	return limitErr(errdefs.ErrResourceExhausted, "less than %d bytes are free on %s (%s keeps that much free)", g.limits.FreeSpaceReserve, g.dir, keyReserve)
}

// checkName refuses a name longer than PATH_MAX or with a component
// longer than NAME_MAX.
func checkName(what, name string) error {
	if len(name) > maxPathLen {
		return limitErr(errdefs.ErrInvalidArgument, "%s of %d bytes is longer than PATH_MAX allows (%d)", what, len(name), maxPathLen)
	}
	for c := range strings.SplitSeq(name, "/") {
		if len(c) > maxNameLen {
			return limitErr(errdefs.ErrInvalidArgument, "%s has a component of %d bytes, longer than NAME_MAX allows (%d)", what, len(c), maxNameLen)
		}
	}
	return nil
}

// LimitError is a layer refused by a bound: its Limits or the kernel's name
// lengths. It unwraps to its errdefs class (resource exhausted, or invalid
// argument for names). The refusal is a property of the layer's content,
// so another source of the same layer would be refused too.
type LimitError struct {
	msg   string
	class error
}

func limitErr(class error, format string, args ...any) error {
	return &LimitError{msg: fmt.Sprintf(format, args...), class: class}
}

func (e *LimitError) Error() string { return e.msg + ": " + e.class.Error() }
func (e *LimitError) Unwrap() error { return e.class }

// countingReader reports every read to the guard.
type countingReader struct {
	r io.Reader
	g *guard
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if gerr := c.g.read(n); gerr != nil {
		return n, gerr
	}
	return n, err
}
