#!/usr/bin/env bash
# crib's checks, as CI runs them. Run as root on Debian: it installs what
# is missing (runc, busybox-static, staticcheck, crictl and critest, the
# loopback registry with critest's images; all idempotent), then runs gofmt, vet,
# staticcheck, every Go test (unit and integration: real runc, overlayfs,
# namespaces; on a current runc that build-runc.sh makes), each fuzz test
# for a bounded number of inputs (about two minutes in all), critest conformance
# against a fresh daemon, the node agent's scenario suite again against
# Debian's containerd, and the VM suite
# (test/vm/run.sh ci: the tests on a cgroup v2 + systemd host, under qemu;
# CRIB_VM_SUITES names other suites, "none" skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:$(go env GOPATH)/bin
# Image signature policies (internal/sigpolicy) verify in pure Go only with
# this tag (else the library wants cgo and gpgme); every build, vet,
# staticcheck and test below, and the crib binaries tests build, use it.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-tags=containers_image_openpgp"

need=()
for pkg in runc busybox-static containernetworking-plugins iptables iproute2 util-linux ca-certificates curl; do
	dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}"
fi
command -v staticcheck >/dev/null || GOFLAGS= go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
go mod download
../shared/conformance/setup.sh
../shared/conformance/images.sh
# The host's tests and critest run on a current runc (user namespaces need
# its id-mapped mounts); the VM suite runs on Debian's runc 1.1.5, and a
# host test checks that a handler on it refuses user namespaces cleanly.
runc_bin=$(../shared/conformance/build-runc.sh | tail -n1)
# Tests that need the loopback registry fail without it here (images.sh serves it).
export PATH=$(dirname "$runc_bin"):$PATH CRIB_REQUIRE_USERNS=1 CRIB_REQUIRE_REGISTRY=1
echo "runc for the host's tests: $(runc --version | head -n1)"
# CheckpointContainer's tests need CRIU 4.1+ (Debian 12's 3.17 cannot start on
# kernels >= 6.13), patched to dump TCP/UDP sockets on kernels >= 6.16
# (scripts/build-criu.sh says why), and read the archive with checkpointctl;
# v1.7.0 needs a go-criu the module proxy does not serve, v1.6.0 builds. Both
# idempotent.
criu_bin=$(scripts/build-criu.sh | tail -n1)
export CRIB_CRIU=$criu_bin CRIB_REQUIRE_CRIU=1
command -v checkpointctl >/dev/null || GOFLAGS= go install github.com/checkpoint-restore/checkpointctl@v1.6.0
# crun, CRI-O's default runtime, as a second handler the tests and critest also run on: 1.21 from trixie's
# source (bookworm's 1.8.1 has no `crun features`). Idempotent.
crun_bin=$(scripts/build-crun.sh | tail -n1)

echo "== gofmt"
unformatted=$(gofmt -l cmd internal scripts test)
if [ -n "$unformatted" ]; then
	echo "not gofmt-clean:"; echo "$unformatted"; exit 1
fi
echo "== go vet"
go vet ./...
echo "== staticcheck"
staticcheck ./...
echo "== go test"
gotest_log=$(mktemp)
trap 'rm -f "$gotest_log"' EXIT
if ! go test -count=1 -timeout 20m ./... 2>&1 | tee "$gotest_log"; then
	# Again at the end, for a reader of the log's last lines: what failed, with its messages.
	echo "== go test: what failed"
	grep -E '^\s*--- FAIL|^FAIL|^panic:|^\s+[A-Za-z0-9_]+\.go:[0-9]+: ' "$gotest_log" | tail -n 40
	exit 1
fi
# A count, not a duration: go1.26's fuzz coordinator can report its own
# -fuzztime deadline as a failure (golang/go#75804); a count has no deadline.
echo "== fuzz, bounded (CRIB_FUZZTIME each, 30000x unless set; testdata/fuzz holds the corpora)"
for target in internal/sandbox:FuzzValidateSandboxConfig internal/container:FuzzValidateContainerConfig \
	internal/snapshot:FuzzExtract internal/image:FuzzOCIManifest internal/monitor:FuzzLogWriter; do
	go test -run '^$' -fuzz "^${target#*:}\$" -fuzztime "${CRIB_FUZZTIME:-30000x}" "./${target%%:*}"
done
echo "== critest"
test/conformance/run.sh
# The same on crun as the default handler (about as long as on runc), and the
# integration tests of a pod's life on it: lifecycle, exec, attach, logs, user
# namespaces, cgroups, mounts, the failure points (about 3 min in all).
echo "== critest on crun"
CRIB_RUNTIME=$crun_bin test/conformance/run.sh
echo "== integration tests on crun"
crun_tests='PodAndContainerLifecycle|ExecSync|StreamingExec|StreamingAttach|CRILogFormatAndReopen|UserNamespacePod'
crun_tests+='|UserNamespaceSetuidAndSharedPID|UserNamespaceHostNetwork|CgroupLimitsAndUpdate|OOMKilled|MountOptions'
crun_tests+='|RemoveUnmountsRuntimeLeftovers|StopContainerSignals|Failpoints|CheckpointContainer'
CRIB_TEST_RUNTIME=$crun_bin go test -count=1 -timeout 20m -run "^Test($crun_tests)\$" ./test/integration
echo "== node agent scenarios against containerd"
if command -v containerd >/dev/null; then
	scripts/agent-containerd.sh -count=1 -run TestScenarios
else
	echo "containerd is not installed; skipped"
fi
echo "== cgroup v2 + systemd, in a VM (test/vm/run.sh)"
if [ "${CRIB_VM_SUITES:-}" = none ]; then
	echo "CRIB_VM_SUITES=none; skipped"
else
	# shellcheck disable=SC2086 # a list of suite names
	test/vm/run.sh ${CRIB_VM_SUITES:-ci}
fi
