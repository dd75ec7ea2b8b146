#!/usr/bin/env bash
# Whole-pod benchmarks against their baselines, measured in the same run:
# RunPodSandbox to a running container through crib vs bare `runc run`
# (host network), and crib on a CNI bridge vs the host network vs
# containerd with the same CNI plugins, and PullImage of a new 3-layer
# ~51 MiB image from the loopback registry by crib vs containerd (the
# baseline containerd of ../shared/conformance, started here if it is not
# running), and a pod manifest appearing in `crib agent`'s directory to its
# container running vs the bare CRI start of the same pod
# (BenchmarkAgentPodStart: host network, CNI bridge, and the agent fed the
# snapshot directly), and ListContainers vs StreamContainers over 1,000
# containers (median and p99 of each; then the 50 pods' teardown wall
# time), and a pod in its own user namespace vs the same pod on the host's
# users (on runc v1.5.2, which build-runc.sh makes), and the runtime's
# memory (PSS of daemon and monitors, or containerd and its shims) over 50
# one-container pods. Run as root after scripts/test.sh has installed the
# tools.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -S /run/cri-conformance/ctrd16/containerd.sock ] || ../shared/conformance/containerd-up.sh >/dev/null
go test -run '^$' -bench 'PodStart$|PodStartNetwork|AgentPodStart|PullImage' -benchtime "${BENCHTIME:-30x}" -count "${COUNT:-1}" ./test/bench/
# User namespaces need a runc with id-mapped mounts: the same CNI pod with
# the host's users and in its own user namespace, both on that runc.
runc_bin=$(../shared/conformance/build-runc.sh | tail -n1)
PATH=$(dirname "$runc_bin"):$PATH go test -run '^$' -bench 'PodStartUserNamespace' -benchtime "${BENCHTIME:-30x}" -count "${COUNT:-1}" ./test/bench/
# The CRI log writer: a container's output through a pipe, to a file and to /dev/null.
go test -run '^$' -bench 'LogWriter' -benchtime "${LOG_BENCHTIME:-10x}" -count "${COUNT:-1}" ./internal/monitor/
go test -run '^$' -bench 'MemoryPerPod' -benchtime "${MEMORY_BENCHTIME:-3x}" -count "${COUNT:-1}" ./test/bench/
go test -run '^$' -bench 'ListContainers' -benchtime "${LIST_BENCHTIME:-100x}" -count "${COUNT:-1}" ./test/bench/
# The node under load: 100 clients listing in a loop while 8 workers make and
# delete pods, for two minutes; no error, no leak, and the list latencies.
CRIB_LOAD_DURATION=${LOAD_DURATION:-2m} go test -count=1 -v -run '^TestLoad$' ./test/load/ | grep -E 'load_test.go|^(ok|FAIL|---)'
