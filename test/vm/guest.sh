#!/usr/bin/env bash
# The VM side of test/vm/run.sh: says what host this is, then runs the suites named on the
# command line (default: all; NAME=PATTERN for the Go tests PATTERN matches) from the binaries
# run.sh built, and prints their counts.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$repo/test/vm/.build
export CRIB_TEST_CRIB=$build/crib CRIB_TEST_BUSYBOX=$build/busybox.tar
# Waits for things to happen get three times as long under emulation (testutil.Patience).
export CRIB_TEST_PATIENCE=${CRIB_TEST_PATIENCE:-3}
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(root integration-cgroupfs integration-systemd checkpoint-systemd critest-systemd agent install)

echo "== the host"
echo "kernel: $(uname -r)"
echo "stat -fc %T /sys/fs/cgroup: $(stat -fc %T /sys/fs/cgroup)"
echo "cgroup controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
state=$(systemctl is-system-running)
echo "systemctl is-system-running: $state"
[ "$state" = running ] || systemctl --failed --plain --no-legend --no-pager
echo "systemd: $(systemctl --version | head -n1)"
echo "runc: $(runc --version | head -n1)"

# The tests look for crictl where CI installs it.
for tool in crictl critest; do
	command -v $tool >/dev/null && ln -sf "$(command -v $tool)" /usr/local/bin/$tool
done

# The loopback registry of ../shared/conformance, served from the host's data on this guest's
# own loopback.
registry=/var/lib/cri-conformance/registry
if [ -f $registry/config.yml ]; then
	docker-registry serve $registry/config.yml > /tmp/registry.log 2>&1 &
	for _ in $(seq 100); do curl -fs http://127.0.0.1:5000/v2/ >/dev/null && break; sleep 0.2; done
	curl -fs http://127.0.0.1:5000/v2/ >/dev/null && echo "registry: serving on 127.0.0.1:5000" || echo "registry: not up"
	# The host has the registry's data: a test that needs it fails, not skips, without it.
	export CRIB_REQUIRE_REGISTRY=1
fi

# The host's CRIU, when run.sh found one: the checkpoint tests that need it fail, not skip, if it
# does not work on this kernel.
if [ -x "$build/criu/criu" ]; then
	echo "criu: $("$build/criu/criu" --version 2>&1 | head -n1); criu check: $("$build/criu/criu" check 2>&1 | tail -n3)"
	export CRIB_CRIU=$build/criu/criu CRIB_REQUIRE_CRIU=1
fi
[ -x "$build/checkpointctl" ] && export CRIB_CHECKPOINTCTL=$build/checkpointctl

# Whole logs go back to the host, beside the binaries.
logs=$build/logs
mkdir -p "$logs"
results=()
# What failed, with what it reported: printed again after the summary, because a CI log is
# often read only from its end.
failures=$logs/failures.txt
: > "$failures"
status=0
# record NAME PASSED FAILED SKIPPED
# (with the time since the suite began).
record() {
	results+=("$(printf '%-22s %s passed, %s failed, %s skipped (%s s)' "$1:" "$2" "$3" "$4" $((SECONDS - suite_start)))")
	[ "$3" = 0 ] || status=1
}

# go_suite NAME DRIVER PACKAGE... runs the packages' test binaries under the cgroup driver.
go_suite() {
	local name=$1 driver=$2 pkg log p=0 f=0 s=0 rc
	shift 2
	echo "== $name"
	for pkg in "$@"; do
		log=$logs/$name-$(echo "$pkg" | tr / _).log
		local start=$SECONDS
		# Top-level results stream as they come, for a reader of a long CI log.
		(cd "$repo/$pkg" && CRIB_TEST_CGROUP_DRIVER=$driver CRIB_TEST_ARTIFACTS=$logs "$build/$(echo "$pkg" | tr / _).test" \
			-test.v -test.count=1 -test.timeout=40m ${CRIB_VM_SHORT:+-test.short} ${pattern:+-test.run "$pattern"} 2>&1) | tee "$log" | grep --line-buffered -E '^--- ' | sed -u 's/^/  /'
		rc=${PIPESTATUS[0]}
		local pp ff ss
		pp=$(grep -cE '^--- PASS' "$log"); ff=$(grep -cE '^--- FAIL' "$log"); ss=$(grep -cE '^--- SKIP' "$log")
		echo "$pkg: $pp passed, $ff failed, $ss skipped ($((SECONDS - start)) s)"
		# Every skip with its reason (the last line the test logged before it), every failure
		# with its output.
		awk '/^=== RUN/ {reason = ""} /^    [^ ]/ {reason = $0} /^--- SKIP/ {print "  " $0 reason}' "$log"
		if [ "$ff" != 0 ] || [ $rc != 0 ]; then
			echo "  --- what the failed tests reported (whole log: ${log#"$repo/"}) ---"
			grep -E '^\s+[A-Za-z0-9_]+\.go:[0-9]+: ' "$log" | head -n 80 | sed 's/^/  /'
			echo "  --- last 40 lines ---"
			tail -n 40 "$log" | sed 's/^/  /'
			{
				echo "$name $pkg (exit $rc):"
				grep -E '^\s*--- FAIL' "$log" | head -n 10
				# The messages of the failed tests only: a failed test's lines sit between its
				# last "=== RUN/CONT/NAME" and its "--- FAIL".
				awk '/^=== (RUN|CONT|NAME)/ {cur = $3; sub(/\/.*/, "", cur)} /^[ \t]+[A-Za-z0-9_]+\.go:[0-9]+: / {msg[cur] = msg[cur] "\n" $0}
					/^[ \t]*--- FAIL: / {name = $3; sub(/\/.*/, "", name); if (!(name in done)) {done[name] = 1; printf "%s", msg[name]; print ""}}' "$log" |
					grep -v '^$' | tail -n 25
				grep -E '^(panic:|fatal error:)' -A 8 "$log" | head -n 12
			} >> "$failures"
			[ "$ff" != 0 ] || ff=1
		fi
		p=$((p + pp)) f=$((f + ff)) s=$((s + ss))
	done
	record "$name" $p $f $s
}

root_pkgs=$(grep -vE '^test/' "$build/packages")
for spec in "${suites[@]}"; do
	# NAME=PATTERN runs only the tests PATTERN matches (go test -run); CRIB_VM_RUN is the
	# default pattern.
	suite=${spec%%=*} suite_start=$SECONDS
	pattern=${CRIB_VM_RUN:-}
	[ "$suite" = "$spec" ] || pattern=${spec#*=}
	case $suite in
	root) go_suite root cgroupfs $root_pkgs ;;
	integration-cgroupfs) go_suite integration-cgroupfs cgroupfs test/integration test/crictl ;;
	integration-systemd) go_suite integration-systemd systemd test/integration test/crictl ;;
	agent) go_suite agent cgroupfs test/agent ;;
	agent-systemd) go_suite agent-systemd systemd test/agent ;;
	checkpoint-systemd)
		# On the current runc run.sh brought (the guest's 1.1.5 cannot restore on cgroup v2).
		if [ -x "$build/runc/runc" ]; then
			echo "checkpoint-systemd: runc $("$build/runc/runc" --version | head -n1)"
			pattern=${pattern:-'^(TestCheckpoint|TestRestore)'}
			PATH=$build/runc:$PATH go_suite checkpoint-systemd systemd test/integration
		else
			echo "checkpoint-systemd: no current runc in $build/runc (run.sh copies the host's build-runc.sh output)"
			suite_start=$SECONDS; record checkpoint-systemd 0 1 0
		fi
		;;
	critest-systemd)
		echo "== critest-systemd"
		out=$logs/critest-systemd.out
		CRIB_BIN=$build/crib CRIB_CGROUP_DRIVER=systemd REPORT_DIR=$logs/critest-report \
			"$repo/test/conformance/run.sh" > "$out" 2>&1
		rc=$?
		cat "$out"
		summary=$logs/critest-report/summary.txt
		if [ -s $summary ]; then
			read -r cp cf cs < <(tail -n1 $summary | awk '{print $1, $3, $5}')
			[ $rc = 0 ] || [ "$cf" != 0 ] || cf=1
			record critest-systemd "$cp" "$cf" "$cs"
		else
			record critest-systemd 0 1 0
		fi
		;;
	install)
		# crib as a systemd service: scripts/install.sh, reload, kill -9, uninstall.
		echo "== install"
		out=$logs/install.out
		start=$SECONDS
		"$repo/test/vm/install-test.sh" "$build/crib" "$build/busybox.tar" > "$out" 2>&1
		rc=$?
		sed 's/^/  /' "$out"
		echo "install: exit $rc ($((SECONDS - start)) s)"
		if [ $rc = 0 ]; then
			record install 1 0 0
		else
			record install 0 1 0
			{ echo "install (exit $rc):"; grep -A 12 'FAIL:' "$out" | head -n 25; } >> "$failures"
		fi
		;;
	*) echo "unknown suite $suite"; status=1 ;;
	esac
done

if [ -s "$failures" ]; then
	echo "== what failed (the whole logs come back to the host in test/vm/.build/logs)"
	cat "$failures"
fi
echo "== summary (inside the VM: cgroup v2, systemd; $SECONDS s)"
printf '%s\n' "${results[@]}"
exit $status
