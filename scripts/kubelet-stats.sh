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
# The build, the daemon, the kubelet and the cleanup are scripts/lib/kubelet.sh.
set -euo pipefail
LOG_NAME=kubelet-stats
. "$(dirname "${BASH_SOURCE[0]}")/lib/kubelet.sh"
kl_init

POD=stats-probe
POD_FULL=$POD-$NODE
CTR=busy
IMAGE=registry.k8s.io/e2e-test-images/busybox:1.29-2

# 1. The loopback registry with the test busybox image.
kl_start_registry

# 2. A crib daemon on a temp root and state.
kl_start_crib

# 3. The standalone kubelet with a static pod.
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
kl_start_kubelet "  PodAndContainerStatsFromCRI: true"

# 4. Wait for the pod's container to run.
log "waiting for $POD_FULL to run"
kl_wait_running "$CTR" "$POD_FULL" >/dev/null
"${crictl[@]}" pods --name "$POD_FULL" >&2
"${crictl[@]}" ps --name "^$CTR\$" >&2

# 5. The kubelet's stats, from crib through the CRI.
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
