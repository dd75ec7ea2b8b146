package statusapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HandlerOption configures Handler.
type HandlerOption func(*handler)

// WithHealthCheck makes /healthz answer 500 with the error's text when
// check fails; without it /healthz always answers "ok".
func WithHealthCheck(check func() error) HandlerOption {
	return func(h *handler) { h.health = check }
}

type handler struct {
	store   *Store
	events  *Events
	metrics *Metrics
	health  func() error
}

// Handler serves the agent's read-only API:
//
//	GET /pods                  PodList with statuses, like the kubelet's
//	GET /pods/<ns>/<name>      one Pod, or a 404 Status
//	GET /events                EventList, oldest first
//	GET /manifests             [{"path", "message"}] of unusable manifests
//	GET /healthz               "ok"
//	GET /metrics               Prometheus text format
//
// HEAD is answered like GET, without a body. Any other path is 404 and any
// other method 405, both as a JSON metav1.Status.
// events and metrics may be nil.
func Handler(store *Store, events *Events, metrics *Metrics, opts ...HandlerOption) http.Handler {
	h := &handler{store: store, events: events, metrics: metrics}
	for _, o := range opts {
		o(h)
	}
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			fmt.Sprintf("method %s is not allowed", r.Method))
		return
	}
	path := r.URL.Path
	switch {
	case path == "/pods" || path == "/pods/":
		writeJSON(w, h.store.List())
	case strings.HasPrefix(path, "/pods/"):
		h.servePod(w, strings.TrimPrefix(path, "/pods/"))
	case path == "/events":
		list := &corev1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}, Items: []corev1.Event{}}
		if h.events != nil {
			list = h.events.List()
		}
		writeJSON(w, list)
	case path == "/manifests":
		writeJSON(w, h.store.SourceErrors())
	case path == "/healthz":
		h.serveHealth(w)
	case path == "/metrics":
		h.serveMetrics(w)
	default:
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("no such path %q", path))
	}
}

func (h *handler) servePod(w http.ResponseWriter, rest string) {
	ns, name, ok := strings.Cut(rest, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound,
			fmt.Sprintf("no such path %q: want /pods/<namespace>/<name>", "/pods/"+rest))
		return
	}
	pod, found := h.store.Lookup(ns, name)
	if !found {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("pod %s/%s not found", ns, name))
		return
	}
	pod.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	writeJSON(w, pod)
}

func (h *handler) serveHealth(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if h.health != nil {
		if err := h.health(); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "unhealthy: %v\n", err)
			return
		}
	}
	fmt.Fprint(w, "ok")
}

func (h *handler) serveMetrics(w http.ResponseWriter) {
	w.Header().Set("Content-Type", TextContentType)
	if h.metrics == nil {
		return
	}
	h.refreshGauges()
	_, _ = h.metrics.WriteTo(w) // the client went away; nothing to tell it
}

// refreshGauges sets the pod and manifest gauges from the store, every
// phase present so that a phase going to zero shows as zero.
func (h *handler) refreshGauges() {
	counts := map[corev1.PodPhase]int{
		corev1.PodPending: 0, corev1.PodRunning: 0, corev1.PodSucceeded: 0,
		corev1.PodFailed: 0, corev1.PodUnknown: 0,
	}
	for _, p := range h.store.List().Items {
		ph := p.Status.Phase
		if ph == "" {
			ph = corev1.PodPending
		}
		counts[ph]++
	}
	for ph, n := range counts {
		h.metrics.Pods.Set(float64(n), string(ph))
	}
	h.metrics.ManifestErrors.Set(float64(len(h.store.SourceErrors())))
}

func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, fmt.Sprintf("encode response: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(body, '\n'))
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  message,
		Reason:   reason,
		Code:     int32(code),
	}
	body, _ := json.Marshal(st) // a Status always encodes
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}

// Serve listens on addr (e.g. "127.0.0.1:10255") and serves h until ctx
// ends, then shuts down gracefully. It returns nil after a shutdown caused
// by ctx.
func Serve(ctx context.Context, addr string, h http.Handler) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ServeListener(ctx, ln, h)
}

// ServeListener is Serve on a listener the caller opened (tests listen on
// port 0 to learn the address). It closes ln.
func ServeListener(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		select {
		case <-ctx.Done():
		case <-stop:
			done <- nil
			return
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		done <- srv.Shutdown(sctx)
	}()
	err := srv.Serve(ln)
	if !errors.Is(err, http.ErrServerClosed) {
		close(stop)
		<-done
		return fmt.Errorf("serve status API on %s: %w", ln.Addr(), err)
	}
	if err := <-done; err != nil {
		return fmt.Errorf("shut down status API: %w", err)
	}
	return nil
}
