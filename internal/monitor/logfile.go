package monitor

import (
	"bufio"
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

// write appends one record with a single write call. The timestamp is
// taken under the lock, so that stdout and stderr records never go back in
// time in the file.
func (l *logFile) write(stream string, tag byte, content []byte) error {
	if l.path == "" {
		return nil
	}
	buf := make([]byte, 0, len(content)+64)
	l.mu.Lock()
	defer l.mu.Unlock()
	buf = l.now().UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, ' ')
	buf = append(buf, stream...)
	buf = append(buf, ' ', tag, ' ')
	buf = append(buf, content...)
	buf = append(buf, '\n')
	if l.f == nil {
		return errors.New("log file closed")
	}
	_, err := l.f.Write(buf)
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

// copyStream turns r into log records of stream until r ends or fails. A
// failing write is reported through onErr once and later records are
// dropped silently, so the container never blocks on a full disk.
func (l *logFile) copyStream(r io.Reader, stream string, onErr func(error)) {
	br := bufio.NewReaderSize(r, maxLogLine)
	failed := false
	emit := func(tag byte, content []byte) {
		if err := l.write(stream, tag, content); err != nil && !failed {
			failed = true
			onErr(fmt.Errorf("write %s log record: %w", stream, err))
		}
	}
	// inLine: the last record was partial, so a line is open until a full
	// record ends it, even an empty one when the output stops right there.
	inLine := false
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			line = line[:len(line)-1]
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			emit(tagFull, line)
			inLine = false
		case errors.Is(err, bufio.ErrBufferFull):
			emit(tagPartial, line)
			inLine = true
		default:
			if len(line) > 0 || inLine {
				emit(tagFull, line)
			}
			return
		}
	}
}
