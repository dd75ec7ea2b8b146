package monitor

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	readTS1 = "2026-11-21T09:00:00.000000001Z"
	readTS2 = "2026-11-21T09:00:01.5Z"
	readTS3 = "2026-11-21T09:00:02Z"
)

func lineStrings(lines []LogLine) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l.Stream+":"+l.Time.Format(time.RFC3339Nano)+":"+string(l.Text))
	}
	return out
}

func TestLogJoiner(t *testing.T) {
	var j LogJoiner
	var got []LogLine
	for _, raw := range []string{
		readTS1 + " stdout P a",
		readTS1 + " stderr P x",
		readTS2 + " stdout F b",
		readTS2 + " stdout F",
		readTS3 + " stderr F y z",
		readTS3 + " stdout X bad tag",
		readTS3 + " stdout FF two-letter tag",
		"garbage stdout F text",
		readTS3 + " stdin F bad stream",
		readTS3 + " stdout",
		readTS3 + " stderr P left",
	} {
		if l, ok := j.Add([]byte(raw)); ok {
			got = append(got, l)
		}
	}
	flushed := j.Flush()
	want := []string{
		"stdout:" + readTS1 + ":ab", // the first part's time
		"stdout:" + readTS2 + ":",
		"stderr:" + readTS1 + ":xy z",
	}
	if diff := cmp.Diff(want, lineStrings(got)); diff != "" {
		t.Errorf("joined lines (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"stderr:" + readTS3 + ":left"}, lineStrings(flushed)); diff != "" {
		t.Errorf("flushed (-want +got):\n%s", diff)
	}
	if left := j.Flush(); len(left) != 0 {
		t.Errorf("second flush = %v, want nothing", left)
	}
}

// A record the writer has not ended yet waits for its newline; Drain
// gives what is left of a log that is done.
func TestLogReaderGrowingFile(t *testing.T) {
	var log bytes.Buffer
	r := NewLogReader(&log)
	log.WriteString(readTS1 + " stdout F one\n" + readTS1 + " stdout P tw")
	if diff := cmp.Diff([]string{"stdout:" + readTS1 + ":one"}, lineStrings(r.ReadAvailable())); diff != "" {
		t.Errorf("first read (-want +got):\n%s", diff)
	}
	log.WriteString("o\n" + readTS2 + " stdout F !\n" + readTS2 + " stderr P cut")
	if diff := cmp.Diff([]string{"stdout:" + readTS1 + ":two!"}, lineStrings(r.ReadAvailable())); diff != "" {
		t.Errorf("second read (-want +got):\n%s", diff)
	}
	log.WriteString(" short\n")
	if diff := cmp.Diff([]string{"stderr:" + readTS2 + ":cut short"}, lineStrings(r.Drain())); diff != "" {
		t.Errorf("drain (-want +got):\n%s", diff)
	}
	if got := (&LogReader{}).Drain(); len(got) != 0 {
		t.Errorf("a zero LogReader read %v", got)
	}
}

// What the monitor writes reads back as the lines the container printed,
// long lines whole again.
func TestLogRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	l, err := openLogFile(path, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("y", 2*maxLogLine+3)
	l.copyStream(strings.NewReader("a\n"+long+"\n\nlast"), StreamStdout, func(err error) { t.Error(err) })
	l.copyStream(strings.NewReader("oops\r\n"), StreamStderr, func(err error) { t.Error(err) })
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	for _, line := range NewLogReader(f).Drain() {
		got = append(got, line.Stream+":"+string(line.Text))
	}
	// stdout's last line never ended (a partial record): it comes when the
	// reader drains, after the stderr line that ended.
	want := []string{"stdout:a", "stdout:" + long, "stdout:", "stderr:oops", "stdout:last"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
}
