// Package volume prepares a pod's volumes on the host before its containers
// are created and removes them when the pod is gone: the kubelet's volume
// manager, for an agent that has no API server.
//
// Every pod owns one directory, <Root>/<uid>. Its volumes live in
// <Root>/<uid>/volumes/<plugin>/<name> (plugin names follow the kubelet's:
// kubernetes.io~empty-dir, kubernetes.io~configmap, ...), and the files that
// receive container termination messages in
// <Root>/<uid>/containers/<name>/<restartCount>/termination-log. hostPath
// volumes are checked (and created for the *OrCreate types) but live where the
// manifest says; nothing under the pod directory refers to them.
//
// Supported sources: emptyDir (a directory, or a tmpfs for medium Memory),
// hostPath with the kubelet's type checks, configMap and secret (from the
// ConfigMap and Secret manifests the caller hands in), downwardAPI (metadata
// fields only) and projected (configMap, secret and downwardAPI sources).
// Everything else is refused with an ErrInvalidArgument-class error naming
// the volume and its type. configMap, secret, downwardAPI and projected
// contents are written the way the kubelet's atomic writer does it: files go
// into a fresh timestamped directory, a "..data" symlink is swapped to it
// with rename(2), and the names a container sees are symlinks through
// "..data", so a reader sees either the old or the new set of files, never a
// mixture. secret and projected volumes live on a tmpfs so that secret bytes
// never reach a disk; it is sized when first mounted to four times the pages
// the data needs, at least 16 MiB (a cap, not a reservation), and an update
// that no longer fits fails with ErrFailedPrecondition until the pod is
// recreated. A medium Memory emptyDir's tmpfs has sizeLimit as its size, or
// the kernel's default (half of RAM) without one. Every tmpfs is nosuid,nodev.
// ReadOnly tells the caller which volumes must be mounted read-only.
//
// PrepareSubPath makes a volumeMount's subPath safe to mount, as the kubelet
// does since CVE-2017-1002101: the subPath is opened component by component
// under the volume without following symlinks (a symlink on the way must
// resolve inside the volume; missing directories are created), and the
// object opened is bind-mounted through its descriptor on
// <Root>/<uid>/volume-subpaths/<volume>/<container>/<index>, the path the
// runtime then mounts. A symlink a container planted in its volume can
// therefore never make the runtime mount a host path.
//
// The package does not bind-mount anything into containers (the runtime does
// that from the paths Prepare and PrepareSubPath return), does not evict pods (Usage and
// OverLimit give the agent what it needs to decide), and keeps no state in
// memory: what is on disk and in /proc/self/mountinfo is the truth, so an
// agent restart or a crash half-way through Prepare needs no recovery beyond
// calling Prepare or Remove again. Only internal/mount calls mount(2).
//
// Invariants: Prepare is idempotent (an emptyDir keeps its content, a tmpfs
// is never mounted twice, unchanged configMap data is not rewritten);
// PrepareSubPath never stacks mounts on one target; Remove
// unmounts every mount under the pod directory before deleting anything,
// refuses to delete while any mount remains, and never follows a symlink
// (a container may plant symlinks in its emptyDir).
package volume
