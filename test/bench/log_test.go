package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/testutil"
)

const (
	// logLine is what the container writes, 71 bytes a line.
	logLine = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	// logChunkLines lines (1 MiB) are written to a file in the container
	// first, then written out logChunks times: busybox's yes and head
	// alone do not reach 60 MiB/s here.
	logChunkLines = 1 << 20 / (len(logLine) + 1)
	logChunks     = 100
	logLines      = logChunkLines * logChunks
	// logPoll is how often the log file is looked at.
	logPoll = 2 * time.Millisecond
)

// logScript makes the chunk, then writes "start", the chunk logChunks
// times, and "done" to stdout.
var logScript = fmt.Sprintf(`yes %s | head -n %d >/tmp/chunk || exit 1
set --; i=0; while [ $i -lt %d ]; do set -- "$@" /tmp/chunk; i=$((i+1)); done
echo start; cat "$@"; echo done`, logLine, logChunkLines, logChunks)

// BenchmarkContainerLog measures, alternately in each iteration, how fast
// a container's stdout reaches its CRI log file: through crib's monitor
// and, when the baseline containerd runs, through containerd (its shim
// hands the pipe to the daemon, which writes the file). A busybox container
// on the host network writes ~100 MiB of 71-byte lines; the time is from
// its first line appearing in the log to its last, polled every 2 ms. Each
// log is then checked, untimed, for every line arriving whole.
func BenchmarkContainerLog(b *testing.B) {
	testutil.RequiresRoot(b)
	requireRegistry(b)
	img := registryBusybox
	d := testutil.StartDaemon(b, testutil.Options{Image: &img, LogLevel: "warn"})
	ctx := context.Background()
	ctrd := dialBaseline(b)
	if ctrd != nil {
		ctrd.pull(ctx, b, img.Ref)
		removePod(ctx, b, ctrd.Runtime, startPodWith(ctx, b, ctrd.Runtime, img.Ref, "log-warm", hostNetwork))
	}

	run := func(rt runtimeapi.RuntimeServiceClient, uid string) time.Duration {
		b.StopTimer()
		defer b.StartTimer()
		dir := b.TempDir()
		pod, ctr := podConfigs(img.Ref, uid, hostNetwork)
		pod.LogDirectory = dir
		ctr.Metadata.Name = "writer"
		ctr.Command = []string{"sh", "-c", logScript}
		ctr.LogPath = "writer.log"
		path := filepath.Join(dir, ctr.LogPath)
		id, err := runPod(ctx, rt, pod, ctr)
		if err != nil {
			b.Fatal(err)
		}
		took := timeLog(b, path)
		removePod(ctx, b, rt, id)
		if err := checkLog(path); err != nil {
			b.Fatal(err)
		}
		if err := os.Remove(path); err != nil {
			b.Fatal(err)
		}
		return took
	}
	var cribTime, ctrdTime time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cribTime += run(d.Runtime, fmt.Sprintf("log-%d", i))
		if ctrd != nil {
			ctrdTime += run(ctrd.Runtime, fmt.Sprintf("log-%d", i))
		}
	}
	b.StopTimer()
	mib := float64(logLines*(len(logLine)+1)) / (1 << 20) * float64(b.N)
	b.ReportMetric(mib/cribTime.Seconds(), "crib-MiB/s")
	if ctrd != nil {
		b.ReportMetric(mib/ctrdTime.Seconds(), "containerd-MiB/s")
		b.ReportMetric(ctrdTime.Seconds()/cribTime.Seconds(), "crib/containerd")
	}
}

// timeLog waits for the log at path to show its first line, then its last
// ("done"), and returns the time between the two sightings.
func timeLog(b *testing.B, path string) time.Duration {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute) // a hang guard
	var start time.Time
	tail := make([]byte, 64)
	for time.Now().Before(deadline) {
		fi, err := os.Stat(path)
		if err == nil && fi.Size() > 0 && start.IsZero() {
			start = time.Now()
		}
		if err == nil && fi.Size() >= int64(len(tail)) {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			_, err = f.ReadAt(tail, fi.Size()-int64(len(tail)))
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
			if bytes.HasSuffix(tail, []byte(" stdout F done\n")) {
				return time.Since(start)
			}
		}
		time.Sleep(logPoll)
	}
	b.Fatalf("%s: no last line after 5 minutes", path)
	return 0
}

// checkLog reads a CRI log and checks that it holds "start", logLines
// whole lines of logLine (partial records joined) and "done", in order.
func checkLog(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var got []string // the distinct lines, in order, with counts
	var counts []int
	var partial strings.Builder
	for {
		rec, err := r.ReadString('\n')
		if err == io.EOF && rec == "" {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		// TIMESTAMP STREAM TAG CONTENT
		fields := strings.SplitN(strings.TrimSuffix(rec, "\n"), " ", 4)
		if len(fields) < 3 || fields[1] != "stdout" {
			return fmt.Errorf("%s: record %q", path, rec)
		}
		if len(fields) == 4 {
			partial.WriteString(fields[3])
		}
		if fields[2] == "P" {
			continue
		}
		line := partial.String()
		partial.Reset()
		if n := len(got); n > 0 && got[n-1] == line {
			counts[n-1]++
			continue
		}
		got, counts = append(got, line), append(counts, 1)
	}
	if len(got) != 3 || got[0] != "start" || got[1] != logLine || counts[1] != logLines || got[2] != "done" {
		summary := make([]string, len(got))
		for i := range got {
			summary[i] = fmt.Sprintf("%d x %.20q", counts[i], got[i])
		}
		return fmt.Errorf("%s: want start, %d lines of x, done; got %s", path, logLines, strings.Join(summary, ", "))
	}
	return nil
}
