package monitor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCopyStreamRecords(t *testing.T) {
	clock := func() time.Time { return time.Date(2026, 11, 21, 10, 0, 0, 120000000, time.FixedZone("X", 3600)) }
	const ts = "2026-11-21T09:00:00.120000000Z" // stampLayout: nine digits always
	long := strings.Repeat("x", maxLogLine)
	tests := []struct {
		name, in string
		want     []string
	}{
		{"empty", "", nil},
		{"lines", "a\nb\n", []string{ts + " stdout F a", ts + " stdout F b"}},
		{"empty line", "\n", []string{ts + " stdout F "}},
		{"crlf", "a\r\n", []string{ts + " stdout F a"}},
		// Output that stops mid-line ends with a partial record, as
		// containerd writes it: the kubelet adds no newline after it.
		{"unterminated tail", "a\nb", []string{ts + " stdout F a", ts + " stdout P b"}},
		{"exactly max, unterminated", long, []string{ts + " stdout P " + long}},
		{"exactly max", long + "\n", []string{ts + " stdout P " + long, ts + " stdout F "}},
		{"longer than max", long + "yz\n", []string{ts + " stdout P " + long, ts + " stdout F yz"}},
		{"two chunks, unterminated", long + long + "q", []string{ts + " stdout P " + long, ts + " stdout P " + long, ts + " stdout P q"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			l, err := openLogFile(path, clock)
			if err != nil {
				t.Fatal(err)
			}
			l.copyStream(strings.NewReader(tc.in), "stdout", func(err error) { t.Error(err) })
			if err := l.close(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			if len(b) > 0 {
				got = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("records (-want +got):\n%s", d)
			}
		})
	}
}

func TestLogFileDiscardAndReopen(t *testing.T) {
	l, err := openLogFile("", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.write(oneRecord("stdout", tagFull, "x")); err != nil {
		t.Errorf("discarding log: %v", err)
	}
	if err := l.reopen(); err != nil {
		t.Errorf("reopen discarding log: %v", err)
	}
	path := filepath.Join(t.TempDir(), "log")
	l, err = openLogFile(path, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	if err := l.write(oneRecord("stdout", tagFull, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := l.reopen(); err != nil {
		t.Fatal(err)
	}
	if err := l.write(oneRecord("stderr", tagFull, "new")); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{path + ".1": " stdout F old\n", path: " stderr F new\n"} {
		b, err := os.ReadFile(p)
		if err != nil || !strings.HasSuffix(string(b), want) || strings.Count(string(b), "\n") != 1 {
			t.Errorf("%s = %q, %v; want one record ending %q", p, b, err, want)
		}
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("log file mode: %v, %v", st, err)
	}
}

func TestLogFileRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	path := filepath.Join(dir, "0.log")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if l, err := openLogFile(path, time.Now); err == nil {
		l.close()
		t.Fatalf("openLogFile through a symlink succeeded")
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("the symlink's target was created: %v", err)
	}
}

// oneRecord is a batch of one record.
func oneRecord(stream string, tag byte, content string) *batch {
	var b batch
	b.add(stream, tag, []byte(content))
	return &b
}

// TestCopyStreamWritesLinesBeforeAnUnfinishedOne: complete lines reach the
// log while the container has written only part of the next one, which it
// may never finish.
func TestCopyStreamWritesLinesBeforeAnUnfinishedOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	l, err := openLogFile(path, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		l.copyStream(r, "stdout", func(err error) { t.Error(err) })
	}()
	if _, err := w.Write([]byte("one\ntwo\npar")); err != nil {
		t.Fatal(err)
	}
	var got string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		if got = string(b); strings.Count(got, "\n") == 2 {
			break
		}
	}
	if !strings.Contains(got, " stdout F one\n") || !strings.HasSuffix(got, " stdout F two\n") {
		t.Errorf("log while a line is unfinished = %q, want the records of one and two", got)
	}
	if _, err := w.Write([]byte("tial\n")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	<-copied
	l.close()
	b, _ := os.ReadFile(path)
	if !strings.HasSuffix(string(b), " stdout F partial\n") || strings.Count(string(b), "\n") != 3 {
		t.Errorf("log = %q, want three records ending with partial", b)
	}
}
