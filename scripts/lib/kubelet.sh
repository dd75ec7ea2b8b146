# scripts/lib/kubelet.sh: a standalone kubelet on a crib daemon of its own,
# for the scripts/kubelet-*.sh scripts to source (they set -euo pipefail and
# LOG_NAME first). It builds the kubelet once into $CACHE, starts the
# loopback registry when it does not answer, a crib daemon on a temp root
# and state ($D), the kubelet's cgroup root in every hierarchy, and the
# kubelet with static pods from $D/manifests; kl_cleanup (set as the EXIT
# trap by kl_init) undoes all of it: see scripts/kubelet-stats.sh for the
# list of what is touched on the host.
#
# The kubelet is built in a throwaway wrapper module by scripts/lib/k8s-build.sh.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CONF=${CRI_CONFORMANCE_DIR:-$ROOT/../shared/conformance}
KUBELET_VERSION=${KUBELET_VERSION:-v1.36.3}
CACHE=${CRIB_KUBELET_CACHE:-/var/cache/crib-kubelet}
export PATH=$PATH:/usr/local/go/bin
[ -f "$CONF/lib.sh" ] || { echo "${LOG_NAME:-kubelet}: no conformance kit in $CONF" >&2; exit 1; }
. "$CONF/lib.sh" # REGISTRY_ADDR, registry_up; its log and die are replaced below
. "$ROOT/scripts/lib/k8s-build.sh"

log() { printf '[%s] %s: %s\n' "$(date +%H:%M:%S)" "${LOG_NAME:-kubelet}" "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

# build_kubelet prints the kubelet at $KUBELET_VERSION, built into $CACHE
# once (scripts/lib/k8s-build.sh, at low priority).
build_kubelet() {
	k8s_build_kubelet "$KUBELET_VERSION" "$CACHE" || die "kubelet build failed"
}

# free_port prints the first TCP port from $1 up that nothing listens on.
free_port() {
	local p=$1
	while [ -n "$(ss -Hltn "sport = :$p")" ]; do p=$((p + 1)); done
	echo "$p"
}

# stop_pid sends SIGTERM to pid $1 and waits, SIGKILL after $2 seconds.
stop_pid() {
	local pid=$1 wait=$2
	kill -0 "$pid" 2>/dev/null || return 0
	kill "$pid" 2>/dev/null || true
	for _ in $(seq $((wait * 10))); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
	log "WARNING: pid $pid survived SIGTERM for ${wait}s; SIGKILL"
	kill -9 "$pid" 2>/dev/null || true
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
}


# kl_init checks the host, finds or builds the kubelet, makes the temp dir
# $D and sets kl_cleanup as the EXIT trap. After it: $D, $SOCK, $CG, $NODE,
# $KUBELET, and crictl=(crictl on crib's socket).
kl_init() {
	[ "$(id -u)" = 0 ] || die "run as root"
	local c
	for c in go crictl curl jq ss; do command -v "$c" >/dev/null || die "$c is not installed"; done
	KUBELET=${KUBELET:-$(build_kubelet)}
	[ -x "$KUBELET" ] || die "kubelet $KUBELET is not executable"
	log "kubelet: $KUBELET ($("$KUBELET" --version))"
	D=$(mktemp -d /tmp/crib-kl.XXXXXX)
	SOCK=$D/state/crib.sock
	CG=crib-kubelet-$$
	NODE=crib-kubelet-node
	SYSCTLS=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes)
	declare -gA SAVED_SYSCTL=()
	started_registry=0
	created_logdir=0
	daemon_pid=
	kubelet_pid=
	crictl=(crictl --config "$D/crictl.yaml")
	mkdir -p "$D/state" "$D/root" "$D/cni" "$D/manifests" "$D/kubelet" "$D/pod-logs" "$D/volume-plugins"
	trap kl_cleanup EXIT
	trap 'exit 130' INT TERM
}

# kl_cleanup undoes what kl_init and the kl_start_* functions did, keeping
# the exit status.
kl_cleanup() {
	local rc=$?
	set +e
	log "cleaning up"
	if [ -n "$kubelet_pid" ]; then
		if kill -0 "$kubelet_pid" 2>/dev/null && [ -n "$(ls -A "$D/manifests")" ]; then
			rm -f "$D"/manifests/*
			log "static pod manifests removed; waiting for the kubelet to stop the pods and remove their containers"
			for _ in $(seq 60); do
				[ -z "$("${crictl[@]}" ps -aq 2>/dev/null)$("${crictl[@]}" pods -q --state ready 2>/dev/null)" ] && break
				sleep 1
			done
		fi
		stop_pid "$kubelet_pid" 30
	fi
	for s in "${!SAVED_SYSCTL[@]}"; do
		[ "$(cat "/proc/sys/$s")" = "${SAVED_SYSCTL[$s]}" ] || echo "${SAVED_SYSCTL[$s]}" >"/proc/sys/$s" ||
			log "WARNING: could not restore $s to ${SAVED_SYSCTL[$s]}"
	done
	if [ -n "$daemon_pid" ]; then
		if kill -0 "$daemon_pid" 2>/dev/null; then
			# The kubelet's garbage collection removes a stopped sandbox only
			# a minute later: remove it, and anything else left, over the CRI.
			local left
			left=$("${crictl[@]}" pods -q 2>/dev/null)
			if [ -n "$left" ]; then
				log "removing sandboxes over the CRI: $left"
				for p in $left; do "${crictl[@]}" stopp "$p" >/dev/null; "${crictl[@]}" rmp -f "$p" >/dev/null; done
			fi
		fi
		stop_pid "$daemon_pid" 30
	fi
	# The bridge crib's CNI config made for the pods.
	ip link del "cribkl$$" 2>/dev/null
	# The kubelet bind-mounts its root dir on itself (to make it rshared);
	# anything else mounted under the temp dir is a leak.
	awk -v d="$D/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
		[ "$m" = "$D/kubelet" ] || log "WARNING: unmounting leftover $m"
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	# The kubelet's cgroups (and crib's pod cgroups under them), deepest first.
	for h in /sys/fs/cgroup/*/; do
		[ -d "$h$CG" ] || continue
		find "$h$CG" -depth -type d -exec rmdir {} + 2>/dev/null
		[ -d "$h$CG" ] && log "WARNING: could not remove cgroup $h$CG: $(find "$h$CG" -name cgroup.procs -exec cat {} + 2>/dev/null | tr '\n' ' ')"
	done
	# The kubelet's links for its static pods (named <pod>-<node>).
	rm -f /var/log/containers/*-"${NODE}"_*.log
	[ $created_logdir = 1 ] && rmdir /var/log/containers 2>/dev/null
	if [ $started_registry = 1 ]; then
		"$CONF/images.sh" --stop >&2 || log "WARNING: images.sh --stop failed"
	fi
	if [ "${KEEP:-0}" = 1 ]; then
		log "kept $D (daemon.log, kubelet.log)"
	else
		rm -rf --one-file-system "$D"
	fi
	exit $rc
}

# kl_start_registry starts the loopback registry with the test busybox
# image when it does not answer.
kl_start_registry() {
	if ! registry_up; then
		log "starting the loopback registry (images.sh)"
		started_registry=1
		"$CONF/images.sh" >&2
	fi
}

# kl_start_crib builds crib into $D and starts its daemon on $SOCK; $1,
# if given, is added to its configuration (TOML tables).
kl_start_crib() {
	log "building crib into $D"
	(cd "$ROOT" && CGO_ENABLED=0 go build -o "$D/" ./cmd/crib ./cmd/crib-monitor)
	CRIB_METRICS_PORT=$(free_port 20550)
	printf 'runtime-endpoint: unix://%s\nimage-endpoint: unix://%s\ntimeout: 30\n' "$SOCK" "$SOCK" >"$D/crictl.yaml"
	cat >"$D/crib.toml" <<EOF
root = "$D/root"
state = "$D/state"
socket = "$SOCK"
log_level = "debug"
cgroup_driver = "cgroupfs"
cgroup_parent = "/$CG/crib"

[network]
conf_dir = "$D/cni"
name = "cribkl"
bridge = "cribkl$$"
subnet = "10.244.250.0/24"

[registries."registry.k8s.io"]
mirrors = ["http://$REGISTRY_ADDR"]

[metrics]
address = "127.0.0.1:$CRIB_METRICS_PORT"
${1:-}
EOF
	setsid "$D/crib" daemon --config "$D/crib.toml" >"$D/daemon.log" 2>&1 &
	daemon_pid=$!
	for _ in $(seq 100); do
		"${crictl[@]}" version >/dev/null 2>&1 && break
		kill -0 "$daemon_pid" 2>/dev/null || die "crib daemon exited:$(printf '\n'; tail -20 "$D/daemon.log")"
		sleep 0.2
	done
	"${crictl[@]}" version >/dev/null || die "crib daemon does not answer on $SOCK"
	log "crib daemon pid $daemon_pid on $SOCK"
}

# kl_start_kubelet makes the kubelet's cgroup root in every v1 hierarchy
# (cgroup v2: one) and starts the standalone kubelet on crib, with static
# pods from $D/manifests. $1, if given, is YAML lines under featureGates.
# After it: $PORT (the kubelet's API, HTTPS, anonymous and AlwaysAllow),
# $RO_PORT (read-only HTTP).
kl_start_kubelet() {
	local h s
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		mkdir "/sys/fs/cgroup/$CG"
	else
		for h in /sys/fs/cgroup/*/; do
			[ -L "${h%/}" ] && continue
			mountpoint -q "$h" || continue
			mkdir "$h$CG"
			if [ -f "${h}cpuset.cpus" ]; then
				cat "${h}cpuset.cpus" >"$h$CG/cpuset.cpus"
				cat "${h}cpuset.mems" >"$h$CG/cpuset.mems"
			fi
		done
	fi
	[ -d /var/log/containers ] || created_logdir=1
	for s in "${SYSCTLS[@]}"; do SAVED_SYSCTL[$s]=$(cat "/proc/sys/$s"); done
	PORT=$(free_port 20250)
	RO_PORT=$(free_port 20350)
	local healthz_port gates=${1:-"  {}"}
	healthz_port=$(free_port 20450)
	cat >"$D/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$SOCK
staticPodPath: $D/manifests
fileCheckFrequency: 2s
address: 127.0.0.1
port: $PORT
readOnlyPort: $RO_PORT
healthzBindAddress: 127.0.0.1
healthzPort: $healthz_port
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
cgroupRoot: /$CG
cgroupsPerQOS: true
enforceNodeAllocatable: ["pods"]
failSwapOn: false
failCgroupV1: false
featureGates:
$gates
makeIPTablesUtilChains: false
podLogsDir: $D/pod-logs
volumePluginDir: $D/volume-plugins
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%"
  imagefs.available: "1%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
	log "starting the kubelet (ports $PORT, read-only $RO_PORT; log $D/kubelet.log)"
	setsid "$KUBELET" --config "$D/kubelet.yaml" --root-dir "$D/kubelet" --hostname-override "$NODE" --v=2 \
		>"$D/kubelet.log" 2>&1 &
	kubelet_pid=$!
}

# kl_wait_running waits up to 180 s for a running container named $1 in
# the pod sandbox named $2 (a static pod's <name>-<node>) and prints its ID.
kl_wait_running() {
	local ctr=$1 pod=$2 i id sb
	for i in $(seq 180); do
		kill -0 "$kubelet_pid" 2>/dev/null || die "the kubelet exited:$(printf '\n'; grep -E '^[EF][0-9]{4}|error|fail' "$D/kubelet.log" | tail -25)"
		sb=$("${crictl[@]}" pods -q --name "^$pod\$" --state ready 2>/dev/null | head -1)
		if [ -n "$sb" ]; then
			id=$("${crictl[@]}" ps -q --pod "$sb" --name "^$ctr\$" --state running 2>/dev/null | head -1)
			[ -n "$id" ] && { echo "$id"; return; }
		fi
		[ "$i" = 180 ] && die "no running container $ctr in $pod after 180s:$(printf '\n'; "${crictl[@]}" pods; "${crictl[@]}" ps -a; grep -E '^[EF][0-9]{4}' "$D/kubelet.log" | tail -25)"
		sleep 1
	done
}
