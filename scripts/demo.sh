#!/usr/bin/env bash
# Builds crib and a busybox image, starts crib on its embedded defaults
# (state in throwaway directories; pod network: crib's default CNI bridge,
# crib0 on 10.88.0.0/16, written to /etc/cni/net.d when that is empty),
# runs a pod that prints to its log, shows the log and cleans up. Run as
# root on Debian.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v runc >/dev/null || need+=(runc)
dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
dpkg -s containernetworking-plugins >/dev/null 2>&1 || need+=(containernetworking-plugins iptables)
if [ ${#need[@]} -gt 0 ]; then
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi

work=$(mktemp -d /tmp/crib-demo-XXXXXX)
daemon_pid=
cleanup() {
	[ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

echo "== building crib"
go build -o bin/crib ./cmd/crib
echo "== building the busybox image"
scripts/build-busybox-image.sh "$work/busybox.tar"
echo "== starting crib"
bin/crib daemon --root "$work/root" --state "$work/run" > "$work/crib.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do [ -S "$work/run/crib.sock" ] && break; sleep 0.1; done
[ -S "$work/run/crib.sock" ] || { cat "$work/crib.log"; exit 1; }
bin/crib image load --state "$work/run" "$work/busybox.tar"
echo "== running a pod"
go run ./scripts/demo -socket "$work/run/crib.sock"
echo "== crib's log"
cat "$work/crib.log"
