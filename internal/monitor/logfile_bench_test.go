package monitor

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkLogWriter feeds 16 MiB of 71-byte lines through a pipe, as a
// container's stdout, into the CRI log writer, writing once to a file and
// once to /dev/null (the floor: the writer's own cost), and reports both
// rates and their ratio.
func BenchmarkLogWriter(b *testing.B) {
	line := append(bytes.Repeat([]byte("x"), 70), '\n')
	chunk := bytes.Repeat(line, 64<<10/len(line))
	const total = 16 << 20
	run := func(path string) time.Duration {
		l, err := openLogFile(path, time.Now)
		if err != nil {
			b.Fatal(err)
		}
		defer l.close()
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			defer w.Close()
			for n := 0; n < total; n += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}()
		start := time.Now()
		l.copyStream(r, "stdout", func(err error) { b.Error(err) })
		r.Close()
		return time.Since(start)
	}
	var toFile, toNull time.Duration
	for i := 0; b.Loop(); i++ {
		path := filepath.Join(b.TempDir(), "0.log")
		toFile += run(path)
		toNull += run(os.DevNull)
		os.Remove(path)
	}
	mib := float64(total) / (1 << 20) * float64(b.N)
	b.ReportMetric(mib/toFile.Seconds(), "file-MiB/s")
	b.ReportMetric(mib/toNull.Seconds(), "devnull-MiB/s")
	b.ReportMetric(toNull.Seconds()/toFile.Seconds(), "file/floor")
}
