package container

import "time"

// Tracer is told how long the phases of container starts take, by pod,
// e.g. for metrics and a per-pod trace in the log; EndPod ends the trace
// of a pod's start when its first container started (later calls do
// nothing). Its methods must not block.
type Tracer interface {
	PodPhase(pod, phase string, d time.Duration)
	EndPod(pod string, err error)
}

// The phases timed here.
const (
	phaseImageResolve = "image_resolve"
	phaseSpec         = "spec"
	phaseRuntimeStart = "runtime_start"
)

// noTracer traces nothing: a Manager without a Tracer uses it.
type noTracer struct{}

func (noTracer) PodPhase(string, string, time.Duration) {}
func (noTracer) EndPod(string, error)                   {}
