// Package kuberuntime carries a pod's plan out over the CRI: it observes
// what the runtime holds for each pod (from the labels the agent stored),
// asks package plan what to do, and does it in the kubelet's order — kill,
// sandbox, sidecars to restart, next init container, app containers — with
// image pull policies, crash-loop and pull backoff, lifecycle hooks and
// graceful termination. A pod is killed app containers first, then its
// sidecars (init containers with restartPolicy Always) one at a time in
// reverse spec order, then its sandbox.
//
// It talks to the runtime only through cri-api's RuntimeService and
// ImageManagerService interfaces, so any CRI runtime will do. It keeps no
// state that a restart could lose: everything it needs to adopt a running
// pod is in the runtime's labels and annotations; what it does keep in
// memory (why a container is waiting, backoff timers) is advisory.
package kuberuntime
