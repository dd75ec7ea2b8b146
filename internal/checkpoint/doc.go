// Package checkpoint writes a running container's checkpoint archive, the
// one the kubelet's forensic checkpointing asks for (CheckpointContainer)
// and checkpointctl reads: CRIU's images under checkpoint/, config.dump,
// spec.dump, status.dump and status, rootfs-diff.tar of the writable layer
// with deleted.files, CRIU's dump.log and stats-dump, and the container's
// log as container.log. crib's OCI specs carry containerd's annotations,
// so checkpointctl shows such an archive as containerd's.
//
// CRIU does the work through the OCI runtime (runc checkpoint
// --leave-running): the container keeps running. The archive is written to
// a temporary file beside its location (synced when [checkpoint]
// sync_archive asks), then renamed, so that no partial archive is ever at
// the location. Everything a checkpoint makes
// before the rename lives in a work directory of its own whose intent
// record names that temporary file; a failed checkpoint removes both, and
// Recover removes what a daemon killed halfway left.
//
// CheckpointPod and RestorePod (pod.go) build on it: a pod's containers
// paused together, archived one by one into one directory (PodDir) that
// appears whole by a rename, then resumed; and a pod made again from such
// a directory through the sandbox and container managers (Pods), removed
// on failure, or at the next start when the daemon died in it.
package checkpoint
