#!/usr/bin/env bash
# Runs scripts/node-e2e.sh inside the VM of scripts/vm.sh (Debian 12, cgroup
# v2, systemd as PID 1): the kubelet runs under systemd-run with the systemd
# cgroup driver, so the Serial specs that restart the kubelet through
# systemctl can run too (issue #21).
#
# Usage: sudo scripts/node-e2e-vm.sh [VM OPTIONS] [NODE-E2E OPTIONS]
#   --timeout SEC   stop the VM after SEC seconds (default 10800)
#   --mem MIB       guest memory (default 6144)
#   --cpus N        guest CPUs (default: vm.sh's, the host's up to 4)
# Every other option goes to node-e2e.sh (--focus, --skip, --serial,
# --sample, --procs, --label-filter, --out, --baseline containerd2,
# --only-baseline). The baseline is the kit's containerd 2.x (from the
# shared /var/lib/cri-conformance; the image has no Debian containerd),
# restarted with runc's systemd cgroup driver.
#
# Nothing is built in the guest (it has no Go): the suite's binaries must be
# in the cache (scripts/node-e2e.sh --build-only, on the host) and the images
# in the loopback registry's data, which the guest serves on its own
# 127.0.0.1:5000. The binary cache and the kubelet cache are shared
# read-only, the report directory (default $CACHE/reports/vm-DATE) read-write,
# the release's source read-only (for --sample's Ordered groups); jq comes
# from the host (both are Debian 12), and `sudo`, which the suite calls
# around systemctl, is a shim (the guest runs everything as root). The run
# touches nothing on the host: the kubelet, its ports and cgroups are the
# guest's, and the guest is thrown away.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VERSION=${NODE_E2E_VERSION:-v1.37.2}
CACHE=${CRIB_NODE_E2E_CACHE:-/var/cache/crib-node-e2e}
KUBELET_CACHE=${CRIB_KUBELET_CACHE:-/var/cache/crib-kubelet}

log() { printf '[%s] node-e2e-vm: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

# The guest's side: the registry, the tools, then node-e2e.sh.
if [ "${1:-}" = --guest ]; then
	shift
	tools=$1
	shift
	export PATH=$tools:$PATH
	# The host's runc (the kit's 1.5.2, which the host runs use) rather
	# than the image's 1.1.5.
	runc=/var/lib/cri-conformance/runc/bin
	[ -x $runc/runc ] && PATH=$runc:$PATH
	registry=/var/lib/cri-conformance/registry
	[ -f $registry/config.yml ] || die "no registry data in $registry"
	docker-registry serve $registry/config.yml >/tmp/registry.log 2>&1 &
	registry_pid=$!
	trap 'kill $registry_pid 2>/dev/null' EXIT
	for _ in $(seq 150); do curl -fs http://127.0.0.1:5000/v2/ >/dev/null && break; sleep 0.2; done
	curl -fs http://127.0.0.1:5000/v2/ >/dev/null || die "the registry is not up: $(tail -5 /tmp/registry.log)"
	# The VM has no network (vm.sh: -nic none), but the apiserver picks
	# its address from the default route's interface and the kubelet the
	# node's: a dummy link with one, where nothing leaves.
	if ! ip route show default | grep -q .; then
		ip link add e2e-uplink type dummy && ip link set e2e-uplink up &&
			ip addr add 10.99.0.2/24 dev e2e-uplink && ip route add default via 10.99.0.1 dev e2e-uplink ||
			die "cannot add a default route"
	fi
	log "guest: $(uname -r), $(nproc) CPUs, $(free -m | awk '/^Mem:/{print $2}') MiB, $(systemctl --version | head -1), $(runc --version | head -1)"
	rc=0
	"$ROOT/scripts/node-e2e.sh" --vm-guest "$@" || rc=$?
	exit $rc
fi

[ "$(id -u)" = 0 ] || die "run as root"
vm_args=() args=() OUT=''
while [ $# -gt 0 ]; do
	case $1 in
	--timeout | --mem | --cpus) vm_args+=("$1" "$2"); shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--build-only | --images-only | --vm-guest) die "$1: not in the VM (see --help)" ;;
	-h | --help) sed -n '2,/^set -e/{/^set -e/!s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) args+=("$1"); shift ;;
	esac
done
[[ " ${vm_args[*]} " == *" --timeout "* ]] || vm_args+=(--timeout 10800)
[[ " ${vm_args[*]} " == *" --mem "* ]] || vm_args+=(--mem 6144)

BIN=$CACHE/$VERSION
for b in e2e_node.test ginkgo kubelet; do
	[ -x "$BIN/$b" ] || die "no $BIN/$b: run scripts/node-e2e.sh --build-only first"
done
[ -d /var/lib/cri-conformance/registry ] || die "no /var/lib/cri-conformance/registry: run scripts/node-e2e.sh --images-only first"
OUT=${OUT:-$CACHE/reports/vm-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
src=$(go env GOMODCACHE 2>/dev/null || true)

# jq with its libraries, and the sudo shim.
tools=$(mktemp -d /tmp/crib-node-e2e-vm.XXXXXX)
trap 'rm -rf "$tools"' EXIT
jq=$(command -v jq) || die "jq is not installed"
mkdir -p "$tools/lib"
cp "$jq" "$tools/lib/jq"
ldd "$jq" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | grep -vE '/(libc|libm|libpthread|libdl)\.so' |
	while read -r l; do cp "$l" "$tools/lib/"; done
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib exec %s/lib/jq "$@"\n' "$tools" "$tools" >"$tools/jq"
printf '#!/bin/sh\n# The guest runs as root: the suite calls sudo around systemctl.\nexec "$@"\n' >"$tools/sudo"
chmod 755 "$tools/jq" "$tools/sudo"

shares="$BIN:ro $KUBELET_CACHE:ro $OUT $tools:ro"
env=()
mod=$src/k8s.io/kubernetes@$VERSION
if [ -n "$src" ] && [ -d "$mod" ]; then
	shares+=" $mod:ro"
	env+=(GOMODCACHE="$src")
fi
log "running node-e2e.sh in the VM (${args[*]}); report in $OUT"
start=$SECONDS
rc=0
GOMODCACHE=$src CRIB_VM_SHARES=$shares CRIB_VM_ENV="${CRIB_VM_ENV:-} ${env:+GOMODCACHE} KEEP" \
	"$ROOT/scripts/vm.sh" run "${vm_args[@]}" -- scripts/node-e2e-vm.sh --guest "$tools" --out "$OUT" "${args[@]}" || rc=$?
log "the VM run exited $rc after $((SECONDS - start))s; report: $OUT/results.txt"
exit $rc
