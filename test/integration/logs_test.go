package integration

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criLine is one parsed line of a CRI log file.
type criLine struct {
	time    time.Time
	stream  string
	partial bool
	msg     string
}

// parseCRILog parses every line of a CRI log file, failing the test on a
// line that is not `<RFC3339Nano> <stdout|stderr> <F|P> <msg>`.
func parseCRILog(t *testing.T, data string) []criLine {
	t.Helper()
	if data == "" {
		return nil
	}
	if !strings.HasSuffix(data, "\n") {
		t.Errorf("log does not end with a newline: %q", tail(data))
	}
	var out []criLine
	for i, line := range strings.Split(strings.TrimSuffix(data, "\n"), "\n") {
		parts := strings.SplitN(line, " ", 4)
		if len(parts) != 4 {
			t.Fatalf("log line %d has %d fields: %q", i+1, len(parts), line)
		}
		ts, err := time.Parse(time.RFC3339Nano, parts[0])
		if err != nil {
			t.Fatalf("log line %d: time %q: %v", i+1, parts[0], err)
		}
		if parts[1] != "stdout" && parts[1] != "stderr" {
			t.Fatalf("log line %d: stream %q", i+1, parts[1])
		}
		if parts[2] != "F" && parts[2] != "P" {
			t.Fatalf("log line %d: tag %q", i+1, parts[2])
		}
		out = append(out, criLine{time: ts, stream: parts[1], partial: parts[2] == "P", msg: parts[3]})
	}
	return out
}

// joinStreams puts partial lines back together, per stream.
func joinStreams(lines []criLine) map[string][]string {
	out := map[string][]string{}
	pending := map[string]string{}
	for _, l := range lines {
		pending[l.stream] += l.msg
		if !l.partial {
			out[l.stream] = append(out[l.stream], pending[l.stream])
			pending[l.stream] = ""
		}
	}
	return out
}

func tail(s string) string {
	if len(s) > 200 {
		return "..." + s[len(s)-200:]
	}
	return s
}

func TestCRILogFormatAndReopen(t *testing.T) {
	e := newEnv(t)
	pod := e.podConfig("logs")
	podID := e.runPod(pod)
	long := strings.Repeat("a", 20000)
	script := `echo out1; echo err1 >&2; head -c 20000 /dev/zero | tr '\0' a; echo; echo out2; echo err2 >&2; echo done;` +
		` i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done`
	id := e.run(podID, pod, e.ctrConfig("talker", "sh", "-c", script))
	path := e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second).LogPath
	waitLog(t, path, "stdout F done\n", 10*time.Second)

	t.Run("format", func(t *testing.T) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := parseCRILog(t, string(data))
		partial := 0
		for i, l := range lines {
			if l.partial {
				partial++
			}
			if i > 0 && l.time.Before(lines[i-1].time) {
				t.Errorf("log line %d goes back in time: %s after %s", i+1, l.time, lines[i-1].time)
			}
		}
		if partial == 0 {
			t.Error("a 20000-byte line was not split into partial (P) records")
		}
		streams := joinStreams(lines)
		stdout := streams["stdout"]
		if i := indexOf(stdout, "done"); i >= 0 {
			stdout = stdout[:i+1]
		}
		if diff := cmp.Diff([]string{"out1", long, "out2", "done"}, stdout); diff != "" {
			t.Errorf("stdout lines (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"err1", "err2"}, streams["stderr"]); diff != "" {
			t.Errorf("stderr lines (-want +got):\n%s", diff)
		}
	})

	t.Run("reopen", func(t *testing.T) {
		rotated := path + ".1"
		if err := os.Rename(path, rotated); err != nil {
			t.Fatal(err)
		}
		if _, err := e.rt().ReopenContainerLog(e.ctx(), &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); err != nil {
			t.Fatal(err)
		}
		// Let two ticks reach the new file; everything written after the
		// reopen goes there, so the rotated file no longer grows.
		var lines []criLine
		eventually(t, 10*time.Second, "two lines in the reopened log", func() bool {
			data, err := os.ReadFile(path)
			if err != nil || !strings.HasSuffix(string(data), "\n") {
				return false
			}
			lines = parseCRILog(t, string(data))
			return len(lines) >= 2
		})
		for _, l := range lines {
			if l.stream != "stdout" || !strings.HasPrefix(l.msg, "tick ") {
				t.Errorf("reopened log line %+v, want a stdout tick", l)
			}
		}
		before, err := os.ReadFile(rotated)
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "two more lines in the reopened log", func() bool {
			data, _ := os.ReadFile(path)
			return strings.Count(string(data), "\n") >= len(lines)+2
		})
		after, _ := os.ReadFile(rotated)
		if len(after) != len(before) {
			t.Errorf("rotated log grew from %d to %d bytes after ReopenContainerLog", len(before), len(after))
		}
		parseCRILog(t, string(after))
	})
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
