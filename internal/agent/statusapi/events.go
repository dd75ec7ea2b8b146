package statusapi

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// DefaultEventCapacity is how many events Events keeps when its config says
// nothing.
const DefaultEventCapacity = 1000

// EventSource is the component name on every event.
const EventSource = "crib-agent"

// EventsConfig configures Events. Every field has a usable zero value.
type EventsConfig struct {
	// Capacity bounds the list; the oldest event goes first. Zero means
	// DefaultEventCapacity.
	Capacity int
	// Clock stamps events; nil means the real clock.
	Clock clock.PassiveClock
	// Logger receives one line per event (Info for Normal, Warn for
	// Warning); nil means slog.Default().
	Logger *slog.Logger
	// Host is the node name put in each event's source.
	Host string
}

// Events keeps the most recent events, oldest first. An event that repeats
// one already kept (same object, type, reason and message) is merged into
// it: its count grows, its last timestamp moves, and it becomes the newest.
type Events struct {
	cfg EventsConfig
	mu  sync.Mutex
	// list is ordered by LastTimestamp, oldest first.
	list []corev1.Event
	seq  uint64
}

// NewEvents returns an empty event list.
func NewEvents(cfg EventsConfig) *Events {
	if cfg.Capacity <= 0 {
		cfg.Capacity = DefaultEventCapacity
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Events{cfg: cfg}
}

// PodRef returns a reference to pod, or to one of its containers when
// container is set (the kubelet's field path "spec.containers{name}").
func PodRef(pod *corev1.Pod, container string) corev1.ObjectReference {
	ref := corev1.ObjectReference{Kind: "Pod", APIVersion: "v1"}
	if pod != nil {
		ref.Namespace, ref.Name, ref.UID = pod.Namespace, pod.Name, pod.UID
		ref.ResourceVersion = pod.ResourceVersion
	}
	if container != "" {
		ref.FieldPath = fmt.Sprintf("spec.containers{%s}", container)
	}
	return ref
}

// Event records an event about pod; eventType is corev1.EventTypeNormal or
// corev1.EventTypeWarning.
func (e *Events) Event(pod *corev1.Pod, eventType, reason, message string) {
	e.Record(PodRef(pod, ""), eventType, reason, message)
}

// ContainerEvent records an event about one container of pod.
func (e *Events) ContainerEvent(pod *corev1.Pod, container, eventType, reason, message string) {
	e.Record(PodRef(pod, container), eventType, reason, message)
}

// Record records an event about any object, e.g. a manifest file that
// could not be read (Kind "Manifest", Name its path).
func (e *Events) Record(obj corev1.ObjectReference, eventType, reason, message string) {
	e.log(obj, eventType, reason, message)
	now := metav1.NewTime(e.cfg.Clock.Now())

	e.mu.Lock()
	defer e.mu.Unlock()
	for i := len(e.list) - 1; i >= 0; i-- {
		ev := e.list[i]
		if ev.InvolvedObject == obj && ev.Type == eventType && ev.Reason == reason && ev.Message == message {
			ev.Count++
			ev.LastTimestamp = now
			copy(e.list[i:], e.list[i+1:])
			e.list[len(e.list)-1] = ev
			return
		}
	}
	e.seq++
	ns := obj.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	ev := corev1.Event{
		TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			// The kubelet names events <object>.<unique hex>; a sequence
			// number is unique enough for one agent.
			Name:      fmt.Sprintf("%s.%x%04x", obj.Name, now.UnixNano(), e.seq&0xffff),
			Namespace: ns,
		},
		InvolvedObject: obj,
		Reason:         reason,
		Message:        message,
		Source:         corev1.EventSource{Component: EventSource, Host: e.cfg.Host},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
		Type:           eventType,
	}
	if len(e.list) >= e.cfg.Capacity {
		n := len(e.list) - e.cfg.Capacity + 1
		e.list = append(e.list[:0], e.list[n:]...)
	}
	e.list = append(e.list, ev)
}

func (e *Events) log(obj corev1.ObjectReference, eventType, reason, message string) {
	level := slog.LevelInfo
	if eventType == corev1.EventTypeWarning {
		level = slog.LevelWarn
	}
	attrs := []any{"pod", obj.Namespace + "/" + obj.Name, "reason", reason, "message", message}
	if obj.Kind != "Pod" {
		attrs[0], attrs[1] = "object", obj.Kind+" "+obj.Name
	}
	if obj.FieldPath != "" {
		attrs = append(attrs, "field", obj.FieldPath)
	}
	e.cfg.Logger.Log(context.Background(), level, "event", attrs...)
}

// List returns a copy of the kept events, oldest first.
func (e *Events) List() *corev1.EventList {
	e.mu.Lock()
	items := make([]corev1.Event, len(e.list))
	for i := range e.list {
		e.list[i].DeepCopyInto(&items[i])
	}
	e.mu.Unlock()
	return &corev1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}, Items: items}
}
