#!/usr/bin/env bash
# crib's tests on a cgroup v2 + systemd host: builds the test binaries here (the VM has no Go),
# then runs test/vm/guest.sh in the VM of scripts/vm.sh, which prints what host it is and the
# suites' counts. Exit status: non-zero when any suite failed.
#
#   test/vm/run.sh ci           what CI runs (below)
#   test/vm/run.sh [SUITE...]   suites: root (the root-only tests of internal/ and cmd/, cgroupfs),
#                               integration-cgroupfs, integration-systemd, critest-systemd, agent,
#                               agent-systemd, install (test/vm/install-test.sh: crib as a systemd
#                               service), checkpoint-systemd (the checkpoint tests on a current
#                               runc, the host's); default: all but agent-systemd
#
# A suite given as NAME=PATTERN runs only the Go tests PATTERN matches (go test -run);
# CRIB_VM_RUN, when set, is the pattern of the others; CRIB_VM_SHORT=1 runs them with -test.short
# (which leaves out the 200-pod network stress test and the gzip bomb, runs the failure points in
# kill mode only and the timed crash tests at three delays).
# Needs root, Go, and for critest ../shared/conformance (setup.sh, images.sh) on the host.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)

# Packages whose root tests are not built for the VM: the load test, and in "ci" (below) those
# whose tests do not depend on the host's kind.
skip_pkgs=(test/load)

# "ci" is what CI runs, sized to its time budget under software emulation (a fork costs ~50 ms
# there; the whole of it took 31 minutes, now about 22): what depends on the host's kind. The
# host's run (cgroup v1, no systemd) runs every test; tests whose code path does not change with
# cgroup v2 or systemd (requests refused, streaming, exec, logs, images, events, the CLI and
# crictl but its metrics, whose I/O pressure exists on cgroup v2 only) are not run again here,
# and critest covers the CRI surface on the systemd driver. So: the root-only package tests but
# the CLI's and the image store's; on the systemd driver the integration tests that make, limit,
# measure, recover or remove cgroups and systemd units, crictl's metrics, and TestMountOptions
# (volume mount flags applied by the VM's runc under systemd); critest; the cgroup tests on
# cgroupfs; the agent's scenarios that size, resize and remove pod cgroups, and its leak check
# (its kill -9 tests run on the host); and the install suite last (it installs crib on the
# guest, and uninstalls it).
if [ "${1:-}" = ci ]; then
	skip_pkgs+=(cmd/crib internal/image)
	host_kind='TestPodAndContainerLifecycle|TestCrashDuring(RunPodSandbox|CreateAndStartContainer)|TestFailpoints'
	host_kind+='|TestSystemd|TestStats|TestOOM|TestCgroup|TestCDI|TestUpdatePodSandboxResources|TestPodSandboxMetrics'
	host_kind+='|TestDaemonRestartKeepsContainers|TestRestartDuringStartWaitsForIt|TestContainerUnknownAfterRestart'
	host_kind+='|TestRemoveUnmountsRuntimeLeftovers|TestCrictlMetrics|TestMountOptions'
	# runc's failures in an exec racing a stop differ under systemd and cgroup v2.
	host_kind+='|TestLifeEdgeCodes'
	# Checkpoints work on the guest's runc 1.1.5, restores do not: it gives CRIU the new cgroup
	# root on cgroup v1 only, so crib refuses them there (checked here); the checkpoint suite runs
	# the checkpoint and restore tests that make, place or remove cgroups on a current runc.
	host_kind+='|TestRestoreRefusedOnOldRunc'
	set -- root "integration-systemd=^($host_kind)" critest-systemd \
		'checkpoint-systemd=^(TestCheckpointContainer|TestCheckpointRestore|TestCheckpointPod|TestCheckpointRestoreEmptyDir)$' \
		'integration-cgroupfs=^(TestCgroup|TestOOM|TestStats|TestPodAndContainerLifecycle|TestCrashDuringRunPodSandbox)' \
		'agent=^TestScenarios$/^(parallel|NoLeaks)$/^(ResizeInPlace|DeletedManifestTearsDown|InitContainersInOrder|NativeSidecar)$' \
		install
	export CRIB_VM_SHORT=1
fi
cd "$repo"
build=$repo/test/vm/.build
rm -rf "$build"
mkdir -p "$build"

# Test binaries of the packages whose tests need root or a real daemon, named after their path.
echo "vm suite: building test binaries"
pkgs=$(grep -rlE 'RequiresRoot|Geteuid\(\)|Getuid\(\)|testutil\.StartDaemon' --include='*_test.go' cmd internal test |
	xargs -n1 dirname | sort -u | grep -vxF -e test/bench "${skip_pkgs[@]/#/-e}")
# Two at a time (the host has few cores); a failed build fails the run here, not in the VM.
pids=()
for pkg in $pkgs; do
	go test -c -o "$build/$(echo "$pkg" | tr / _).test" "./$pkg" &
	pids+=($!)
	if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for pid in "${pids[@]}"; do wait "$pid"; done
CGO_ENABLED=0 go build -o "$build/" ./cmd/crib ./cmd/crib-monitor ./test/conformance/critestcheck
scripts/build-busybox-image.sh "$build/busybox.tar" >/dev/null
# CRIU for the checkpoint tests: the host's build (vm.sh's image has the libraries it links), named
# criu in a directory of its own as runc wants; and checkpointctl, which the tests read archives with.
criu=${CRIB_CRIU:-/var/lib/cri-conformance/criu/bin/criu}
if [ -x "$criu" ]; then mkdir -p "$build/criu" && cp "$criu" "$build/criu/criu"; fi
# A current runc for the checkpoint suite (the guest's Debian runc 1.1.5 cannot restore on cgroup
# v2): the one ../shared/conformance/build-runc.sh makes for the host's tests (Debian 12 too).
runc_new=${CRIB_VM_CHECKPOINT_RUNC:-/var/lib/cri-conformance/runc/bin/runc}
if [ -x "$runc_new" ]; then mkdir -p "$build/runc" && cp "$runc_new" "$build/runc/runc"; fi
ctl=${CRIB_CHECKPOINTCTL:-$(command -v checkpointctl || true)}
if [ -n "$ctl" ]; then cp "$ctl" "$build/checkpointctl"; fi
echo "$pkgs" > "$build/packages"

export CRIB_VM_ENV="${CRIB_VM_ENV:-} CRIB_VM_RUN CRIB_VM_SHORT CRIB_LEAK_SESSIONS"
exec scripts/vm.sh run --timeout "${CRIB_VM_TIMEOUT:-3000}" -- test/vm/guest.sh "$@"
