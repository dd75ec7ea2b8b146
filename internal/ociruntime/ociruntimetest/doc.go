// Package ociruntimetest builds real OCI bundles for tests that drive runc:
// a busybox root filesystem in a temporary directory and a config.json
// derived from `runc spec`. Tests that use it need root, runc and
// /bin/busybox (Debian's busybox-static); it skips them otherwise.
package ociruntimetest
