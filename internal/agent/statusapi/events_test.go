package statusapi

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestEvents(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	var logs bytes.Buffer
	ev := NewEvents(EventsConfig{Clock: clk, Host: "node1",
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	pod := namedPod("default", "web", "u1")

	ev.Event(pod, corev1.EventTypeNormal, "Pulled", "image pulled")
	clk.Step(time.Second)
	ev.ContainerEvent(pod, "app", corev1.EventTypeWarning, "BackOff", "back-off restarting failed container")
	clk.Step(time.Second)
	ev.Event(pod, corev1.EventTypeNormal, "Started", "started")
	clk.Step(10 * time.Second)
	// A repeat merges into the earlier one and becomes the newest.
	ev.ContainerEvent(pod, "app", corev1.EventTypeWarning, "BackOff", "back-off restarting failed container")
	// Same reason on another object is another event.
	ev.Event(namedPod("default", "db", "u2"), corev1.EventTypeNormal, "Started", "started")

	list := ev.List()
	if list.Kind != "EventList" || list.APIVersion != "v1" {
		t.Errorf("type meta = %+v", list.TypeMeta)
	}
	type row struct {
		Object, Field, Type, Reason string
		Count                       int32
		First, Last                 time.Duration
	}
	var got []row
	for _, e := range list.Items {
		got = append(got, row{e.InvolvedObject.Name, e.InvolvedObject.FieldPath, e.Type, e.Reason, e.Count,
			e.FirstTimestamp.Sub(t0), e.LastTimestamp.Sub(t0)})
		if e.Source.Component != EventSource || e.Source.Host != "node1" || e.InvolvedObject.Kind != "Pod" || e.Namespace != "default" || e.Name == "" {
			t.Errorf("event %s: source %+v object %+v namespace %q name %q", e.Reason, e.Source, e.InvolvedObject, e.Namespace, e.Name)
		}
	}
	want := []row{
		{"web", "", "Normal", "Pulled", 1, 0, 0},
		{"web", "", "Normal", "Started", 1, 2 * time.Second, 2 * time.Second},
		{"web", "spec.containers{app}", "Warning", "BackOff", 2, time.Second, 12 * time.Second},
		{"db", "", "Normal", "Started", 1, 12 * time.Second, 12 * time.Second},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if list.Items[0].InvolvedObject.UID != "u1" {
		t.Errorf("involved object UID = %q", list.Items[0].InvolvedObject.UID)
	}

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d log lines, want one per event:\n%s", len(lines), logs.String())
	}
	if !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], "reason=Pulled") {
		t.Errorf("normal event log = %s", lines[0])
	}
	if !strings.Contains(lines[1], "level=WARN") || !strings.Contains(lines[1], "pod=default/web") {
		t.Errorf("warning event log = %s", lines[1])
	}
}

func TestEventsCapacity(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	ev := NewEvents(EventsConfig{Clock: clk, Capacity: 3, Logger: slog.New(slog.DiscardHandler)})
	pod := namedPod("default", "web", "u1")
	for i := range 5 {
		ev.Event(pod, corev1.EventTypeNormal, "R", fmt.Sprint(i))
	}
	var got []string
	for _, e := range ev.List().Items {
		got = append(got, e.Message)
	}
	if diff := cmp.Diff([]string{"2", "3", "4"}, got); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if NewEvents(EventsConfig{}).cfg.Capacity != DefaultEventCapacity {
		t.Errorf("default capacity is not %d", DefaultEventCapacity)
	}
}

func TestEventsRecordOtherObject(t *testing.T) {
	ev := NewEvents(EventsConfig{Clock: clocktesting.NewFakeClock(t0), Logger: slog.New(slog.DiscardHandler)})
	ev.Record(corev1.ObjectReference{Kind: "Manifest", Name: "/etc/crib/pods/bad.yaml"}, corev1.EventTypeWarning, "InvalidManifest", "unknown field")
	e := ev.List().Items[0]
	if e.InvolvedObject.Kind != "Manifest" || e.Namespace != "default" || e.Count != 1 {
		t.Errorf("event = %+v", e)
	}
}
