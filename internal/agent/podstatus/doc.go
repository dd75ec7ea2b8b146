// Package podstatus computes the PodStatus the node agent shows for a pod:
// the kubelet's phase, conditions and container statuses (generateAPIPodStatus
// and its helpers) rewritten for crib, from one snapshot of what the agent
// knows (Facts: the pod, the runtime's view, the containers' waiting
// reasons, the previous status, a pending resize).
//
// It is pure: Compute never talks to the runtime, never reads the clock or
// a store, and the same Facts give the same PodStatus. It also owns the
// words the status is made of, which others match on: the waiting reasons
// the agent sets (Waiting, ReasonContainerCreating, ...), the message of a
// pull in flight (PullingMessage, PullPercent) and the container ID scheme.
// Container IDs in statuses use "crib://<runtime id>" whatever runtime the
// agent drives, because the agent only knows the ID the CRI returned, not
// which runtime is behind the socket.
//
// What is done with a status (stored, served, printed) is package
// statusapi's.
package podstatus
