// Package integration holds end-to-end tests that build crib, start real
// `crib daemon` processes in temporary directories (internal/testutil) and
// drive them over their CRI socket with real runc and the busybox test
// image: pod and container lifecycle, namespace sharing, host network, CRI
// logs, ExecSync, daemon restarts, bad requests and stop signals.
//
// The tests need root and skip without it; every test ends with the
// harness's leak check (no mount, runc container, crib process, cgroup or
// state directory of its daemon left behind).
package integration
