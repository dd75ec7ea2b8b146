// Package bench holds whole-pod benchmarks of a real crib daemon against a
// baseline measured in the same run. They need root, runc and the busybox
// test image; run them with scripts/bench.sh.
package bench
