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
// pod is in the runtime's labels and annotations. It keeps nothing per pod
// either: what it learns of a pod (its observation, why its containers
// wait) goes back to the caller, whose record of the pod holds it; only
// the backoff timers live on here, and they are advisory.
package kuberuntime
