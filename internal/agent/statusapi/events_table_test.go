package statusapi

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// The events table is kubectl's: an event seen again shows its count, a
// container's event names the container, and a pod filter keeps that
// pod's events alone, by name or namespace/name.
func TestWriteEvents(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := clocktesting.NewFakePassiveClock(now.Add(-time.Minute))
	ev := NewEvents(EventsConfig{Clock: clock})
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	refused := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "refused"}}
	ev.Event(web, corev1.EventTypeNormal, "Started", "Started container app")
	ev.ContainerEvent(refused, "app", corev1.EventTypeWarning, "Failed", "Error: create container: validator plugin 50-x failed:\nno")
	clock.SetTime(now.Add(-10 * time.Second))
	ev.ContainerEvent(refused, "app", corev1.EventTypeWarning, "Failed", "Error: create container: validator plugin 50-x failed:\nno")

	var all, one bytes.Buffer
	if err := WriteEvents(&all, ev.List(), "", now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(all.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "LAST SEEN") ||
		!strings.Contains(lines[1], "Started") || !strings.Contains(lines[1], "pod/web") ||
		!strings.HasPrefix(lines[2], "10s (x2 over 60s)") || !strings.Contains(lines[2], "pod/refused spec.containers{app}") ||
		!strings.HasSuffix(lines[2], "validator plugin 50-x failed: no") {
		t.Errorf("events table:\n%s", all.String())
	}
	for _, filter := range []string{"refused", "default/refused"} {
		one.Reset()
		if err := WriteEvents(&one, ev.List(), filter, now); err != nil {
			t.Fatal(err)
		}
		if got := strings.Split(strings.TrimSpace(one.String()), "\n"); len(got) != 2 || !strings.Contains(got[1], "pod/refused") {
			t.Errorf("events of %s:\n%s", filter, one.String())
		}
	}
}
