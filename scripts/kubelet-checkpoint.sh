#!/usr/bin/env bash
# Shows the real kubelet's forensic container checkpointing on crib (issue
# #23): a standalone kubelet with ContainerCheckpoint on runs a static pod
# whose busybox counts in /tmp/c; `POST /checkpoint/{namespace}/{pod}/
# {container}` on the kubelet's API must make crib write the archive under
# the kubelet's checkpoint directory (<root-dir>/checkpoints, here under the
# script's own root dir), named as the kubelet names it, with the count in
# its writable layer, while the counter keeps running.
#
# Then a static pod whose image is that archive (CRI-O's way to restore
# outside Kubernetes). The kubelet cannot pass a path to the runtime: its
# image manager parses every image as a reference (EnsureImageExists,
# applyDefaultImageTag) before asking the CRI anything, so the container
# waits with InvalidImageName and crib is never asked; the script checks
# exactly that (or, should a kubelet ever pass the path, that the pod
# restores). Last, the way a kubelet restores on CRI-O: the archive's files
# as an OCI image labelled org.criu.checkpoint.container.name, pushed to the
# loopback registry that crib mirrors registry.k8s.io to, and a static pod
# naming it, which must count on from the archive's count.
#
# Usage: sudo scripts/kubelet-checkpoint.sh
# Environment: as scripts/kubelet-stats.sh (KUBELET_VERSION, KUBELET,
# CRIB_KUBELET_CACHE, CRI_CONFORMANCE_DIR, KEEP=1), and
#   CRIB_CRIU             criu 4.1+ (default /var/lib/cri-conformance/criu-crib/bin/criu,
#                         scripts/build-criu.sh builds it)
#   CRIU_NO_BREAKPOINTS=1 set criu_no_breakpoints (VMs without hardware breakpoints)
#   CRIB_CHECKPOINTCTL    checkpointctl to show the archive with (default: PATH; skipped without)
# It touches the host as kubelet-stats.sh does, and undoes it the same way
# (scripts/lib/kubelet.sh); the archives are under its temp dir.
set -euo pipefail
LOG_NAME=kubelet-checkpoint
. "$(dirname "${BASH_SOURCE[0]}")/lib/kubelet.sh"
CRIU=${CRIB_CRIU:-/var/lib/cri-conformance/criu-crib/bin/criu}
[ -x "$CRIU" ] || die "no criu at $CRIU (scripts/build-criu.sh builds it; or set CRIB_CRIU)"
kl_init

POD=counter
POD_FULL=$POD-$NODE
RPOD=restored
RPOD_FULL=$RPOD-$NODE
CTR=counter
IMAGE=registry.k8s.io/e2e-test-images/busybox:1.29-2
COUNT='i=0; while true; do echo $i > /tmp/c.new; mv /tmp/c.new /tmp/c; i=$((i+1)); sleep 0.1; done'

# count prints the counter of container $1 (-1 when it cannot be read).
count() {
	local n
	n=$("${crictl[@]}" exec "$1" cat /tmp/c 2>/dev/null | tr -d '[:space:]') || true
	[[ "$n" =~ ^[0-9]+$ ]] && echo "$n" || echo -1
}

# wait_count waits up to $3 s for container $1's counter to pass $2.
wait_count() {
	local i n
	for i in $(seq $(($3 * 5))); do
		n=$(count "$1")
		[ "$n" -gt "$2" ] && return 0
		sleep 0.2
	done
	die "the counter of $1 is at $n, not past $2 within $3s"
}

# pod_manifest writes the static pod $1 running the counter from image $2.
pod_manifest() {
	cat >"$D/manifests/$1.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: default
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: $CTR
    image: $2
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "$COUNT"]
EOF
}

# 1. Registry, crib with criu, the kubelet with ContainerCheckpoint.
kl_start_registry
criu_cfg=$(printf '[checkpoint]\ncriu_path = "%s"' "$CRIU")
[ "${CRIU_NO_BREAKPOINTS:-0}" = 1 ] && criu_cfg+=$'\ncriu_no_breakpoints = true'
kl_start_crib "$criu_cfg"
pod_manifest "$POD" "$IMAGE"
kl_start_kubelet "  ContainerCheckpoint: true"

log "waiting for $POD_FULL to run and count"
id=$(kl_wait_running "$CTR" "$POD_FULL")
wait_count "$id" 20 60

# 2. The kubelet's checkpoint API (HTTPS, anonymous, AlwaysAllow).
log "POST /checkpoint/default/$POD_FULL/$CTR"
resp=$(curl -sSk -m 120 -X POST -w '\n%{http_code}' "https://127.0.0.1:$PORT/checkpoint/default/$POD_FULL/$CTR") ||
	die "no answer from the kubelet's API on port $PORT"
code=${resp##*$'\n'}
body=${resp%$'\n'*}
echo "--- POST /checkpoint: HTTP $code: $body"
[ "$code" = 200 ] || die "the kubelet's checkpoint answered $code: $body$(printf '\n'; grep -i checkpoint "$D/daemon.log" | tail -10)"
archive=$(jq -r '.items[0]' <<<"$body")
CKPT_DIR=$D/kubelet/checkpoints
[ "$(dirname "$archive")" = "$CKPT_DIR" ] || die "the archive $archive is not under the kubelet's checkpoint directory $CKPT_DIR"
[[ "$(basename "$archive")" == checkpoint-"${POD_FULL}"_default-"$CTR"-*.tar ]] || die "the archive's name $(basename "$archive") is not the kubelet's"
[ -f "$archive" ] || die "the kubelet named $archive, but there is no such file"
ls -l "$CKPT_DIR" | sed 's/^/    /'
at=$(tar -xOf "$archive" rootfs-diff.tar | tar -xO --wildcards 'tmp/c' './tmp/c' 2>/dev/null | tr -d '[:space:]') || true
[[ "$at" =~ ^[0-9]+$ ]] && [ "$at" -gt 20 ] || die "the archive's writable layer has /tmp/c = '$at', want a count past 20"
echo "--- the archive's /tmp/c: $at; the running counter now: $(count "$id")"
[ "$(count "$id")" -ge "$at" ] || die "the checkpointed counter did not keep running"
ctl=${CRIB_CHECKPOINTCTL:-$(command -v checkpointctl || true)}
if [ -n "$ctl" ]; then
	echo "--- checkpointctl show"
	"$ctl" show "$archive" || die "checkpointctl cannot read the archive"
else
	log "no checkpointctl: not showing the archive"
fi

# 3. A static pod whose image is the archive.
pod_manifest "$RPOD" "$archive"
log "static pod $RPOD_FULL with image $archive"
verdict=
for _ in $(seq 90); do
	rid=$("${crictl[@]}" ps -q --name "^$CTR\$" --state running 2>/dev/null | grep -v "^$id" | head -1 || true)
	if [ -n "$rid" ]; then
		verdict=restored
		break
	fi
	reason=$(curl -fsS -m 10 "http://127.0.0.1:$RO_PORT/pods" | jq -r --arg p "$RPOD_FULL" \
		'.items[] | select(.metadata.name == $p) | .status.containerStatuses[]? | .state.waiting.reason // empty' 2>/dev/null || true)
	if [ "$reason" = InvalidImageName ]; then
		verdict=refused
		break
	fi
	sleep 1
done
case $verdict in
restored)
	wait_count "$rid" "$at" 30
	echo "--- the kubelet's restored pod counts on from $at: now $(count "$rid")"
	log "PASS: the kubelet checkpointed $POD_FULL/$CTR to $archive, and a static pod with that image restored it"
	exit 0
	;;
refused)
	msg=$(curl -fsS -m 10 "http://127.0.0.1:$RO_PORT/pods" | jq -r --arg p "$RPOD_FULL" \
		'.items[] | select(.metadata.name == $p) | .status.containerStatuses[0].state.waiting.message')
	echo "--- the kubelet refuses the path before the CRI: InvalidImageName: $msg"
	rsb=$("${crictl[@]}" pods -q --name "^$RPOD_FULL\$" | head -1)
	n=0
	[ -z "$rsb" ] || n=$("${crictl[@]}" ps -a -q --pod "$rsb" | wc -l)
	[ "$n" = 0 ] || die "crib holds $n containers of $RPOD_FULL, though the kubelet refused its image"
	;;
*) die "the static pod $RPOD_FULL neither ran nor was refused within 90s$(printf '\n'; grep -E '^E[0-9]{4}' "$D/kubelet.log" | tail -10)" ;;
esac
rm -f "$D/manifests/$RPOD.yaml"

# 3b. The archive as an OCI checkpoint image, the way a kubelet restores on
# CRI-O: its files as one layer, the checkpoint annotation as a label (as
# buildah or checkpointctl make it), pushed where crib's mirror of
# registry.k8s.io pulls from, and a static pod naming that image.
IPOD=restoredimg
IPOD_FULL=$IPOD-$NODE
ckref=registry.k8s.io/crib-checkpoint/$CTR:$(date +%s)
mkdir -p "$D/ckimg"
tar -xf "$archive" -C "$D/ckimg"
printf '[{"ref": "%s", "layers": ["%s"], "labels": {"org.criu.checkpoint.container.name": "%s"}}]\n' \
	"$ckref" "$D/ckimg" "$CTR" >"$D/ckimg.json"
log "pushing $archive as the checkpoint image $ckref"
(cd "$ROOT" && go run ./scripts/node-e2e-images -spec "$D/ckimg.json" -registry "$REGISTRY_ADDR") ||
	die "could not build the checkpoint image"
pod_manifest "$IPOD" "$ckref"
log "static pod $IPOD_FULL with image $ckref"
iid=
for _ in $(seq 120); do
	isb=$("${crictl[@]}" pods -q --name "^$IPOD_FULL\$" --state ready 2>/dev/null | head -1 || true)
	[ -z "$isb" ] || iid=$("${crictl[@]}" ps -q --pod "$isb" --state running 2>/dev/null | head -1 || true)
	[ -n "$iid" ] && break
	sleep 1
done
[ -n "$iid" ] || die "the static pod $IPOD_FULL did not run within 120s$(printf '\n'; grep -E '^E[0-9]{4}' "$D/kubelet.log" | tail -10)"
ifirst=$(count "$iid")
[ "$ifirst" -ge "$at" ] || die "the kubelet's restored counter starts at $ifirst, below the archive's $at: started afresh"
wait_count "$iid" "$at" 30
echo "--- the kubelet restored the checkpoint image: counts on from $at (first read $ifirst, now $(count "$iid"))"
rm -f "$D/manifests/$IPOD.yaml"
for _ in $(seq 60); do
	[ -z "$("${crictl[@]}" ps -q --pod "$isb" --state running 2>/dev/null)" ] && break
	sleep 1
done

log "PASS: the kubelet checkpointed $POD_FULL/$CTR to $archive under its checkpoint directory; a static pod naming the archive is InvalidImageName in the kubelet (no CRI call); a static pod naming a checkpoint image of it restores under the kubelet and counts on"
