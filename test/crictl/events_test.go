package crictl

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/crib-dev/crib/internal/testutil"
)

// crictlEvent is the part of `crictl events -o json` output the test reads.
type crictlEvent struct {
	ContainerID        string `json:"containerId"`
	ContainerEventType string `json:"containerEventType"`
	PodSandboxStatus   struct {
		ID string `json:"id"`
	} `json:"podSandboxStatus"`
	ContainersStatuses []struct {
		ID       string `json:"id"`
		State    string `json:"state"`
		ExitCode int32  `json:"exitCode"`
	} `json:"containersStatuses"`
}

// TestCrictlEvents follows `crictl events` through a pod whose container
// exits with a code, then is removed.
func TestCrictlEvents(t *testing.T) {
	testutil.RequiresRoot(t)
	bin := findCrictl(t)
	img := testutil.Busybox(t)
	d := testutil.StartDaemon(t, testutil.Options{Image: &img})
	c := &cli{t: t, bin: bin, sock: d.Socket}
	dir := t.TempDir()

	ctx, cancel := context.WithCancel(context.Background())
	endpoint := "unix://" + d.Socket
	// The timeout bounds crictl's connection set-up, 2 s by default: too
	// short on a loaded, emulated host.
	cmd := exec.CommandContext(ctx, bin, "--config", "/dev/null", "--runtime-endpoint", endpoint, "--timeout", "30s", "events", "-o", "json")
	var stderr testutil.SyncBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	evs := make(chan crictlEvent, 256)
	go func() {
		defer close(evs)
		dec := json.NewDecoder(bufio.NewReader(stdout))
		for {
			var ev crictlEvent
			if err := dec.Decode(&ev); err != nil {
				return
			}
			evs <- ev
		}
	}()
	next := func() crictlEvent {
		t.Helper()
		select {
		case ev, ok := <-evs:
			if !ok {
				t.Fatalf("crictl events ended: %s", stderr.String())
			}
			return ev
		case <-time.After(30 * time.Second):
			t.Fatal("crictl events printed nothing within 30s")
		}
		return crictlEvent{}
	}

	podJSON := func(name string) string {
		return writeJSON(t, dir, name+".json", map[string]any{
			"metadata": map[string]any{"name": name, "namespace": "crictl", "uid": name + "-uid"},
			"linux":    map[string]any{},
		})
	}
	// crictl subscribes on its own time: make pods until it reports any
	// event (all of them a probe's; the checks below skip the rest).
	probe := podJSON("probe")
	for i, subscribed := 0, false; !subscribed; i++ {
		if i == 30 {
			t.Fatal("crictl events reported none of 30 pods")
		}
		id := strings.TrimSpace(c.run("runp", probe))
		c.run("rmp", "-f", id)
		select {
		case _, ok := <-evs:
			if !ok {
				t.Fatalf("crictl events ended: %s", stderr.String())
			}
			subscribed = true
		case <-time.After(time.Second):
		}
	}

	pod := podJSON("events")
	podID := strings.TrimSpace(c.run("runp", pod))
	ctrJSON := writeJSON(t, dir, "ctr.json", map[string]any{
		"metadata": map[string]any{"name": "brief"},
		"image":    map[string]any{"image": img.Ref},
		"command":  []string{"sh", "-c", "sleep 1; exit 5"},
		"linux":    map[string]any{},
	})
	ctrID := strings.TrimSpace(c.run("create", podID, ctrJSON, pod))
	c.run("start", ctrID)

	var got []string
	var exitCode int32 = -1
	for len(got) < 4 {
		ev := next()
		if ev.ContainerID != ctrID {
			continue // the probe pod's and the sandbox's own events
		}
		got = append(got, ev.ContainerEventType)
		if ev.ContainerEventType == "CONTAINER_STOPPED_EVENT" {
			for _, st := range ev.ContainersStatuses {
				if st.ID == ctrID {
					exitCode = st.ExitCode
				}
			}
			c.run("rm", ctrID)
		}
	}
	want := []string{"CONTAINER_CREATED_EVENT", "CONTAINER_STARTED_EVENT", "CONTAINER_STOPPED_EVENT", "CONTAINER_DELETED_EVENT"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("crictl events of %s = %v, want %v", ctrID, got, want)
	}
	if exitCode != 5 {
		t.Errorf("exit code in the stopped event = %d, want 5", exitCode)
	}
	c.run("rmp", "-f", podID)
}
