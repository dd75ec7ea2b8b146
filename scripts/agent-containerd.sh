#!/usr/bin/env bash
# Runs the node agent's scenario suite (test/agent) against Debian's
# containerd instead of a crib daemon, as issue #5 asks.
#
# Usage: scripts/agent-containerd.sh [--v2] [go test flags...]
#   --v2   containerd 2.x from ../shared/conformance/build-containerd2.sh
#          instead of Debian's 1.6
#   Other arguments go to `go test` (default: -run TestScenarios -v).
# Environment: CRI_CONFORMANCE_DIR (default ../shared/conformance beside
# the repository).
#
# It starts the loopback registry (images.sh) when it does not answer and
# containerd (containerd-up.sh) when that instance is not running, runs the
# suite with CRIB_AGENT_TEST_ENDPOINT set to containerd's socket, and stops
# again what it started (containerd-down.sh, images.sh --stop), also on
# failure. The exit status is go test's. Needs root.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONF=${CRI_CONFORMANCE_DIR:-$ROOT/../shared/conformance}
[ -f "$CONF/lib.sh" ] || { echo "agent-containerd.sh: no conformance harness in $CONF" >&2; exit 1; }
. "$CONF/lib.sh"

V2=()
if [ "${1:-}" = "--v2" ]; then
	V2=(--v2)
	shift
	instance_paths ctrd2
else
	instance_paths ctrd16
fi
[ "$(id -u)" = 0 ] || die "run as root"
command -v containerd >/dev/null || [ ${#V2[@]} -gt 0 ] || die "containerd is not installed"

started_registry=0
started_containerd=0
cleanup() {
	local rc=$?
	if [ $started_containerd = 1 ]; then
		"$CONF/containerd-down.sh" "${V2[@]}" >&2 || log "WARNING: containerd-down.sh failed"
	fi
	if [ $started_registry = 1 ]; then
		"$CONF/images.sh" --stop >&2 || log "WARNING: images.sh --stop failed"
	fi
	exit $rc
}
trap cleanup EXIT

if ! registry_up; then
	log "starting the loopback registry (images.sh)"
	"$CONF/images.sh" >&2
	started_registry=1
fi
if ! { [ -S "$INST_SOCK" ] && [ -f "$INST_PID" ] && kill -0 "$(cat "$INST_PID")" 2>/dev/null; }; then
	started_containerd=1
fi
endpoint=$("$CONF/containerd-up.sh" "${V2[@]}")
[ -n "$endpoint" ] || die "containerd-up.sh printed no endpoint"

args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-run TestScenarios -v)
log "go test ./test/agent/ against $endpoint"
cd "$ROOT"
CRIB_AGENT_TEST_ENDPOINT=$endpoint go test -count=1 ./test/agent/ "${args[@]}"
