// Package agent is crib's node agent: the kubelet's pod lifecycle without a
// cluster. It wires a manifest source, the pod workers, the runtime
// executor (kuberuntime), the prober, the volume manager and the status
// API together and runs the sync loop that feeds them.
//
// The loop reacts to four inputs — manifest snapshots, a relist of the
// runtime every second, a periodic resync and housekeeping — and each one
// only names pods that need a sync; the sync itself runs on that pod's
// worker.
//
// Everything the agent knows of a pod is in one record (podRecord) with
// the pod's phase: syncing while a manifest asks for it, terminating once
// none does, terminated when its teardown is done. The pod table
// (podTable) keeps the records and alone changes them, each change a
// method named for what happened. A sync observes the pod, then runs it
// (admission, plan, actions, status) or tears it down, by that phase,
// working on the copies of the record the table hands it; what the
// runtime executor learns comes back to the table. A status is computed
// from one copy of the record and what the runtime shows (statusOf); the
// status API's store is written, never read back.
//
// The agent talks to the runtime through cri-api's interfaces only.
// Stopping the agent leaves pods running: the next agent adopts them from
// the runtime's labels.
package agent
