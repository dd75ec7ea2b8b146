# shellcheck shell=bash
# Builds Kubernetes binaries (the kubelet, test binaries) from the Go module
# proxy. Sourced by scripts/lib/kubelet.sh and scripts/node-e2e.sh, not run.
#
# `go install pkg@version` refuses k8s.io/kubernetes, whose go.mod replaces
# its staging modules (k8s.io/api, client-go, cri-api, kubelet, ...) by
# ./staging paths. So a build runs in a wrapper module that requires
# k8s.io/kubernetes and replaces each of those modules by its published
# v0.<minor>.<patch> version, read from the replace block of
# k8s.io/kubernetes's own go.mod.
#
# Needs go and jq. Builds run under `nice -n $K8S_BUILD_NICE` (default 19),
# so that on a shared machine they take only idle CPU.

K8S_BUILD_NICE=${K8S_BUILD_NICE:-19}

k8s_build_log() { printf '[%s] k8s-build: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# k8s_gomod VERSION prints the path of k8s.io/kubernetes@VERSION's go.mod,
# downloading it.
k8s_gomod() {
	local gomod
	gomod=$(GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$1" | jq -r .GoMod)
	[ -f "$gomod" ] || { k8s_build_log "no go.mod for k8s.io/kubernetes@$1"; return 1; }
	echo "$gomod"
}

# k8s_require VERSION MODULE prints the version of MODULE that
# k8s.io/kubernetes@VERSION requires (ginkgo's CLI must match its library).
k8s_require() {
	local gomod
	gomod=$(k8s_gomod "$1") || return 1
	awk -v m="$2" '$1 == m && $2 ~ /^v/ {print $2; exit}' "$gomod"
}

# k8s_module DIR VERSION PKG... makes DIR the wrapper module for
# k8s.io/kubernetes@VERSION and resolves PKG... (each PKG or PKG@V) in it.
# DIR keeps its go.mod and go.sum, so a second call costs nothing.
k8s_module() {
	local dir=$1 version=$2
	shift 2
	local staging=v0.${version#v1.} gomod mods m
	gomod=$(k8s_gomod "$version") || return 1
	mods=$(sed -n '/^replace (/,/^)/p' "$gomod" | awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}')
	[ -n "$mods" ] || { k8s_build_log "no staging replace block in $gomod"; return 1; }
	mkdir -p "$dir"
	if ! grep -qx "require k8s.io/kubernetes $version" "$dir/go.mod" 2>/dev/null; then
		rm -f "$dir/go.sum"
		{
			echo "module crib.local/k8s-build"
			echo
			sed -n 's/^go /go /p' "$gomod" | head -1
			echo
			echo "require k8s.io/kubernetes $version"
			echo
			echo "replace ("
			for m in $mods; do echo "	$m => $m $staging"; done
			echo ")"
		} >"$dir/go.mod"
	fi
	(cd "$dir" && GOFLAGS=-mod=mod go get "$@" >/dev/null)
}

# k8s_go DIR ARGS... runs `go ARGS...` in the wrapper module DIR at low
# priority, with the version stamped as the release's.
k8s_go() {
	local dir=$1
	shift
	(cd "$dir" && GOFLAGS=-mod=mod nice -n "$K8S_BUILD_NICE" go "$@")
}

# k8s_ldflags VERSION: the version stamp of a release build.
k8s_ldflags() { echo "-X k8s.io/component-base/version.gitVersion=$1"; }

# k8s_build_kubelet VERSION CACHE builds k8s.io/kubernetes/cmd/kubelet at
# VERSION into CACHE/kubelet-VERSION once, and prints its path.
k8s_build_kubelet() {
	local version=$1 cache=$2
	local out=$cache/kubelet-$version
	if [ -x "$out" ]; then
		echo "$out"
		return
	fi
	local mod start=$SECONDS
	mod=$(mktemp -d /tmp/crib-kubelet-mod.XXXXXX)
	k8s_build_log "building kubelet $version from the module proxy in $mod; this takes a while"
	mkdir -p "$cache"
	if ! k8s_module "$mod" "$version" "k8s.io/kubernetes/cmd/kubelet@$version" >&2 ||
		! k8s_go "$mod" build -trimpath -ldflags "$(k8s_ldflags "$version")" -o "$out.tmp" k8s.io/kubernetes/cmd/kubelet >&2; then
		rm -rf "$mod" "$out.tmp"
		k8s_build_log "kubelet build failed"
		return 1
	fi
	mv "$out.tmp" "$out"
	rm -rf "$mod"
	k8s_build_log "kubelet $version built in $((SECONDS - start))s"
	echo "$out"
}
