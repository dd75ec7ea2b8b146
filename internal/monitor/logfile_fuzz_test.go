package monitor

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzLogWriter writes arbitrary output, read in arbitrary pieces, as CRI
// log records. Every record must be well formed, "TIMESTAMP stdout P|F
// content", partial ones no longer than the bound, and the records must
// give back every byte of the output, read as the kubelet reads them (a
// newline after each full record only): only a CR ending a line may go, and
// an unterminated last line stays unterminated.
func FuzzLogWriter(f *testing.F) {
	f.Add([]byte("a\nb\r\nc"), uint16(1))
	f.Add(bytes.Repeat([]byte("x"), maxLogLine+1), uint16(4096))
	f.Add(append(bytes.Repeat([]byte("y"), maxLogLine-1), "\r\n\r\r\n\n"...), uint16(0))
	f.Fuzz(func(t *testing.T, out []byte, piece uint16) {
		now := time.Date(2026, 11, 25, 12, 0, 0, 123456789, time.UTC)
		path := filepath.Join(t.TempDir(), "0.log")
		l, err := openLogFile(path, func() time.Time { return now })
		if err != nil {
			t.Fatal(err)
		}
		l.copyStream(&pieceReader{b: out, n: int(piece)}, "stdout", func(err error) { t.Error(err) })
		if err := l.close(); err != nil {
			t.Fatal(err)
		}
		file, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		prefix := now.Format(stampLayout) + " stdout "
		var got []byte
		for rest := file; len(rest) > 0; {
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				t.Fatalf("record without a newline at the end: %q", rest)
			}
			rec := rest[:i]
			rest = rest[i+1:]
			body, ok := bytes.CutPrefix(rec, []byte(prefix))
			if !ok || len(body) < 2 || body[1] != ' ' || (body[0] != 'P' && body[0] != 'F') {
				t.Fatalf("malformed record %q", rec)
			}
			content := body[2:]
			if body[0] == 'P' && len(content) > maxLogLine {
				t.Fatalf("partial record of %d bytes, more than %d", len(content), maxLogLine)
			}
			got = append(got, content...)
			if body[0] == 'F' {
				got = append(got, '\n')
			}
		}
		if !sameButLineEndingCRs(out, got) {
			t.Fatalf("records give back %q, want %q", got, out)
		}
	})
}

// sameButLineEndingCRs reports whether got is want with some of the CRs
// that end a line ("\r\n") taken out.
func sameButLineEndingCRs(want, got []byte) bool {
	i, j := 0, 0
	for i < len(want) {
		switch {
		case j < len(got) && want[i] == got[j]:
			i++
			j++
		case want[i] == '\r' && i+1 < len(want) && want[i+1] == '\n':
			i++
		default:
			return false
		}
	}
	return j == len(got)
}

// pieceReader returns at most n bytes a read (any number for 0).
type pieceReader struct {
	b []byte
	n int
}

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	if r.n > 0 && len(p) > r.n {
		p = p[:r.n]
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}
