package monitor

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// maxLogLine is the longest content of one log record; longer lines are
// split into partial records.
const maxLogLine = 16 * 1024

// Log record tags.
const (
	tagFull    = 'F'
	tagPartial = 'P'
)

// logFile writes CRI log records to a file that can be reopened after
// rotation. Writes from several streams are serialised per record.
type logFile struct {
	mu   sync.Mutex
	path string // "" discards
	f    *os.File
	now  func() time.Time
}

func openLogFile(path string, now func() time.Time) (*logFile, error) {
	l := &logFile{path: path, now: now}
	if err := l.reopen(); err != nil {
		return nil, err
	}
	return l, nil
}

// openLogPath opens the log for appending. A symlink in its place is
// refused: CreateContainer checked the path, and a link put there since
// must not send root's writes elsewhere.
func openLogPath(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open log file: %w", err)
	}
	return f, nil
}

// reopen closes the current file and opens path anew, so that records go to
// a fresh file after the old one was renamed away.
func (l *logFile) reopen() error {
	if l.path == "" {
		return nil
	}
	f, err := openLogPath(l.path)
	if err != nil {
		return err
	}
	l.mu.Lock()
	old := l.f
	l.f = f
	l.mu.Unlock()
	if old != nil {
		return old.Close()
	}
	return nil
}

// stampLayout is RFC 3339 with nanoseconds at a fixed width (30 bytes in
// UTC), which every CRI log reader parses as RFC3339Nano: a batch's records
// are laid out before their timestamp is known.
const stampLayout = "2006-01-02T15:04:05.000000000Z07:00"

// stampLen is the width of a timestamp in stampLayout, in UTC.
const stampLen = len("2006-01-02T15:04:05.000000000Z")

// maxBatch is how many bytes of records a stream collects before it writes
// them, when its output comes faster than it is written.
const maxBatch = 32 * 1024

// batch is one stream's records not yet written, each with room for its
// timestamp at the offsets in stamps.
type batch struct {
	buf    []byte
	stamps []int
}

// add lays out one record of stream.
func (b *batch) add(stream string, tag byte, content []byte) {
	b.stamps = append(b.stamps, len(b.buf))
	b.buf = append(b.buf, make([]byte, stampLen)...)
	b.buf = append(b.buf, ' ')
	b.buf = append(b.buf, stream...)
	b.buf = append(b.buf, ' ', tag, ' ')
	b.buf = append(b.buf, content...)
	b.buf = append(b.buf, '\n')
}

// write stamps the batch's records with the time and appends them with a
// single write call. The timestamp is taken under the lock, so that stdout
// and stderr records never go back in time in the file.
func (l *logFile) write(b *batch) error {
	if l.path == "" || len(b.stamps) == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var stamp [stampLen + 8]byte
	ts := l.now().UTC().AppendFormat(stamp[:0], stampLayout)
	for _, off := range b.stamps {
		copy(b.buf[off:off+stampLen], ts)
	}
	if l.f == nil {
		return errors.New("log file closed")
	}
	_, err := l.f.Write(b.buf)
	return err
}

func (l *logFile) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// recordBuffered reports whether br holds a whole record already: a line,
// or a full buffer (a partial record). Anything less waits for the
// container's next write, which may never come, so what the batch holds is
// written first.
func recordBuffered(br *bufio.Reader) bool {
	rest, _ := br.Peek(br.Buffered())
	return len(rest) == maxLogLine || bytes.IndexByte(rest, '\n') >= 0
}

// copyStream turns r into log records of stream until r ends or fails. A
// failing write is reported through onErr once and later records are
// dropped silently, so the container never blocks on a full disk.
func (l *logFile) copyStream(r io.Reader, stream string, onErr func(error)) {
	br := bufio.NewReaderSize(r, maxLogLine)
	failed := false
	var b batch
	// Records are written once no more output is waiting in the buffer, or
	// a batch is full: one write call for a burst of lines, each record as
	// soon as it is read when the output comes slowly.
	flush := func() {
		if len(b.buf) == 0 {
			return
		}
		if err := l.write(&b); err != nil && !failed {
			failed = true
			onErr(fmt.Errorf("write %s log record: %w", stream, err))
		}
		b.buf, b.stamps = b.buf[:0], b.stamps[:0]
		if cap(b.buf) > 2*maxBatch {
			b = batch{} // a long line's buffer is not kept
		}
	}
	emit := func(tag byte, content []byte) {
		b.add(stream, tag, content)
		if len(b.buf) < maxBatch && recordBuffered(br) {
			return
		}
		flush()
	}
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			line = line[:len(line)-1]
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			emit(tagFull, line)
		case errors.Is(err, bufio.ErrBufferFull):
			emit(tagPartial, line)
		default:
			// Output that ends without a newline ends with a partial
			// record, as containerd and conmon write it: the kubelet's
			// reader adds a newline after full records only, so a
			// container's last words "DONE" (a termination message
			// taken from the log) stay "DONE", not "DONE\n".
			if len(line) > 0 {
				b.add(stream, tagPartial, line)
			}
			flush()
			return
		}
	}
}
