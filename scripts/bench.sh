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
# time). Run as root after scripts/test.sh has installed the
# tools.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -S /run/cri-conformance/ctrd16/containerd.sock ] || ../shared/conformance/containerd-up.sh >/dev/null
go test -run '^$' -bench 'PodStart|AgentPodStart|PullImage' -benchtime "${BENCHTIME:-30x}" -count "${COUNT:-1}" ./test/bench/
go test -run '^$' -bench 'ListContainers' -benchtime "${LIST_BENCHTIME:-100x}" -count "${COUNT:-1}" ./test/bench/
