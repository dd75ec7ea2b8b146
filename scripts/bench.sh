#!/usr/bin/env bash
# crib's benchmarks against their baselines, each measured in the same run
# (test/bench, internal/monitor), then one table of issue #15's figures:
# containerd | floor | crib | ratios | goal (scripts/bench-summary).
#
# The baseline is Debian's containerd 1.6 of ../shared/conformance with the
# same runc, busybox image (the loopback registry's) and CNI plugins; it is
# started here when it is not running, and then stopped at the end. The
# floors are bare `runc run -d` on runc's default spec (pod start), an
# in-process remote.Image fetch and untar (pull), and the CRI log writer to
# /dev/null. In order:
#   - ListContainers at 1,000 containers in 50 pods, crib and containerd
#     (median, p99), then the 50 pods' stop + remove wall time and the
#     daemon's RSS idle and after (first, so containerd's idle is fresh);
#   - pod start: host network (crib, bare runc, containerd), CNI bridge
#     (crib, containerd), a manifest through `crib agent` vs the bare CRI
#     start, and a pod in its own user namespace vs the host's users (on
#     runc v1.5.2, which build-runc.sh makes);
#   - a single pod's teardown (StopPodSandbox, RemovePodSandbox) on runc
#     v1.5.2: crib, crib on Debian's runc, containerd;
#   - PullImage of a new 3-layer ~51 MiB image: crib, containerd, floor;
#   - container stdout -> CRI log end to end (crib, containerd), and the
#     log writer in process (file vs /dev/null);
#   - runtime memory (PSS) per pod over 50 one-container pods, then over
#     50 pods of three containers;
#   - with SCALE=1, 1,000 host-network pods 8 at a time, crib then
#     containerd (about 15 minutes more on a 2-core machine, most of it
#     containerd's); SCALE=cni adds the same on a CNI bridge;
#   - the load test: 100 clients listing every 100 ms while 8 workers make
#     and delete 2 pods a second for LOAD_DURATION (2m), then both in closed
#     loops for CLOSED_LOAD_DURATION (1m); no error and no leak.
# Iterations: BENCHTIME (30x) and the per-benchmark variables below; COUNT
# (1) runs of each, whose median the table shows. Run as root after
# scripts/test.sh has installed the tools.
set -euo pipefail
cd "$(dirname "$0")/.."

out=$(mktemp /tmp/crib-bench.XXXXXX)
started_containerd=0
cleanup() {
	rm -f "$out"
	if [ "$started_containerd" = 1 ]; then
		../shared/conformance/containerd-down.sh >/dev/null 2>&1 || echo "bench.sh: containerd-down.sh failed" >&2
	fi
}
trap cleanup EXIT
if ! [ -S /run/cri-conformance/ctrd16/containerd.sock ]; then
	started_containerd=1
	# containerd keeps every descriptor containerd-up.sh had: without this,
	# it would hold the lock of `flock /tmp/crib-heavy.lock scripts/bench.sh`
	# for as long as it runs.
	(
		for fd in /proc/$BASHPID/fd/*; do
			fd=${fd##*/}
			[ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null
		done
		exec ../shared/conformance/containerd-up.sh >/dev/null
	)
fi

# bench PACKAGE REGEX BENCHTIME: one `go test -bench`, its output kept for
# the table. A failure is reported at the end; the other benchmarks run.
failed=0
bench() {
	go test -run '^$' -bench "$2" -benchtime "$3" -count "${COUNT:-1}" "$1" | tee -a "$out" || failed=1
}

bench ./test/bench/ 'ListContainers' "${LIST_BENCHTIME:-100x}"
bench ./test/bench/ 'PodStart$|PodStartNetwork|AgentPodStart' "${BENCHTIME:-30x}"
# User namespaces need a runc with id-mapped mounts: the same CNI pod with
# the host's users and in its own user namespace, both on that runc.
runc_bin=$(../shared/conformance/build-runc.sh | tail -n1)
PATH=$(dirname "$runc_bin"):$PATH bench ./test/bench/ 'PodStartUserNamespace' "${BENCHTIME:-30x}"
PATH=$(dirname "$runc_bin"):$PATH bench ./test/bench/ 'PodTeardown' "${BENCHTIME:-30x}"
# Pod start on crib's crun handler against the bare runc floor, on that runc.
CRIB_BENCH_CRUN=$(scripts/build-crun.sh | tail -n1) PATH=$(dirname "$runc_bin"):$PATH \
	bench ./test/bench/ 'PodStartCrun' "${BENCHTIME:-30x}"
bench ./test/bench/ 'PullImage' "${PULL_BENCHTIME:-10x}"
bench ./test/bench/ 'ContainerLog' "${CONTAINER_LOG_BENCHTIME:-3x}"
bench ./internal/monitor/ 'LogWriter' "${LOG_BENCHTIME:-10x}"
bench ./test/bench/ 'MemoryPerPod' "${MEMORY_BENCHTIME:-3x}"
# The same with pods of three containers (issue #26): printed, not in the
# table, whose rows are the 1-container pod's.
CRIB_BENCH_MEMORY_CONTAINERS=3 go test -run '^$' -bench 'MemoryPerPod' -benchtime "${MEMORY_BENCHTIME:-3x}" ./test/bench/ || failed=1
if [ "${SCALE:-0}" = 1 ] || [ "${SCALE:-0}" = cni ]; then
	bench ./test/bench/ 'Scale' 1x
fi
if [ "${SCALE:-0}" = cni ]; then
	CRIB_BENCH_SCALE_NETWORK=cni bench ./test/bench/ 'Scale' 1x
fi
# The node under load: 100 clients listing every 100 ms while 8 workers make
# and delete 2 pods a second, for two minutes; then both as closed loops for
# one, which shows what the machine serves when nothing waits. No error, no
# leak, and the list latencies (the clients' and the daemon's own).
for load in "100ms 4s ${LOAD_DURATION:-2m}" "0 0 ${CLOSED_LOAD_DURATION:-1m}"; do
	read -r list_every pod_every load_for <<<"$load"
	CRIB_LOAD_LIST_INTERVAL=$list_every CRIB_LOAD_POD_INTERVAL=$pod_every CRIB_LOAD_DURATION=$load_for \
		go test -count=1 -v -run '^TestLoad$' ./test/load/ | grep -E 'load_test.go|^(ok|FAIL|---)' || failed=1
done

echo
echo "Issue #15's figures (median of COUNT=${COUNT:-1} runs; ratio = crib / baseline, lower is better for times and memory, higher for rates):"
go run ./scripts/bench-summary <"$out"
echo "bench.sh took ${SECONDS} s"
[ "$failed" = 0 ] || { echo "bench.sh: a benchmark failed (above)" >&2; exit 1; }
