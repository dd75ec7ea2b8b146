#!/usr/bin/env bash
# Shows the real kubelet reading pod and container stats from crib over the
# CRI (issue #13): a standalone kubelet with PodAndContainerStatsFromCRI=true
# runs a static busybox pod on a crib daemon, and its /stats/summary and
# /metrics/cadvisor must list the pod and its container with non-zero CPU
# and memory (the summary also a CPU rate, usageNanoCores), and crib's own
# /metrics must count the kubelet's ListPodSandboxStats and
# ListPodSandboxMetrics calls: a runtime answering Unimplemented would make
# the kubelet fall back to its cAdvisor without a word.
#
# In /metrics/cadvisor, CPU times are whole seconds (a CRI Metric value is an
# integer), so container_cpu_usage_seconds_total reads 0 for this pod's first
# second of CPU; the check is on the series being there, and the summary
# carries the nanoseconds.
#
# Usage: sudo scripts/kubelet-stats.sh
# Environment:
#   KUBELET_VERSION     kubelet to build (default v1.36.3)
#   CRIB_KUBELET_CACHE  where built kubelets are kept (default /var/cache/crib-kubelet)
#   KUBELET             use this kubelet binary instead of building one
#   CRI_CONFORMANCE_DIR the conformance kit (default ../shared/conformance)
#   KEEP=1              leave the temp dir (logs, configs) behind after cleanup
#
# Not part of CI or scripts/test.sh: the kubelet is built from the Go module
# proxy (k8s.io/kubernetes/cmd/kubelet: 16 minutes on 2 busy cores the
# first time, then cached; a run is then about 30 seconds), and the kubelet changes host state a test run should not:
# run it by hand, as root, after changing crib's stats, metrics or cgroup
# code, or when moving to a new kubelet minor. It needs cgroup v1 or v2 with
# the cgroupfs driver, crictl, curl, jq, and the loopback registry of
# ../shared/conformance/images.sh (started, and stopped again, when it does
# not answer).
#
# What it touches on the host, and undoes (in a trap, also on failure):
# - a cgroup /crib-kubelet-<pid> in each cgroup v1 hierarchy (the kubelet's
#   cgroupRoot: it must exist; kubepods and the QoS and pod cgroups go under
#   it), removed deepest first; host hierarchies are never remounted;
# - the sysctls the kubelet sets at start (vm.overcommit_memory,
#   vm.panic_on_oom, kernel.panic, kernel.panic_on_oops,
#   kernel.keys.root_maxkeys, root_maxbytes): saved before, written back after;
# - the kubelet's symlinks in /var/log/containers (a path it hardcodes), and
#   the directory when it did not exist before;
# - a crib daemon on a temp root/state with its own socket; the pod is
#   removed through the kubelet (manifest deleted) and then over the CRI, the
#   daemon stopped and mounts left under the temp dir unmounted.
# The kubelet runs standalone (no API server, no kubeconfig), host network
# only, without iptables chains (makeIPTablesUtilChains: false), on loopback
# ports picked free.
#
# The kubelet is built in a throwaway wrapper module (scripts/lib/k8s-build.sh
# says why one is needed), at low priority.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONF=${CRI_CONFORMANCE_DIR:-$ROOT/../shared/conformance}
KUBELET_VERSION=${KUBELET_VERSION:-v1.36.3}
CACHE=${CRIB_KUBELET_CACHE:-/var/cache/crib-kubelet}
export PATH=$PATH:/usr/local/go/bin
[ -f "$CONF/lib.sh" ] || { echo "kubelet-stats.sh: no conformance kit in $CONF" >&2; exit 1; }
. "$CONF/lib.sh" # REGISTRY_ADDR, registry_up
. "$ROOT/scripts/lib/k8s-build.sh"

log() { printf '[%s] kubelet-stats: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root"
for c in go crictl curl jq ss; do command -v "$c" >/dev/null || die "$c is not installed"; done

# free_port prints the first TCP port from $1 up that nothing listens on.
free_port() {
	local p=$1
	while [ -n "$(ss -Hltn "sport = :$p")" ]; do p=$((p + 1)); done
	echo "$p"
}

KUBELET=${KUBELET:-$(k8s_build_kubelet "$KUBELET_VERSION" "$CACHE")} || die "kubelet build failed"
[ -x "$KUBELET" ] || die "kubelet $KUBELET is not executable"
log "kubelet: $KUBELET ($("$KUBELET" --version))"

D=$(mktemp -d /tmp/crib-kl.XXXXXX)
SOCK=$D/state/crib.sock
CG=crib-kubelet-$$
NODE=crib-kubelet-node
POD=stats-probe
POD_FULL=$POD-$NODE
CTR=busy
IMAGE=registry.k8s.io/e2e-test-images/busybox:1.29-2
SYSCTLS=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes)
declare -A SAVED_SYSCTL=()
started_registry=0
created_logdir=0
daemon_pid=
kubelet_pid=
crictl=(crictl --config "$D/crictl.yaml")

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

cleanup() {
	local rc=$?
	set +e
	log "cleaning up"
	if [ -n "$kubelet_pid" ]; then
		if kill -0 "$kubelet_pid" 2>/dev/null && [ -f "$D/manifests/$POD.yaml" ]; then
			rm -f "$D/manifests/$POD.yaml"
			log "static pod manifest removed; waiting for the kubelet to stop the pod and remove its container"
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
			left=$("${crictl[@]}" pods -q 2>/dev/null)
			if [ -n "$left" ]; then
				log "removing sandboxes over the CRI: $left"
				for p in $left; do "${crictl[@]}" stopp "$p" >/dev/null; "${crictl[@]}" rmp -f "$p" >/dev/null; done
			fi
		fi
		stop_pid "$daemon_pid" 30
	fi
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
	rm -f /var/log/containers/"${POD_FULL}"_default_*.log
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
trap cleanup EXIT
trap 'exit 130' INT TERM

# 1. The loopback registry with the test busybox image.
if ! registry_up; then
	log "starting the loopback registry (images.sh)"
	started_registry=1
	"$CONF/images.sh" >&2
fi

# 2. A crib daemon on a temp root and state.
log "building crib into $D"
(cd "$ROOT" && CGO_ENABLED=0 go build -o "$D/" ./cmd/crib ./cmd/crib-monitor)
CRIB_METRICS_PORT=$(free_port 20550)
mkdir -p "$D/state" "$D/root" "$D/cni" "$D/manifests" "$D/kubelet" "$D/pod-logs" "$D/volume-plugins"
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

# 3. The kubelet's cgroup root, in every v1 hierarchy (cgroup v2: one).
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

# 4. The standalone kubelet with a static pod.
[ -d /var/log/containers ] || created_logdir=1
for s in "${SYSCTLS[@]}"; do SAVED_SYSCTL[$s]=$(cat "/proc/sys/$s"); done
PORT=$(free_port 20250)
RO_PORT=$(free_port 20350)
HEALTHZ_PORT=$(free_port 20450)
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
healthzPort: $HEALTHZ_PORT
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
  PodAndContainerStatsFromCRI: true
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
cat >"$D/manifests/$POD.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $POD
  namespace: default
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: $CTR
    image: $IMAGE
    imagePullPolicy: IfNotPresent
    # Some CPU every second, so usage is not zero.
    command: ["sh", "-c", "while true; do i=0; while [ \$i -lt 20000 ]; do i=\$((i+1)); done; sleep 1; done"]
EOF
log "starting the kubelet (ports $PORT, read-only $RO_PORT; log $D/kubelet.log)"
setsid "$KUBELET" --config "$D/kubelet.yaml" --root-dir "$D/kubelet" --hostname-override "$NODE" --v=2 \
	>"$D/kubelet.log" 2>&1 &
kubelet_pid=$!

# 5. Wait for the pod's container to run.
log "waiting for $POD_FULL to run"
for i in $(seq 180); do
	kill -0 "$kubelet_pid" 2>/dev/null || die "the kubelet exited:$(printf '\n'; grep -E '^[EF][0-9]{4}|error|fail' "$D/kubelet.log" | tail -25)"
	[ -n "$("${crictl[@]}" ps -q --name "^$CTR\$" --state running 2>/dev/null)" ] && break
	[ "$i" = 180 ] && die "no running container $CTR after 180s:$(printf '\n'; "${crictl[@]}" pods; "${crictl[@]}" ps -a; grep -E '^[EF][0-9]{4}' "$D/kubelet.log" | tail -25)"
	sleep 1
done
"${crictl[@]}" pods --name "$POD_FULL" >&2
"${crictl[@]}" ps --name "^$CTR\$" >&2

# 6. The kubelet's stats, from crib through the CRI.
RO=http://127.0.0.1:$RO_PORT
check_summary() {
	curl -fsS -m 10 "$RO/stats/summary" >"$D/summary.json" || return 1
	jq -e --arg pod "$POD_FULL" --arg ctr "$CTR" '
		[.pods[] | select(.podRef.name == $pod)] | length == 1 and
		(.[0].cpu.usageCoreNanoSeconds // 0) > 0 and (.[0].memory.workingSetBytes // 0) > 0 and
		([.[0].containers[] | select(.name == $ctr and (.cpu.usageCoreNanoSeconds // 0) > 0 and (.memory.workingSetBytes // 0) > 0)] | length == 1)
	' "$D/summary.json" >/dev/null
}
check_cadvisor() {
	curl -fsS -m 10 "$RO/metrics/cadvisor" >"$D/cadvisor.txt" || return 1
	local m
	for m in container_cpu_usage_seconds_total container_memory_working_set_bytes; do
		grep -E "^$m\{" "$D/cadvisor.txt" | grep "container=\"$CTR\"" | grep -q "pod=\"$POD_FULL\"" || return 1
	done
}
log "waiting for /stats/summary and /metrics/cadvisor to show $POD_FULL/$CTR"
ok_summary=0
ok_cadvisor=0
for _ in $(seq 90); do
	[ $ok_summary = 1 ] || { check_summary && ok_summary=1; }
	[ $ok_cadvisor = 1 ] || { check_cadvisor && ok_cadvisor=1; }
	[ $ok_summary = 1 ] && [ $ok_cadvisor = 1 ] && break
	sleep 1
done

echo "--- /stats/summary: pod $POD_FULL"
jq --arg pod "$POD_FULL" '.pods[] | select(.podRef.name == $pod) |
	{podRef, cpu: {usageCoreNanoSeconds: .cpu.usageCoreNanoSeconds, usageNanoCores: .cpu.usageNanoCores},
	 memory: {workingSetBytes: .memory.workingSetBytes, usageBytes: .memory.usageBytes},
	 containers: [.containers[] | {name, cpu: {usageCoreNanoSeconds: .cpu.usageCoreNanoSeconds}, memory: {workingSetBytes: .memory.workingSetBytes}}]}' \
	"$D/summary.json" 2>/dev/null || echo "(no summary)"
# A CPU rate (usageNanoCores) needs two readings of the cgroup: crib
# gives it from the second stats call on.
nanocores=null
for _ in $(seq 15); do
	sleep 1
	nanocores=$(curl -fsS -m 10 "$RO/stats/summary" | jq -c --arg pod "$POD_FULL" --arg ctr "$CTR" \
		'.pods[] | select(.podRef.name == $pod) | [.cpu.usageNanoCores, (.containers[] | select(.name == $ctr) | .cpu.usageNanoCores)]')
	[[ "$nanocores" == "[null"* || "$nanocores" == *"null]" ]] || break
done
echo "--- /stats/summary later: usageNanoCores [pod, $CTR] = $nanocores"
echo "--- /metrics/resource: $(curl -fsS -m 10 "$RO/metrics/resource" | grep -E "^container_(cpu_usage_seconds_total|memory_working_set_bytes)\{container=\"$CTR\",namespace=\"default\",pod=\"$POD_FULL\"\}" | cut -d' ' -f1,2 | tr '\n' ' ')"
echo "--- /metrics/cadvisor: series of $POD_FULL"
grep -E '^container_(cpu_usage_seconds_total|memory_working_set_bytes|memory_usage_bytes|start_time_seconds)\{' "$D/cadvisor.txt" 2>/dev/null |
	grep "pod=\"$POD_FULL\"" || echo "(none)"
echo "--- /metrics/cadvisor: $(grep -c "pod=\"$POD_FULL\"" "$D/cadvisor.txt" 2>/dev/null || echo 0) series name the pod"

# crib's own RPC counts: the stats came over the CRI, not from the
# kubelet's cAdvisor (which it falls back to, silently, on Unimplemented).
curl -fsS -m 10 "http://127.0.0.1:$CRIB_METRICS_PORT/metrics" >"$D/crib-metrics.txt" || die "crib's /metrics does not answer"
echo "--- crib's /metrics: the kubelet's stats RPCs"
grep -E '^crib_cri_request_duration_seconds_count\{.*method="(ListPodSandboxStats|ListContainerStats|ListPodSandboxMetrics|ListMetricDescriptors|ImageFsInfo)"' \
	"$D/crib-metrics.txt" || echo "(none)"
for m in ListPodSandboxStats ListPodSandboxMetrics; do
	grep -qE "^crib_cri_request_duration_seconds_count\{code=\"OK\",method=\"$m\"\} [1-9]" "$D/crib-metrics.txt" ||
		die "the kubelet made no successful $m call to crib"
done

[[ "$nanocores" == "[null"* || "$nanocores" == *"null]" || -z "$nanocores" ]] &&
	die "/stats/summary has no usageNanoCores for $POD_FULL or $CTR after 15s"
[ $ok_summary = 1 ] || die "/stats/summary lacks pod $POD_FULL or container $CTR with non-zero CPU and memory (kubelet errors:$(printf '\n'); grep -E '^E[0-9]{4}' "$D/kubelet.log" | tail -15)"
[ $ok_cadvisor = 1 ] || die "/metrics/cadvisor lacks container_cpu_usage_seconds_total and container_memory_working_set_bytes for $POD_FULL/$CTR (kubelet errors:$(printf '\n'); grep -E '^E[0-9]{4}' "$D/kubelet.log" | tail -15)"
log "PASS: the kubelet's /stats/summary and /metrics/cadvisor show $POD_FULL/$CTR from crib's CRI stats"
