package ociruntime

import "bytes"

// DefaultExecOutputCap is the output cap of an ExecSync stream.
const DefaultExecOutputCap = 16 << 20

// CappedBuffer is a bytes.Buffer that keeps at most Cap bytes and silently
// drops the rest, so a chatty process cannot make the daemon grow without
// bound. Writes always report success. A zero Cap means
// DefaultExecOutputCap. It is not safe for concurrent use.
type CappedBuffer struct {
	Cap int
	buf bytes.Buffer
	// Truncated is set once bytes were dropped.
	Truncated bool
}

// Write implements io.Writer; it never fails.
func (b *CappedBuffer) Write(p []byte) (int, error) {
	limit := b.Cap
	if limit <= 0 {
		limit = DefaultExecOutputCap
	}
	room := limit - b.buf.Len()
	if room < len(p) {
		b.Truncated = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// Bytes returns the kept bytes.
func (b *CappedBuffer) Bytes() []byte { return b.buf.Bytes() }

// String returns the kept bytes as a string.
func (b *CappedBuffer) String() string { return b.buf.String() }

// Len returns the number of kept bytes.
func (b *CappedBuffer) Len() int { return b.buf.Len() }
