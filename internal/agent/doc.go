// Package agent is crib's node agent: the kubelet's pod lifecycle without a
// cluster. It wires a manifest source, the pod workers, the runtime
// executor (kuberuntime), the prober, the volume manager and the status
// API together and runs the sync loop that feeds them.
//
// The loop reacts to four inputs — manifest snapshots, a relist of the
// runtime every second, a periodic resync and housekeeping — and each one
// only names pods that need a sync; the sync itself runs on that pod's
// worker. The agent talks to the runtime through cri-api's interfaces only.
// Stopping the agent leaves pods running: the next agent adopts them from
// the runtime's labels.
package agent
