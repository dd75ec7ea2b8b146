#!/usr/bin/env bash
# Runs critest (../shared/conformance) against a fresh crib in throwaway
# directories and fails unless every spec did what expected.txt says
# (critestcheck: passed, skipped for its listed cause, or as crib's
# reported features decide) and critest exited cleanly. Prints the
# pass/fail/skip counts.
#
# Usage: test/conformance/run.sh [extra critest args]
# Needs root, crictl/critest (../shared/conformance/setup.sh) and the
# loopback registry (../shared/conformance/images.sh).
# Environment: CRIB_BIN, a crib binary to run instead of building one (with
# crib-monitor and critestcheck beside it); CRIB_REQUIRE_USERNS=1: crib must
# report user namespaces and recursive read-only mounts;
# CRIB_CGROUP_DRIVER=systemd for the systemd cgroup driver (pods then go
# under a slice of this run's own); CRIB_RUNTIME, an OCI runtime binary
# (crun) to make the default handler, named after its base name, instead
# of runc.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
conformance=$(cd "$repo/../shared/conformance" && pwd)

work=$(mktemp -d /tmp/crib-critest-XXXXXX)
# Traversable, as /var/lib is: the root of a pod in its own user namespace
# reaches its rootfs through here.
chmod 711 "$work"
bridge=cribct0
# Pods go under a cgroup of this run's own, removed at the end: a directory,
# or with the systemd driver a slice (no dashes: they would nest it).
driver=${CRIB_CGROUP_DRIVER:-cgroupfs}
cgroup_parent=/$(basename "$work")
if [ "$driver" = systemd ]; then
	cgroup_parent=$(basename "$work" | tr -d -- '-_').slice
fi
daemon_pid=
cleanup() {
	if [ -n "$daemon_pid" ]; then
		crictl --config /dev/null -r "unix://$work/run/crib.sock" rmp -af >/dev/null 2>&1 || true
		kill "$daemon_pid" 2>/dev/null || true
		wait "$daemon_pid" 2>/dev/null || true
	fi
	ip link del "$bridge" 2>/dev/null || true
	if [ "$driver" = systemd ]; then
		systemctl stop "${cgroup_parent%.slice}*" 2>/dev/null || true
		systemctl reset-failed "${cgroup_parent%.slice}*" 2>/dev/null || true
	fi
	for dir in /sys/fs/cgroup/*"$cgroup_parent" /sys/fs/cgroup/"$cgroup_parent"; do
		[ -d "$dir" ] && find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

handler=runc
[ -z "${CRIB_RUNTIME:-}" ] || handler=$(basename "$CRIB_RUNTIME")
cat > "$work/crib.toml" <<TOML
default_runtime = "$handler"
root = "$work/root"
state = "$work/run"
socket = "$work/run/crib.sock"
cgroup_driver = "$driver"
cgroup_parent = "$cgroup_parent"

[network]
conf_dir = "$work/cni"
name = "crib-critest"
bridge = "$bridge"
subnet = "10.89.0.0/16"
TOML
if [ -n "${CRIB_RUNTIME:-}" ]; then
	printf '[runtimes."%s"]\npath = "%s"\n' "$handler" "$CRIB_RUNTIME" >> "$work/crib.toml"
fi
# critest pulls from these hosts; the loopback registry stands in for them.
for host in registry.k8s.io k8s.gcr.io gcr.io public.ecr.aws; do
	printf '[registries."%s"]\nmirrors = ["http://127.0.0.1:5000"]\n' "$host" >> "$work/crib.toml"
done

critestcheck=$work/critestcheck
if [ -n "${CRIB_BIN:-}" ]; then
	cp "$CRIB_BIN" "$work/crib"
	cp "$(dirname "$CRIB_BIN")/crib-monitor" "$work/crib-monitor"
	cp "$(dirname "$CRIB_BIN")/critestcheck" "$critestcheck"
else
	(cd "$repo" && CGO_ENABLED=0 go build -o "$work/" ./cmd/crib ./cmd/crib-monitor ./test/conformance/critestcheck)
fi
"$work/crib" daemon --config "$work/crib.toml" > "$work/crib.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do [ -S "$work/run/crib.sock" ] && break; sleep 0.1; done
[ -S "$work/run/crib.sock" ] || { cat "$work/crib.log"; exit 1; }

# Not run: the digest spec pulls an upstream image that cannot exist
# offline.
skip='public image with digest'
report=${REPORT_DIR:-$work/report}
mkdir -p "$report"
# What crib reports decides which feature-gated specs must run (expected.txt).
crictl --config /dev/null -r "unix://$work/run/crib.sock" info -o json > "$report/info.json"
status=0
REPORT_DIR=$report "$conformance/run-critest.sh" "unix://$work/run/crib.sock" \
	--ginkgo.skip="$skip" "$@" > "$work/critest.out" 2>&1 || status=$?
if [ ! -s "$report/report.json" ]; then
	tail -50 "$work/critest.out"
	echo "critest wrote no report (exit $status)" >&2
	exit 1
fi
grep -E '^(failed|panicked|timedout|interrupted|aborted|skipped) ' "$report/summary.txt" | sed 's/^/  /' || true
# The run is read whole: every spec's state against expected.txt, suite
# nodes, specs that did not run, and critest's exit status.
check=(-expected "$here/expected.txt" -report "$report/report.json" -info "$report/info.json" -exit "$status")
[ $# -eq 0 ] || check+=(-partial)
[ -z "${CRIB_REQUIRE_USERNS:-}" ] || check+=(-require userNamespaces,recursiveReadOnlyMounts,supplementalGroupsPolicy)
if ! "$critestcheck" "${check[@]}"; then
	echo "--- critest's output (last 30 lines) ---"
	tail -30 "$work/critest.out"
	echo "--- crib log (last 100 lines) ---"
	tail -100 "$work/crib.log"
	exit 1
fi
