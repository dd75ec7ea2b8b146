// Package userns gives each pod with hostUsers: false its own range of
// 65536 host ids, out of the node's range, as the kubelet's user namespace
// manager does.
//
// The node's range is the "kubelet" entry of /etc/subuid and /etc/subgid
// (the two must agree), or, without one, every id from 65536 up
// (DefaultRange); NodeRange reads it from the files' contents, pure. It is
// cut into blocks of 65536 ids; the Allocator, pure, hands them out one per
// pod, never the same block to two pods, lowest free block first.
//
// The Manager persists each pod's block as the file "userns" in the pod's
// directory (<root>/<uid>/userns, the kubelet's name and JSON layout)
// before the caller creates the pod's sandbox with it, written atomically
// (a temporary file renamed over it, then the directory synced), so that a
// crash leaves either no file or a whole one. Load, called once before any
// pod is synced, records the blocks of every pod directory's file; a file
// that is not a valid mapping of the node's range is ignored and logged.
// A pod's block is freed when its directory is removed (Release), the file
// going with the directory: a crash between the two leaves no file, so
// nothing is held after a restart.
package userns
