package monitor

import (
	"bufio"
	"bytes"
	"io"
	"time"
)

// The streams a log record names.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// LogLine is one whole line of a container's output read back from a CRI
// log: the records of a line written in parts (P) joined with the full one
// (F) that ends it.
type LogLine struct {
	// Time is the timestamp of the line's first record.
	Time time.Time
	// Stream is StreamStdout or StreamStderr.
	Stream string
	Text   []byte
}

// LogJoiner turns CRI log records into whole lines, joining each stream's
// partial records with the full one that ends them. It reads any writer's
// records (the kubelet's and containerd's too), not only this package's.
// The zero value is ready to use.
type LogJoiner struct {
	partial map[string]*LogLine // by stream
}

// Add takes one record, without its newline, and returns the whole line it
// completes. A record not in the CRI format is skipped.
func (j *LogJoiner) Add(record []byte) (LogLine, bool) {
	fields := bytes.SplitN(record, []byte{' '}, 4)
	if len(fields) < 3 {
		return LogLine{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(fields[0]))
	if err != nil {
		return LogLine{}, false
	}
	stream, tag := string(fields[1]), fields[2]
	if (stream != StreamStdout && stream != StreamStderr) || len(tag) != 1 || (tag[0] != tagPartial && tag[0] != tagFull) {
		return LogLine{}, false
	}
	var text []byte
	if len(fields) == 4 {
		text = fields[3]
	}
	pending := j.partial[stream]
	if pending == nil {
		pending = &LogLine{Time: t, Stream: stream}
	}
	pending.Text = append(pending.Text, text...)
	if tag[0] == tagPartial {
		if j.partial == nil {
			j.partial = map[string]*LogLine{}
		}
		j.partial[stream] = pending
		return LogLine{}, false
	}
	delete(j.partial, stream)
	return *pending, true
}

// Flush returns the lines still in parts, as if they had ended (stdout's
// first), and forgets them.
func (j *LogJoiner) Flush() []LogLine {
	var out []LogLine
	for _, stream := range []string{StreamStdout, StreamStderr} {
		if l := j.partial[stream]; l != nil {
			out = append(out, *l)
		}
	}
	j.partial = nil
	return out
}

// LogReader reads the whole lines a CRI log gains, as it is written: a
// record the writer has not ended with its newline yet waits for the next
// read. A zero LogReader reads nothing (a log not there yet).
type LogReader struct {
	rd   *bufio.Reader
	rest []byte // the start of a record not written to its end yet
	join LogJoiner
}

// NewLogReader reads the log r from where r stands.
func NewLogReader(r io.Reader) *LogReader {
	return &LogReader{rd: bufio.NewReaderSize(r, 64<<10)}
}

// ReadAvailable returns the whole lines the log holds past what was read
// before; lines in parts stay for the next call.
func (r *LogReader) ReadAvailable() []LogLine {
	if r.rd == nil {
		return nil
	}
	var out []LogLine
	for {
		data, err := r.rd.ReadBytes('\n')
		if err != nil {
			// io.EOF or a read error: keep what came and try later.
			r.rest = append(r.rest, data...)
			return out
		}
		if len(r.rest) > 0 {
			data = append(r.rest, data...)
			r.rest = nil
		}
		if line, ok := r.join.Add(bytes.TrimSuffix(data, []byte{'\n'})); ok {
			out = append(out, line)
		}
	}
}

// Drain returns the rest of a log that will not grow any more, lines still
// in parts included.
func (r *LogReader) Drain() []LogLine {
	return append(r.ReadAvailable(), r.join.Flush()...)
}

// Flush returns the lines still in parts, as if they had ended, without
// reading further.
func (r *LogReader) Flush() []LogLine {
	return r.join.Flush()
}
