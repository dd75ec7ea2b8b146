package sandbox

import (
	"errors"
	"time"
)

// Tracer is told how long the phases of pod starts take, e.g. for
// metrics and a per-pod trace in the log. A pod's start is begun here, in
// Run, and ended by its first container's start (or by its failure or
// removal). Its methods must not block.
type Tracer interface {
	BeginPod(pod string)
	PodPhase(pod, phase string, d time.Duration)
	EndPod(pod string, err error)
}

// The phases timed here.
const (
	phaseNamespaces = "namespaces"
	phaseCNIAdd     = "cni_add"
)

// errRemovedUnstarted ends the trace of a pod removed before any of its
// containers started.
var errRemovedUnstarted = errors.New("sandbox removed before a container started")

// noTracer traces nothing: a Manager without a Tracer uses it.
type noTracer struct{}

func (noTracer) BeginPod(string)                        {}
func (noTracer) PodPhase(string, string, time.Duration) {}
func (noTracer) EndPod(string, error)                   {}

// timed runs fn as phase of pod's start.
func (m *Manager) timed(pod, phase string, fn func() error) error {
	began := time.Now()
	err := fn()
	m.cfg.Tracer.PodPhase(pod, phase, time.Since(began))
	return err
}
