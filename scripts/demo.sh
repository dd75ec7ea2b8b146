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
CGO_ENABLED=0 go build -tags containers_image_openpgp -o bin/ ./cmd/crib ./cmd/crib-monitor
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

echo "== the node agent: crib run of a pod manifest (init container, env, a volume; torn down when it ends)"
cat > "$work/hello.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: hello
spec:
  restartPolicy: Never
  initContainers:
  - name: greet
    image: docker.io/library/busybox:latest
    imagePullPolicy: Never
    command: ["sh", "-c", "echo written by the init container > /shared/note"]
    volumeMounts: [{name: shared, mountPath: /shared}]
  containers:
  - name: main
    image: docker.io/library/busybox:latest
    imagePullPolicy: Never
    command: ["sh", "-c", "cat /shared/note; echo pod $(POD) has IP $POD_IP"]
    env:
    - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    volumeMounts: [{name: shared, mountPath: /shared}]
  volumes:
  - {name: shared, emptyDir: {}}
YAML
bin/crib run --root "$work/root" --state "$work/run" --pod-log-root "$work/logs" --status-address "" "$work/hello.yaml"
