#!/usr/bin/env bash
# crib's checks, as CI runs them (as root, on Debian with .ci/run's
# packages): vet, staticcheck, every Go test (unit and integration: real
# runc, overlayfs, namespaces), then critest conformance against a fresh
# daemon.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== go vet"
go vet ./...
if command -v staticcheck >/dev/null; then
	echo "== staticcheck"
	staticcheck ./...
fi
echo "== go test"
go test -count=1 -timeout 20m ./...
echo "== critest"
test/conformance/run.sh
