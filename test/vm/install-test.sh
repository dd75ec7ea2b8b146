#!/usr/bin/env bash
# The "install" suite of test/vm/guest.sh: crib as a systemd service, on a throwaway VM.
#
#   install (scripts/install.sh) -> a drop-in sets only cgroup_driver = "systemd" -> systemctl start
#   crib -> crictl works, a pod runs in a slice under crib.slice, the default parent of that driver
#   -> systemctl reload with a new registry mirror in a drop-in: the mirror is used, crib and the
#      container are the same processes, a restart-only key is logged
#   -> kill -9 of crib: systemd restarts it and it adopts the container
#   -> stop the pod (its slice goes), uninstall: nothing of crib's is left but the state directories
#      it names.
#
# Usage: install-test.sh CRIB_BINARY BUSYBOX_TARBALL. Each failed check exits non-zero with
# what failed and the end of crib's journal.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:?usage: install-test.sh CRIB_BINARY BUSYBOX_TARBALL}
tarball=${2:?usage: install-test.sh CRIB_BINARY BUSYBOX_TARBALL}
sock=/run/crib/crib.sock
mirror_ref=registry.k8s.io/e2e-test-images/busybox:1.29-2
dropin=/etc/crib/crib.d/50-install-test.toml
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Each step says when it began, in seconds from the start.
step() { echo "install-test: [${SECONDS}s] $*"; }
fail() {
	echo "install-test: FAIL: $*" >&2
	journalctl -u crib.service --no-pager -n 40 >&2 || true
	# Leave the VM to the suites after this one: no pod, no crib.
	if [ -S "$sock" ]; then cri rmp -fa >/dev/null 2>&1 || true; fi
	rm -f "$dropin"
	[ -f /var/lib/crib-install/manifest ] && "$repo/scripts/install.sh" uninstall >/dev/null 2>&1
	exit 1
}
cat > "$work/crictl.yaml" <<EOF
runtime-endpoint: unix://$sock
image-endpoint: unix://$sock
timeout: 60
EOF
cri() { crictl --config "$work/crictl.yaml" "$@"; }
# has PATTERN TEXT: grep on a string, not a pipe (with pipefail, a grep -q that ends early fails the
# pipe's writer with SIGPIPE).
has() { grep -q -- "$1" <<< "$2"; }
journal() { journalctl -u crib.service --no-pager; }
# until SECONDS CMD...: runs CMD every half second until it succeeds, at most SECONDS.
until_ok() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.5
	done
}
mainpid() { systemctl show -p MainPID --value crib.service; }
# ctr_status ID: "STATE PID" of a container, in one crictl call (each costs seconds emulated).
ctr_status() { cri inspect -o go-template --template '{{.status.state}} {{.info.pid}}' "$1"; }

command -v crictl >/dev/null || fail "no crictl on PATH"

step "install"
"$repo/scripts/install.sh" install "$bin" || fail "scripts/install.sh install exited $?"
for f in /usr/local/bin/crib /usr/local/bin/crib-monitor /etc/systemd/system/crib.service /etc/systemd/system/crib-agent.service \
	/etc/crib/crib.toml /etc/cni/net.d/10-crib.conflist; do
	[ -e "$f" ] || fail "install did not put $f in place"
done

step "the systemd cgroup driver, its cgroup_parent left at its default"
# As a new user would: the one key, no cgroup_parent (a path default would refuse to start).
mkdir -p "$(dirname "$dropin")"
echo 'cgroup_driver = "systemd"' > "$dropin"
out=$(/usr/local/bin/crib config dump 2>&1) || fail "crib config dump: $out"
has '^cgroup_parent = "crib.slice"' "$out" || fail "crib config dump does not show the slice default: $out"

step "systemctl start crib"
# Type=notify: start returns once crib said READY=1.
systemctl start crib.service || fail "systemctl start crib failed"
[ "$(systemctl is-active crib.service)" = active ] || fail "crib.service is $(systemctl is-active crib.service) after start"
out=$(cri version 2>&1) || fail "crictl version: $out"
has 'RuntimeName: *crib' "$out" || fail "crictl version does not answer from crib: $out"

step "run a pod and a container"
/usr/local/bin/crib image load "$tarball" >/dev/null || fail "crib image load $tarball"
cat > "$work/pod.json" <<EOF
{"metadata": {"name": "install-test", "namespace": "default", "uid": "install-test-uid"},
 "log_directory": "/var/log/pods/install-test", "linux": {}}
EOF
cat > "$work/ctr.json" <<EOF
{"metadata": {"name": "sleeper"}, "image": {"image": "docker.io/library/busybox:latest"},
 "command": ["sleep", "3600"], "log_path": "sleeper.log", "linux": {}}
EOF
pod=$(cri runp "$work/pod.json") || fail "crictl runp"
ctr=$(cri create "$pod" "$work/ctr.json" "$work/pod.json") || fail "crictl create"
cri start "$ctr" >/dev/null || fail "crictl start"
until_ok 30 sh -c "[ \"\$(crictl --config $work/crictl.yaml inspect -o go-template --template '{{.status.state}}' $ctr)\" = CONTAINER_RUNNING ]" ||
	fail "container $ctr is not running: $(ctr_status "$ctr")"
pid=$(ctr_status "$ctr" | cut -d' ' -f2)
crib_pid=$(mainpid)
[ "${pid:-0}" -gt 0 ] || fail "container $ctr has no pid"
slice=$(cri inspectp -o go-template --template '{{.info.cgroupParent}}' "$pod") || fail "crictl inspectp $pod"
[[ $slice == crib-*.slice ]] || fail "pod $pod's cgroup parent is '$slice', want crib-ID.slice under crib.slice"
[ "$(systemctl is-active "$slice")" = active ] || fail "the pod's slice $slice is $(systemctl is-active "$slice")"
grep -q "^0::/crib.slice/$slice/" "/proc/$pid/cgroup" ||
	fail "container $ctr's process is not under crib.slice/$slice: $(cat "/proc/$pid/cgroup")"

step "a pull needs a mirror"
curl -fs http://127.0.0.1:5000/v2/ >/dev/null || fail "the loopback registry (guest.sh) does not answer on 127.0.0.1:5000"
if timeout 60 crictl --config "$work/crictl.yaml" pull "$mirror_ref" >/dev/null 2>&1; then
	fail "pull of $mirror_ref succeeded before its mirror was configured"
fi
step "systemctl reload crib with the mirror in a drop-in"
cat >> "$dropin" <<'EOF'
shm_size = 33554432

[registries."registry.k8s.io"]
mirrors = ["http://127.0.0.1:5000"]
EOF
systemctl reload crib.service || fail "systemctl reload crib failed"
# The reload is asynchronous (ExecReload sends SIGHUP): wait for crib to log it.
until_ok 30 sh -c 'journalctl -u crib.service --no-pager | grep "configuration reloaded"' ||
	fail "crib did not log a reload"
step "pull through the mirror"
cri pull "$mirror_ref" >/dev/null || fail "pull of $mirror_ref through the reloaded mirror failed"
has 'needs a restart.*key=shm_size' "$(journal)" ||
	fail "the changed shm_size is not logged as needing a restart"
[ "$(mainpid)" = "$crib_pid" ] || fail "crib's pid changed on reload: $crib_pid -> $(mainpid)"
st=$(ctr_status "$ctr")
[ "$st" = "CONTAINER_RUNNING $pid" ] || fail "container $ctr was CONTAINER_RUNNING $pid, is $st after the reload"

step "kill -9 crib: systemd restarts it and it adopts the container"
kill -9 "$crib_pid"
until_ok 60 sh -c "p=\$(systemctl show -p MainPID --value crib.service); [ \"\$p\" != 0 ] && [ \"\$p\" != $crib_pid ] && [ \"\$(systemctl is-active crib.service)\" = active ]" ||
	fail "systemd did not restart crib after kill -9 (MainPID $(mainpid), $(systemctl is-active crib.service))"
st=$(ctr_status "$ctr")
[ "$st" = "CONTAINER_RUNNING $pid" ] || fail "container $ctr was CONTAINER_RUNNING $pid, is $st after crib's restart"
kill -0 "$pid" || fail "the container's process $pid is gone"
has "^$ctr" "$(cri ps -q)" || fail "crictl ps does not list $ctr"

step "stop the pod, uninstall"
cri stopp "$pod" >/dev/null || fail "crictl stopp"
cri rmp "$pod" >/dev/null || fail "crictl rmp"
! systemctl is-active --quiet "$slice" || fail "the pod's slice $slice is still active after crictl rmp"
rm -f "$dropin" # the test's own, not the installer's
rmdir /etc/crib/crib.d || fail "the test left files in /etc/crib/crib.d"
"$repo/scripts/install.sh" uninstall > "$work/uninstall.out" || fail "scripts/install.sh uninstall exited $?"
cat "$work/uninstall.out"
for f in /usr/local/bin/crib /etc/systemd/system/crib.service /etc/systemd/system/crib-agent.service \
	/etc/crib /etc/cni/net.d/10-crib.conflist /var/lib/crib-install; do
	[ ! -e "$f" ] || fail "uninstall left $f"
done
systemctl cat crib.service >/dev/null 2>&1 && fail "systemd still knows crib.service"
for d in /var/lib/crib /run/crib; do
	grep -q "^  $d\$" "$work/uninstall.out" || fail "uninstall does not name the state directory $d it leaves"
done
until_ok 10 sh -c '! pgrep -f "^/usr/local/bin/crib "' || fail "crib processes are left: $(pgrep -af '^/usr/local/bin/crib ')"
step "PASS"
