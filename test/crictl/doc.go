// Package crictl drives crib with the real crictl binary, the way people
// and scripts use a CRI runtime: every CLI verb of a pod's life, against a
// temporary test daemon (internal/testutil), asserting what crictl prints.
//
// It owns no code beyond its tests. The tests need root, runc and crictl
// (installed by shared/conformance/setup.sh at /usr/local/bin/crictl, or on
// PATH); they skip when any is missing. The pull step needs the loopback
// test registry and is skipped alone when it is down.
package crictl
