#!/usr/bin/env bash
# Whole-pod benchmarks against their baselines, measured in the same run:
# RunPodSandbox to a running container through crib vs bare `runc run`.
# Run as root after scripts/test.sh has installed the tools.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench 'PodStart' -benchtime "${BENCHTIME:-30x}" -count "${COUNT:-1}" ./test/bench/
