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
// rates and their ratio; then the file's own cost (the same records
// appended, nothing formatted) and the bound it sets on a writer that
// formats and writes in one thread.
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
	// The file's own cost: the records the writer makes of the same
	// input, already laid out, appended to a file in writes of the size
	// the writer makes.
	var records batch
	for len(records.buf) < maxBatch {
		records.add("stdout", tagFull, line[:len(line)-1])
	}
	writeOnly := func(path string) time.Duration {
		f, err := openLogPath(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		lines := total / len(line)
		start := time.Now()
		for n := 0; n < lines; n += len(records.stamps) {
			if _, err := f.Write(records.buf); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	var toFile, toNull, writes time.Duration
	for i := 0; b.Loop(); i++ {
		path := filepath.Join(b.TempDir(), "0.log")
		toFile += run(path)
		toNull += run(os.DevNull)
		os.Remove(path)
		writes += writeOnly(path)
		os.Remove(path)
	}
	mib := float64(total) / (1 << 20) * float64(b.N)
	b.ReportMetric(mib/toFile.Seconds(), "file-MiB/s")
	b.ReportMetric(mib/toNull.Seconds(), "devnull-MiB/s")
	b.ReportMetric(toNull.Seconds()/toFile.Seconds(), "file/floor")
	// One thread that formats and then writes can go no faster than
	// both costs added.
	b.ReportMetric(mib/writes.Seconds(), "write-only-MiB/s")
	b.ReportMetric(mib/(toNull+writes).Seconds(), "serial-bound-MiB/s")
}
