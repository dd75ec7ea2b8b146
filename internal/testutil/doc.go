// Package testutil holds what crib's tests share: RequiresRoot, a crib
// binary built once per test binary, the busybox test image, and temporary
// daemons (StartDaemon) that run `crib daemon` as a child process in their
// own short-lived directories and are driven over their CRI socket.
//
// It owns nothing of crib's runtime; it only starts the real binary. Every
// daemon it starts is torn down at t.Cleanup: its pods are removed over the
// CRI, the daemon is stopped, and a leak check fails the test if a mount, a
// runc container, a crib process, a cgroup or a sandbox or container
// directory of that daemon is left; whatever leaked is then cleaned up by
// force so that later tests start from a clean machine.
//
// The binary and the image are built lazily and cached for the life of the
// test binary (the only package-level state here); a TestMain that uses
// them must end with Main(m) so that their temporary directory is removed.
package testutil
