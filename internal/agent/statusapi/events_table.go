package statusapi

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// WriteEvents prints events the way `kubectl get events` does, oldest
// first: LAST SEEN (with the count of an event seen more than once), TYPE,
// REASON, OBJECT (kind/name, and the container of a container's event),
// MESSAGE. A pod, NAME or NAMESPACE/NAME, keeps only that pod's events.
func WriteEvents(w io.Writer, events *corev1.EventList, pod string, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
	for i := range events.Items {
		ev := &events.Items[i]
		o := ev.InvolvedObject
		if pod != "" && (o.Kind != "Pod" || pod != o.Name && pod != o.Namespace+"/"+o.Name) {
			continue
		}
		seen := age(ev.LastTimestamp.Time, now)
		if ev.Count > 1 {
			seen += fmt.Sprintf(" (x%d over %s)", ev.Count, age(ev.FirstTimestamp.Time, now))
		}
		object := strings.ToLower(o.Kind) + "/" + o.Name
		if o.FieldPath != "" {
			object += " " + o.FieldPath
		}
		// One line per event, as kubectl prints it.
		msg := strings.ReplaceAll(ev.Message, "\n", " ")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", seen, ev.Type, ev.Reason, object, msg)
	}
	return tw.Flush()
}
