// Package mount is the one place in crib that calls mount(2) and umount(2).
//
// Other packages describe what they want mounted as Mount values (snapshots
// return them, the sandbox builds them) and hand them here. Unmount helpers
// are idempotent: a target that is not mounted, or does not exist, is not an
// error, so rollback and cleanup paths can call them unconditionally.
package mount
