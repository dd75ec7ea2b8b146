#!/usr/bin/env bash
# Runs Kubernetes' node conformance suite (test/e2e_node, label
# NodeConformance) against crib, offline, and writes a report: each spec
# passed, failed or skipped, with the reason of every failure and skip
# (issue #21). The suite starts its own etcd, kube-apiserver and namespace
# controller in process and the kubelet it finds next to its binary; the
# kubelet talks to a crib daemon this script starts on its own root, state
# and socket.
#
# Usage: sudo scripts/node-e2e.sh [options]
#   --focus REGEX        run only the specs whose text matches (ginkgo --focus)
#   --skip REGEX         leave out the specs whose text matches
#   --serial             the Serial specs (NodeConformance && Serial && !Slow
#                        && !Flaky), one process, instead of the others
#   --baseline RUNTIME   also run the same selection against containerd after
#                        crib, in the same session, and compare: containerd
#                        (Debian's 1.6) or containerd2 (after
#                        ../shared/conformance/build-containerd2.sh)
#   --only-baseline      run the baseline alone (with --baseline)
#   --sample K[/I]       every K-th spec of the selection (sorted by file, line
#                        and text), starting at the I-th (0-based, default 0),
#                        with the rest of each Ordered group a sampled spec is
#                        in (those pass only with their group)
#   --procs N            ginkgo processes (default 2; the upstream jobs use 8)
#   --no-prepull         do not pull the suite's common images into the runtime
#                        before its run (see prepull)
#   --label-filter EXPR  replace the label filter
#   --build-only         build (or find in the cache) binaries and images, stop
#   --images-only        build and push the images alone (agnhost must be built)
#   --out DIR            where reports go (default $CACHE/reports/DATE)
#   --vm-guest           (set by scripts/node-e2e-vm.sh, which runs this in
#                        scripts/vm.sh's guest) nothing is built: the binaries
#                        come from the cache shared read-only, crib from PATH,
#                        the images from the registry; the kubelet runs under
#                        systemd-run with the systemd cgroup driver, cgroup
#                        root / (kubepods.slice), on cgroup v2
# Environment:
#   NODE_E2E_VERSION     Kubernetes release of the suite and kubelet (v1.37.2)
#   CRIB_NODE_E2E_CACHE  binaries, module, rootfs, reports (/var/cache/crib-node-e2e)
#   CRIB_KUBELET_CACHE   built kubelets, shared with kubelet-stats.sh (/var/cache/crib-kubelet)
#   CRI_CONFORMANCE_DIR  the conformance kit (default ../shared/conformance)
#   REBUILD_IMAGES=1     push the suite's images again even when the registry has them
#   KEEP=1               keep the run's temp dir (crib's log, configs)
#   GOMODCACHE           where the release's source is read (default: go env)
#
# What is built, once, into the cache (at nice 19: see scripts/lib/k8s-build.sh):
# - e2e_node.test (`go test -c k8s.io/kubernetes/test/e2e_node` in a wrapper
#   module; ~23 min cold on 2 idle cores), ginkgo v2 at the version the suite
#   requires, agnhost (static), and the kubelet (kubelet-stats.sh's cache);
# - a Debian bookworm rootfs (debootstrap, minbase with bash, curl, nc,
#   iproute2, dig, procps, socat, util-linux, nginx-light), the base of the
#   suite's images that need a libc userland;
# - the images the suite pulls (test/utils/image/manifest.go at the release),
#   pushed to the loopback registry of ../shared/conformance/images.sh under
#   their upstream paths: agnhost 2.66.1 and 2.55 (Debian + agnhost), busybox
#   1.37.0-2 (the kit's busybox), pause 3.10.2, nginx 1.27.0-2 and 1.28.0-2
#   (Debian's nginx-light), glibc-dns-testing, nonewprivs (the kit's set-uid
#   nnp), nonroot, ipc-utils, perl, kitten, nautilus. crib mirrors
#   $MIRRORED_HOSTS to the registry, so image names stay as the suite has them.
#   Not made: images named by an upstream digest (they cannot exist offline),
#   and images of Slow/Serial-only specs (node-perf, etcd, cadvisor).
#
# What a run touches on the host, and undoes (in a trap, also on failure):
# - /kubepods in each cgroup v1 hierarchy (or in cgroup v2), which the
#   kubelet makes under its cgroup root, / as in the upstream jobs (the
#   Kubelet Cgroup Manager specs look for the pods' cgroups there): every
#   cgroup under it that was not there before the run, deepest first;
# - /var/lib/kubelet, the suite's fixed kubelet root, which the kubelet
#   bind-mounts on itself: every mount under it unmounted, the directory
#   removed when it did not exist before;
# - iptables and ip6tables chains the kubelet adds (KUBE-*): those not there
#   before are emptied, unlinked and deleted (no other chain: the pods' CNI
#   chains go with the pods, and other chains on a shared host are not ours);
# - /var/log/pods and /var/log/containers entries the run made;
# - the sysctls the kubelet sets (saved and written back);
# - a crib daemon on a temp dir with its own bridge; its pods removed over the
#   CRI, the daemon stopped, the bridge deleted; a baseline containerd the same
#   way (containerd-down.sh, on its own instance dirs);
# - processes left by a killed run: only those whose executable is this run's
#   kubelet or e2e_node.test, by pid.
# The kubelet's ports are fixed by the suite (10248, 10250, 10255): one run
# at a time per host. The host needs cgroupfs (no systemd: systemd-run is kept
# out of the suite's PATH, so it starts the kubelet itself).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONF=${CRI_CONFORMANCE_DIR:-$ROOT/../shared/conformance}
VERSION=${NODE_E2E_VERSION:-v1.37.2}
CACHE=${CRIB_NODE_E2E_CACHE:-/var/cache/crib-node-e2e}
KUBELET_CACHE=${CRIB_KUBELET_CACHE:-/var/cache/crib-kubelet}
export PATH=$PATH:/usr/local/go/bin
[ -f "$CONF/lib.sh" ] || { echo "node-e2e.sh: no conformance kit in $CONF" >&2; exit 1; }
. "$CONF/lib.sh" # REGISTRY_ADDR, MIRRORED_HOSTS, registry_up, WORK
. "$ROOT/scripts/lib/k8s-build.sh"

log() { printf '[%s] node-e2e: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

FOCUS='' SKIP='' SAMPLE='' SERIAL=0 BASELINE='' ONLY_BASELINE=0 PROCS=2 LABEL_FILTER='' BUILD_ONLY=0 OUT='' VM_GUEST=0 PREPULL=1
while [ $# -gt 0 ]; do
	case $1 in
	--focus) FOCUS=$2; shift 2 ;;
	--skip) SKIP=$2; shift 2 ;;
	--serial) SERIAL=1; shift ;;
	--sample) SAMPLE=$2; shift 2 ;;
	--baseline) BASELINE=$2; shift 2 ;;
	--only-baseline) ONLY_BASELINE=1; shift ;;
	--procs) PROCS=$2; shift 2 ;;
	--no-prepull) PREPULL=0; shift ;;
	--label-filter) LABEL_FILTER=$2; shift 2 ;;
	--build-only) BUILD_ONLY=1; shift ;;
	--images-only) BUILD_ONLY=2; shift ;;
	--out) OUT=$2; shift 2 ;;
	--vm-guest) VM_GUEST=1; shift ;;
	-h | --help) sed -n '2,/^set -e/{/^set -e/!s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
done
case $BASELINE in "" | containerd | containerd2) ;; *) die "--baseline: containerd or containerd2, not $BASELINE" ;; esac
[ $ONLY_BASELINE = 0 ] || [ -n "$BASELINE" ] || die "--only-baseline needs --baseline"
[[ $PROCS =~ ^[1-9][0-9]*$ ]] || die "--procs: a positive number, not $PROCS"
[ -z "$SAMPLE" ] || [[ $SAMPLE =~ ^[1-9][0-9]*(/[0-9]+)?$ ]] || die "--sample: K or K/I, not $SAMPLE"
if [ -z "$LABEL_FILTER" ]; then
	if [ $SERIAL = 1 ]; then
		LABEL_FILTER='NodeConformance && Serial && !Slow && !Flaky'
	else
		LABEL_FILTER='NodeConformance && !Serial && !Slow && !Flaky'
	fi
fi
[ $SERIAL = 0 ] || PROCS=1

[ "$(id -u)" = 0 ] || die "run as root"
tools=(jq curl crictl iptables)
[ $VM_GUEST = 1 ] && tools+=(crib crib-monitor systemd-run systemctl) || tools+=(go debootstrap)
for c in "${tools[@]}"; do command -v "$c" >/dev/null || die "$c is not installed"; done
if [ $VM_GUEST = 1 ]; then
	[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] && [ "$(cat /proc/1/comm)" = systemd ] ||
		die "--vm-guest: needs cgroup v2 and systemd as PID 1"
	[ $BUILD_ONLY = 0 ] || die "--vm-guest builds nothing"
	# Debian's containerd is not in the VM's image; the kit's 2.x is in
	# the shared /var/lib/cri-conformance.
	[ "$BASELINE" != containerd ] || die "--vm-guest: the baseline is containerd2 (the VM has no Debian containerd)"
fi

BIN=$CACHE/$VERSION
MOD=$CACHE/mod-$VERSION

# build_binaries builds what is missing of e2e_node.test, ginkgo, agnhost
# and the kubelet into $BIN.
build_binaries() {
	mkdir -p "$BIN"
	local ginkgo_version start
	if [ ! -x "$BIN/e2e_node.test" ] || [ ! -x "$BIN/ginkgo" ] || [ ! -x "$BIN/agnhost" ]; then
		ginkgo_version=$(k8s_require "$VERSION" github.com/onsi/ginkgo/v2)
		[ -n "$ginkgo_version" ] || die "no ginkgo v2 in k8s.io/kubernetes@$VERSION's go.mod"
		log "resolving k8s.io/kubernetes@$VERSION's test packages and ginkgo $ginkgo_version in $MOD"
		k8s_module "$MOD" "$VERSION" "k8s.io/kubernetes/test/e2e_node@$VERSION" \
			"github.com/onsi/ginkgo/v2/ginkgo@$ginkgo_version" "k8s.io/kubernetes/test/images/agnhost@$VERSION" ||
			die "module setup failed"
	fi
	if [ ! -x "$BIN/e2e_node.test" ]; then
		log "building e2e_node.test $VERSION (nice $K8S_BUILD_NICE; ~23 min cold on 2 idle cores)"
		start=$SECONDS
		k8s_go "$MOD" test -c -trimpath -ldflags "$(k8s_ldflags "$VERSION")" -o "$BIN/e2e_node.test.tmp" \
			k8s.io/kubernetes/test/e2e_node || die "e2e_node.test build failed"
		mv "$BIN/e2e_node.test.tmp" "$BIN/e2e_node.test"
		log "e2e_node.test built in $((SECONDS - start))s"
	fi
	if [ ! -x "$BIN/ginkgo" ]; then
		k8s_go "$MOD" build -trimpath -o "$BIN/ginkgo.tmp" github.com/onsi/ginkgo/v2/ginkgo || die "ginkgo build failed"
		mv "$BIN/ginkgo.tmp" "$BIN/ginkgo"
	fi
	if [ ! -x "$BIN/agnhost" ]; then
		log "building agnhost (static)"
		CGO_ENABLED=0 k8s_go "$MOD" build -trimpath -ldflags "$(k8s_ldflags "$VERSION")" -o "$BIN/agnhost.tmp" \
			k8s.io/kubernetes/test/images/agnhost || die "agnhost build failed"
		mv "$BIN/agnhost.tmp" "$BIN/agnhost"
	fi
	local kubelet
	kubelet=$(k8s_build_kubelet "$VERSION" "$KUBELET_CACHE") || die "kubelet build failed"
	# The suite runs the kubelet it finds beside its own binary.
	ln -sfn "$kubelet" "$BIN/kubelet"
}

# K8S_SRC is the release's source in the module cache (image Dockerfiles'
# files: agnhost's porter certificates, kitten's and nautilus's pages).
k8s_src() { GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$VERSION" | jq -r .Dir; }

# debian_rootfs makes the Debian rootfs the libc images stand on, once.
debian_rootfs() {
	local fs=$CACHE/rootfs/debian
	[ -f "$fs.done" ] && return 0
	log "debootstrap bookworm into $fs (once; a few minutes)"
	rm -rf "$fs.tmp"
	mkdir -p "$CACHE/rootfs"
	nice -n 19 debootstrap --variant=minbase \
		--include=bash,curl,ca-certificates,netcat-openbsd,iproute2,bind9-dnsutils,iputils-ping,procps,socat,util-linux,nginx-light \
		bookworm "$fs.tmp" http://deb.debian.org/debian >"$CACHE/rootfs/debootstrap.log" 2>&1 ||
		die "debootstrap failed: $(tail -5 "$CACHE/rootfs/debootstrap.log")"
	# What an image does not carry: apt's caches and lists, debootstrap's
	# leftovers, device nodes (the runtime makes /dev).
	rm -rf "$fs.tmp"/var/cache/apt/archives/*.deb "$fs.tmp"/var/lib/apt/lists/* "$fs.tmp"/debootstrap \
		"$fs.tmp"/dev/* "$fs.tmp"/proc/* "$fs.tmp"/sys/* "$fs.tmp"/run/* "$fs.tmp"/tmp/* "$fs.tmp"/var/log/*.log
	rm -rf "$fs"
	mv "$fs.tmp" "$fs"
	touch "$fs.done"
}

# image_present REF: the registry already has REF's tag.
image_present() {
	local path=${1#*/} tag=${1##*:}
	path=${path%:*}
	curl -fsS -m 5 -o /dev/null -I -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
		"http://$REGISTRY_ADDR/v2/$path/manifests/$tag"
}

# build_images pushes the suite's images to the loopback registry.
build_images() {
	local e2e=registry.k8s.io/e2e-test-images
	local refs=("$e2e/agnhost:2.66.1" "$e2e/agnhost:2.55" "$e2e/busybox:1.37.0-2" "registry.k8s.io/pause:3.10.2"
		"$e2e/nginx:1.27.0-2" "$e2e/nginx:1.28.0-2" "$e2e/glibc-dns-testing:2.1.1" "$e2e/nonewprivs:1.4"
		"$e2e/nonroot:1.5" "$e2e/ipc-utils:1.4" "$e2e/perl:5.26" "$e2e/kitten:1.8" "$e2e/nautilus:1.8")
	# The recipe (this function and the image builder): a changed one pushes
	# the images again, so a registry never serves an older recipe's.
	local missing=0 r recipe
	recipe=$({ declare -f build_images; cat "$ROOT"/scripts/node-e2e-images/main.go; } | sha256sum | cut -c1-16)
	if registry_up && [ "${REBUILD_IMAGES:-0}" != 1 ] && [ "$(cat "$CACHE/images.recipe" 2>/dev/null)" = "$recipe" ]; then
		for r in "${refs[@]}"; do image_present "$r" || { missing=1; break; }; done
		[ $missing = 1 ] || { log "the registry has the suite's images"; return 0; }
	fi
	rm -f "$CACHE/images.recipe"
	# The kit's registry, busybox, pause and nnp.
	if ! registry_up || [ ! -x "$WORK/build/busybox/busybox" ] || [ ! -x "$WORK/build/pause" ] || [ ! -x "$WORK/build/nnp" ]; then
		log "running $CONF/images.sh (registry, busybox, pause, nnp)"
		"$CONF/images.sh" >&2 || die "images.sh failed"
	fi
	debian_rootfs
	local src L=$CACHE/layers DEB=$CACHE/rootfs/debian
	src=$(k8s_src) || die "no k8s.io/kubernetes@$VERSION source in the module cache"
	rm -rf "$L"
	mkdir -p "$L"

	# busybox: the kit's static busybox with a link per applet, every one
	# in /bin as in Docker's busybox image, the suite's base (the Sysctls
	# specs run /bin/sysctl, which busybox itself installs in /sbin).
	local bb=$WORK/build/busybox/busybox
	mkdir -p "$L/busybox/bin" "$L/busybox/etc" "$L/busybox/root" "$L/busybox/home" "$L/busybox/var/www" \
		"$L/busybox/usr/bin" "$L/busybox/usr/sbin" "$L/busybox/sbin" "$L/busybox/tmp"
	chmod 1777 "$L/busybox/tmp"
	cp "$bb" "$L/busybox/bin/busybox"
	"$bb" --list-full | while read -r a; do
		a=${a##*/}
		[ "$a" = busybox ] || [ -e "$L/busybox/bin/$a" ] || ln -s /bin/busybox "$L/busybox/bin/$a"
	done
	cp "$CACHE/rootfs/debian/etc/passwd" "$CACHE/rootfs/debian/etc/group" "$L/busybox/etc/"
	# nonewprivs: a set-uid root program printing its effective uid.
	mkdir -p "$L/nnp/usr/local/bin"
	install -m 4755 "$WORK/build/nnp" "$L/nnp/usr/local/bin/nnp"
	mkdir -p "$L/pause"
	install -m 0755 "$WORK/build/pause" "$L/pause/pause"
	# agnhost over Debian: its binary, the user and group of the
	# SupplementalGroups specs, the porter certificates, /uploads.
	mkdir -p "$L/agnhost/etc" "$L/agnhost/uploads"
	install -m 0755 "$BIN/agnhost" "$L/agnhost/agnhost"
	ln -s agnhost "$L/agnhost/agnhost-2"
	cp "$src/test/images/agnhost/porter/localhost.crt" "$src/test/images/agnhost/porter/localhost.key" "$L/agnhost/" 2>/dev/null || true
	chmod 0644 "$L"/agnhost/localhost.* 2>/dev/null || true
	cp "$CACHE/rootfs/debian/etc/passwd" "$CACHE/rootfs/debian/etc/group" "$L/agnhost/etc/"
	# Upstream agnhost is Alpine, whose userland is busybox: specs that
	# change a busybox container's image to agnhost run the same command in
	# it (Containers Lifecycle's `nmeter`). The kit's busybox (defconfig)
	# supplies every applet Debian lacks, linked under /usr (Debian's /bin
	# and /sbin are links to /usr/bin and /usr/sbin, which a directory in
	# this layer would replace); Debian's own tools stay.
	mkdir -p "$L/agnhost/usr/bin" "$L/agnhost/usr/sbin"
	install -m 0755 "$bb" "$L/agnhost/usr/bin/busybox"
	local a dir
	"$bb" --list-full | while read -r a; do
		case ${a%/*} in bin | usr/bin) dir=usr/bin ;; *) dir=usr/sbin ;; esac
		a=${a##*/}
		[ -e "$DEB/usr/bin/$a" ] || [ -e "$DEB/usr/sbin/$a" ] || [ -L "$DEB/usr/bin/$a" ] || [ -L "$DEB/usr/sbin/$a" ] ||
			[ -L "$L/agnhost/$dir/$a" ] || ln -s /usr/bin/busybox "$L/agnhost/$dir/$a"
	done
	echo 'user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh' >>"$L/agnhost/etc/passwd"
	printf 'user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n' >>"$L/agnhost/etc/group"
	local page
	for page in kitten nautilus; do
		mkdir -p "$L/$page"
		cp "$src/test/images/$page/html/"* "$L/$page/"
		chmod 0644 "$L/$page/"*
	done

	cat >"$L/spec.json" <<-EOF
	[
	 {"ref": "$e2e/busybox:1.37.0-2", "layers": ["$L/busybox"], "cmd": ["sh"]},
	 {"ref": "$e2e/nonewprivs:1.4", "layers": ["$L/busybox", "$L/nnp"], "cmd": ["nnp"]},
	 {"ref": "registry.k8s.io/pause:3.10.2", "layers": ["$L/pause"], "entrypoint": ["/pause"], "user": "65535:65535"},
	 {"ref": "$e2e/agnhost:2.66.1", "layers": ["$DEB", "$L/agnhost"], "entrypoint": ["/agnhost"], "cmd": ["pause"],
	  "ports": ["80/tcp", "8080/tcp", "8081/tcp", "9376/tcp", "5000/tcp"]},
	 {"ref": "$e2e/agnhost:2.55", "layers": ["$DEB", "$L/agnhost"], "entrypoint": ["/agnhost"], "cmd": ["pause"],
	  "ports": ["80/tcp", "8080/tcp", "8081/tcp", "9376/tcp", "5000/tcp"], "labels": {"crib.node-e2e/version": "2.55"}},
	 {"ref": "$e2e/kitten:1.8", "layers": ["$DEB", "$L/agnhost", "$L/kitten"], "entrypoint": ["/agnhost"], "cmd": ["test-webserver"]},
	 {"ref": "$e2e/nautilus:1.8", "layers": ["$DEB", "$L/agnhost", "$L/nautilus"], "entrypoint": ["/agnhost"], "cmd": ["test-webserver"]},
	 {"ref": "$e2e/nginx:1.27.0-2", "layers": ["$DEB"], "cmd": ["nginx", "-g", "daemon off;"], "stopSignal": "SIGQUIT", "ports": ["80/tcp"],
	  "labels": {"crib.node-e2e/version": "1.27.0-2"}},
	 {"ref": "$e2e/nginx:1.28.0-2", "layers": ["$DEB"], "cmd": ["nginx", "-g", "daemon off;"], "stopSignal": "SIGQUIT", "ports": ["80/tcp"],
	  "labels": {"crib.node-e2e/version": "1.28.0-2"}},
	 {"ref": "$e2e/glibc-dns-testing:2.1.1", "layers": ["$DEB"], "cmd": ["bash"]},
	 {"ref": "$e2e/nonroot:1.5", "layers": ["$DEB"], "user": "1234", "cmd": ["bash"]},
	 {"ref": "$e2e/ipc-utils:1.4", "layers": ["$DEB"], "cmd": ["sh"]},
	 {"ref": "$e2e/perl:5.26", "layers": ["$DEB"], "cmd": ["perl", "-de0"]}
	]
	EOF
	log "building and pushing the suite's images to $REGISTRY_ADDR"
	(cd "$ROOT" && nice -n "$K8S_BUILD_NICE" go build -o "$CACHE/node-e2e-images" ./scripts/node-e2e-images) || die "node-e2e-images build failed"
	"$CACHE/node-e2e-images" -spec "$L/spec.json" -registry "$REGISTRY_ADDR" >&2 || die "image push failed"
	echo "$recipe" >"$CACHE/images.recipe"
}

if [ $BUILD_ONLY = 2 ]; then
	[ -x "$BIN/agnhost" ] || die "no $BIN/agnhost: build it first (--build-only)"
	build_images
	exit 0
fi
# check_prebuilt: in the guest, what the host built must be there.
check_prebuilt() {
	local b r
	for b in e2e_node.test ginkgo kubelet; do
		[ -x "$BIN/$b" ] || die "no $BIN/$b: build it on the host (scripts/node-e2e.sh --build-only)"
	done
	registry_up || die "no registry on $REGISTRY_ADDR"
	for r in registry.k8s.io/e2e-test-images/agnhost:2.66.1 registry.k8s.io/e2e-test-images/busybox:1.37.0-2 registry.k8s.io/pause:3.10.2; do
		image_present "$r" || die "the registry has no $r: push the images on the host (scripts/node-e2e.sh --images-only)"
	done
}
if [ $VM_GUEST = 1 ]; then
	check_prebuilt
else
	build_binaries
	build_images
fi
[ $BUILD_ONLY = 1 ] && { log "built: $(ls "$BIN" | tr '\n' ' ')"; exit 0; }

# select_sample writes $OUT/sample.txt, the texts of the sampled specs, and
# sets FOCUS to a regular expression matching exactly them. The selection
# is listed by a dry run (no setup runs, ~2 s).
select_sample() {
	local k=${SAMPLE%/*} i=0 dry=$D/dry
	[[ $SAMPLE == */* ]] && i=${SAMPLE#*/}
	[ "$i" -lt "$k" ] || die "--sample $SAMPLE: the start must be below $k"
	dry_run "$dry" || die "the dry run listing the selection failed: $(tail -5 "$dry/log")"
	# One line per spec: leaf file, leaf line, full text, its containers'
	# locations.
	jq -r '.[].SpecReports[] | select(.LeafNodeType == "It" and .State == "passed") |
		[.LeafNodeLocation.FileName, .LeafNodeLocation.LineNumber,
		 ((.ContainerHierarchyTexts + [.LeafNodeText]) | map(select(. != "")) | join(" ")),
		 ([.ContainerHierarchyLocations[] | "\(.FileName):\(.LineNumber)"] | join(" "))] | @tsv' "$dry/report.json" |
		sort -t $'\t' -k1,1 -k2,2n -k3,3 >"$dry/all.tsv"
	local total
	total=$(wc -l <"$dry/all.tsv")
	[ "$total" -gt 0 ] || die "the selection is empty"
	# The unit of sampling is a spec, or the innermost container of a spec
	# under an Ordered container: in the suite's Ordered groups the first
	# spec of such a container makes the pod the next ones look at, so its
	# specs pass only together. A container is Ordered when the line
	# declaring it says so (the source is in the module cache).
	local modcache loc file line
	modcache=${GOMODCACHE:-$(go env GOMODCACHE)}
	for loc in $(cut -f4 "$dry/all.tsv" | tr ' ' '\n' | sort -u); do
		file=${loc%:*} line=${loc##*:}
		sed -n "${line}p" "$modcache/$file" 2>/dev/null | grep -q '\bOrdered\b' && echo "$loc"
	done >"$dry/ordered"
	awk -F'\t' -v k="$k" -v i="$i" '
		NR == FNR {ordered[$1]; next}
		{
			unit = $1 ":" $2 " " $3
			n = split($4, locs, " ")
			for (j = 1; j <= n; j++) if (locs[j] in ordered) { unit = locs[n]; break }
			if (!(unit in index_of)) index_of[unit] = units++
			if (index_of[unit] % k == i) print $3
		}
		END {print units > "'"$dry/units"'"}' "$dry/ordered" "$dry/all.tsv" | sort -u >"$OUT/sample.txt"
	# Ginkgo matches a focus against the suite's description, a space and
	# the spec's texts joined by spaces: ^DESC (text|text|...)$, every
	# metacharacter escaped.
	local desc n want
	desc=$(jq -r '.[0].SuiteDescription' "$dry/report.json")
	re_quote() { sed 's/[][\.*^$+?(){}|/]/\\&/g'; }
	FOCUS="^$(echo "$desc" | re_quote) ($(re_quote <"$OUT/sample.txt" | paste -sd'|'))\$"
	# Specs of one text (made in a loop) are all run.
	n=$(awk -F'\t' 'NR == FNR {want[$0]; next} $3 in want' "$OUT/sample.txt" "$dry/all.tsv" | wc -l)
	# The focus must select exactly the sample: the suite's text is matched
	# as ginkgo joins it.
	dry_run "$dry.check" || die "the dry run of the sample failed: $(tail -5 "$dry.check/log")"
	want=$(jq '[.[].SpecReports[] | select(.LeafNodeType == "It" and .State == "passed")] | length' "$dry.check/report.json")
	[ "$want" = "$n" ] || die "the sample's focus selects $want specs, not $n"
	log "sample $SAMPLE: $n of $total specs ($(cat "$dry/units") units: a spec, or the specs of one container under an Ordered one); list in $OUT/sample.txt"
}

# dry_run DIR lists the selection in DIR/report.json without running it.
dry_run() {
	local args=(--dry-run --label-filter="$LABEL_FILTER" --json-report=report.json --output-dir="$1" --no-color)
	[ -n "$FOCUS" ] && args+=(--focus="$FOCUS")
	[ -n "$SKIP" ] && args+=(--skip="$SKIP")
	mkdir -p "$1"
	(cd "$1" && "$BIN/ginkgo" "${args[@]}" "$BIN/e2e_node.test" -- --prepull-images=false) >"$1/log" 2>&1
}

# ---- a run ----
STAMP=$(date +%Y%m%d-%H%M%S)
OUT=${OUT:-$CACHE/reports/$STAMP}
mkdir -p "$OUT"
D=$(mktemp -d /tmp/crib-node-e2e.XXXXXX)
CG=kubepods CGROUP_DRIVER=cgroupfs
if [ $VM_GUEST = 1 ]; then
	# The suite writes its kubeconfig, kubelet config and static pod
	# directory beside its binary and finds the kubelet there: a directory
	# of links to the read-only shared ones.
	mkdir -p "$D/e2e-bin"
	for b in e2e_node.test ginkgo kubelet; do ln -s "$(readlink -f "$BIN/$b")" "$D/e2e-bin/$b"; done
	BIN=$D/e2e-bin
	# The kubelet's pods under kubepods.slice, as on a systemd node.
	CG=kubepods.slice CGROUP_DRIVER=systemd
fi
SYSCTLS=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes)
declare -A SAVED_SYSCTL=()
for s in "${SYSCTLS[@]}"; do SAVED_SYSCTL[$s]=$(cat "/proc/sys/$s"); done
KUBELET_ROOT=/var/lib/kubelet
[ -e $KUBELET_ROOT ] && made_kubelet_root=0 || made_kubelet_root=1
ls /var/log/pods >"$D/logpods.before" 2>/dev/null || true
ls /var/log/containers >"$D/logctrs.before" 2>/dev/null || true
[ -d /var/log/containers ] && made_logdir=0 || made_logdir=1
for t in filter nat mangle; do
	iptables -t $t -S 2>/dev/null | awk '$1 == "-N" {print $2}' >"$D/chains4.$t" || true
	ip6tables -t $t -S 2>/dev/null | awk '$1 == "-N" {print $2}' >"$D/chains6.$t" || true
done
daemon_pid=
runtime_down=

# kill_ours stops any process whose executable is the run's kubelet or
# e2e_node.test (a run killed half-way leaves them), by pid.
kill_ours() {
	local -
	set +e # undoing goes on past what fails
	local exe p pids=() targets=("$(readlink -f "$BIN/kubelet")" "$(readlink -f "$BIN/e2e_node.test")")
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null) || continue
		for t in "${targets[@]}"; do [ "$exe" = "$t" ] && pids+=("${p#/proc/}"); done
	done
	[ ${#pids[@]} = 0 ] && return 0
	log "stopping leftover kubelet/e2e_node.test processes: ${pids[*]}"
	kill "${pids[@]}" 2>/dev/null || true
	for _ in $(seq 100); do
		local alive=0
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && return 0
		sleep 0.1
	done
	kill -9 "${pids[@]}" 2>/dev/null || true
}

# remove_cri_pods stops and removes every pod of the runtime at endpoint $1
# (crictl's default 2 s is too short in the VM: a runtime ends the CNI DEL
# its caller gave up on).
remove_cri_pods() {
	local -
	set +e # undoing goes on past what fails
	local p left
	left=$(crictl -r "$1" pods -q 2>/dev/null) || return 0
	for p in $left; do
		crictl -r "$1" -t 60s stopp "$p" >/dev/null 2>&1
		crictl -r "$1" -t 60s rmp -f "$p" >/dev/null 2>&1 || log "WARNING: could not remove pod $p"
	done
}

# With systemd (the VM), a runtime runs as a service of its own, as on a
# node: the suite's Serial specs find the unit of the runtime's pid and stop
# and start it over D-Bus, which must not be the unit of this script.
# start_unit UNIT LOG PIDFILE CMD... writes /run/systemd/system/UNIT and
# starts it; the pid file follows the service's main pid across restarts.
# KillMode=process, as containerd.service: stopping the runtime leaves its
# containers' monitors running.
start_unit() {
	local unit=$1 logf=$2 pidf=$3
	shift 3
	cat >"/run/systemd/system/$unit" <<-EOF
	[Unit]
	Description=node-e2e.sh's runtime ($*)
	[Service]
	Type=simple
	Environment=PATH=$PATH
	ExecStart=$*
	ExecStartPost=/bin/sh -c 'echo \$MAINPID >$pidf'
	StandardOutput=append:$logf
	StandardError=append:$logf
	KillMode=process
	Delegate=yes
	Restart=no
	EOF
	systemctl daemon-reload && systemctl start "$unit" || die "systemctl start $unit failed: $(systemctl status "$unit" 2>&1 | tail -5)"
	for _ in $(seq 50); do [ -s "$pidf" ] && break; sleep 0.1; done
}

# stop_unit UNIT stops it and removes its file.
stop_unit() {
	[ -f "/run/systemd/system/$1" ] || return 0
	systemctl stop "$1" 2>/dev/null
	systemctl reset-failed "$1" 2>/dev/null
	rm -f "/run/systemd/system/$1"
	systemctl daemon-reload
}

stop_crib() {
	local -
	set +e # undoing goes on past what fails
	[ -n "$daemon_pid" ] || return 0
	# A spec may have restarted the service: its pid is in the pid file.
	[ $CGROUP_DRIVER = systemd ] && daemon_pid=$(cat "$D/crib.pid" 2>/dev/null)
	if kill -0 "$daemon_pid" 2>/dev/null; then
		remove_cri_pods "unix://$D/crib/state/crib.sock"
		kill "$daemon_pid" 2>/dev/null
		for _ in $(seq 300); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$daemon_pid" 2>/dev/null && { log "WARNING: crib survived SIGTERM for 30s; SIGKILL"; kill -9 "$daemon_pid"; }
	fi
	daemon_pid=
	[ $CGROUP_DRIVER = systemd ] && stop_unit crib-node-e2e.service
	ip link del cribe2e0 2>/dev/null || true
	awk -v d="$D/crib/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
		log "WARNING: unmounting leftover $m"
		umount "$m" 2>/dev/null || umount -l "$m"
	done
}

# host_cleanup undoes what the kubelet and the suite did to the host.
host_cleanup() {
	local -
	set +e # undoing goes on past what fails
	kill_ours
	# The kubelet's volumes and its bind mount of its root on itself.
	awk -v d="$KUBELET_ROOT" '$2 == d || index($2, d "/") == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" || log "WARNING: could not unmount $m"
	done
	[ $made_kubelet_root = 1 ] && rm -rf --one-file-system "$KUBELET_ROOT"
	local g u
	if [ $CGROUP_DRIVER = systemd ]; then
		# The kubelet's transient units (systemd-run keeps them after it
		# exits) and the pods' slices.
		for u in $(systemctl list-units --all --plain --no-legend 'kubelet-*.service' | awk '{print $1}') $CG; do
			systemctl stop "$u" 2>/dev/null
			systemctl reset-failed "$u" 2>/dev/null
		done
	fi
	new_cgroups | while read -r g; do
		rmdir "$g" 2>/dev/null || log "WARNING: could not remove cgroup $g"
	done
	local t c ipt f
	for ipt in iptables ip6tables; do
		[ "$ipt" = iptables ] && f=$D/chains4 || f=$D/chains6
		for t in filter nat mangle; do
			# The kubelet's chains only: the CNI chains of pods go with
			# the pods (the runtime's CNI DEL), and other chains on a
			# shared host are not this run's.
			for c in $($ipt -t $t -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}'); do
				grep -qx -- "$c" "$f.$t" && continue
				# Rules that jump to it go first, then its own, then it.
				$ipt -t $t -S | awk -v c="$c" '$1 == "-A" && / -j / { for (i = 1; i <= NF; i++) if ($i == "-j" && $(i+1) == c) { $1 = "-D"; print; break } }' |
					while read -r rule; do eval "$ipt -t $t $rule" 2>/dev/null || true; done
				$ipt -t $t -F "$c" 2>/dev/null
				$ipt -t $t -X "$c" 2>/dev/null || log "WARNING: could not delete $ipt -t $t chain $c"
			done
		done
	done
	local e
	for e in /var/log/pods/*; do
		[ -e "$e" ] && ! grep -qx -- "${e##*/}" "$D/logpods.before" && rm -rf --one-file-system "$e"
	done
	for e in /var/log/containers/*; do
		[ -L "$e" ] && ! grep -qx -- "${e##*/}" "$D/logctrs.before" && rm -f "$e"
	done
	[ $made_logdir = 1 ] && rmdir /var/log/containers 2>/dev/null
	for s in "${!SAVED_SYSCTL[@]}"; do
		[ "$(cat "/proc/sys/$s")" = "${SAVED_SYSCTL[$s]}" ] || echo "${SAVED_SYSCTL[$s]}" >"/proc/sys/$s" ||
			log "WARNING: could not restore $s to ${SAVED_SYSCTL[$s]}"
	done
}

# leftovers prints what a run left on the host after its cleanup: the
# kubelet or the suite still running, mounts, cgroups, the runtimes'
# bridges, iptables chains that were not there before.
leftovers() {
	local -
	set +e
	local t p exe h ipt f c l
	local targets=("$(readlink -f "$BIN/kubelet")" "$(readlink -f "$BIN/e2e_node.test")")
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null) || continue
		for t in "${targets[@]}"; do [ "$exe" = "$t" ] && echo "process ${p#/proc/} ($exe)"; done
	done
	awk -v k="$KUBELET_ROOT" -v d="$D/" -v c="$CACHE/containerd/" '$2 == k || index($2, k "/") == 1 ||
		index($2, d) == 1 || index($2, c) == 1 || index($2, "/run/crib-node-e2e/") == 1 {print "mount " $2}' /proc/self/mounts
	new_cgroups | sed 's/^/cgroup /'
	if [ $CGROUP_DRIVER = systemd ]; then
		systemctl list-units --all --plain --no-legend 'kubelet-*.service' 'kubepods*' crib-node-e2e.service ctrd-node-e2e.service |
			awk '{print "systemd unit " $1}'
	fi
	for l in cribe2e0 e2ectrd0; do ip link show "$l" >/dev/null 2>&1 && echo "link $l"; done
	for ipt in iptables ip6tables; do
		[ "$ipt" = iptables ] && f=$D/chains4 || f=$D/chains6
		for t in filter nat mangle; do
			for c in $($ipt -t $t -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}'); do
				grep -qx -- "$c" "$f.$t" || echo "$ipt -t $t chain $c"
			done
			# Rules the CNI plugins add for a pod name its network.
			$ipt -t $t -S 2>/dev/null | grep -E 'name: \\"(cribe2e|e2ectrd0)\\"' | sed "s/^/$ipt -t $t rule /"
		done
	done
}

cleanup() {
	local rc=$?
	set +e
	log "cleaning up"
	kill_ours
	stop_crib
	[ -n "$runtime_down" ] && eval "$runtime_down" >&2
	host_cleanup
	local left
	left=$(leftovers)
	if [ -n "$left" ]; then
		log "FAIL: left on the host after cleanup:"
		echo "$left" | sed 's/^/  /' >&2
		[ $rc = 0 ] && rc=1
	else
		log "nothing left on the host (processes, mounts, cgroups, links, iptables chains)"
	fi
	if [ "${KEEP:-0}" = 1 ]; then
		log "kept $D"
	else
		rm -rf --one-file-system "$D"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
[ -z "$SAMPLE" ] || select_sample

# kubelet_cgroups lists the kubelet's cgroups (/kubepods and below, in
# every hierarchy, the cgroup2 one of a hybrid host too), deepest first.
kubelet_cgroups() {
	local h
	for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
		[ -L "${h%/}" ] || [ ! -d "$h$CG" ] || find "$h$CG" -depth -type d
	done
}

# new_cgroups lists, deepest first, the kubelet's cgroups that were not
# there when the run began (a kubelet run before may have left /kubepods).
new_cgroups() {
	kubelet_cgroups | grep -vxF -f "$D/cgroups.before" || true
}

start_crib() {
	if [ $VM_GUEST = 1 ]; then
		# vm.sh built them on the host, from this tree.
		mkdir -p "$D/bin"
		cp "$(command -v crib)" "$(command -v crib-monitor)" "$D/bin/"
	else
		log "building crib into $D"
		(cd "$ROOT" && CGO_ENABLED=0 go build -o "$D/bin/" ./cmd/crib ./cmd/crib-monitor) || die "crib build failed"
	fi
	mkdir -p "$D/crib/root" "$D/crib/state" "$D/crib/cni"
	{
		cat <<-EOF
		root = "$D/crib/root"
		state = "$D/crib/state"
		socket = "$D/crib/state/crib.sock"
		log_level = "info"
		cgroup_driver = "$CGROUP_DRIVER"

		# The PodOverhead spec's RuntimeClass names this handler.
		[runtimes.test-handler]
		path = "runc"

		[network]
		conf_dir = "$D/crib/cni"
		name = "cribe2e"
		bridge = "cribe2e0"
		subnet = "10.244.240.0/22"
		EOF
		for h in $MIRRORED_HOSTS; do printf '\n[registries."%s"]\nmirrors = ["http://%s"]\n' "$h" "$REGISTRY_ADDR"; done
	} >"$D/crib.toml"
	if [ $CGROUP_DRIVER = systemd ]; then
		: >"$OUT/crib-daemon.log"
		start_unit crib-node-e2e.service "$OUT/crib-daemon.log" "$D/crib.pid" "$D/bin/crib" daemon --config "$D/crib.toml"
		daemon_pid=$(cat "$D/crib.pid")
	else
		setsid "$D/bin/crib" daemon --config "$D/crib.toml" >"$OUT/crib-daemon.log" 2>&1 </dev/null &
		daemon_pid=$!
		echo "$daemon_pid" >"$D/crib.pid"
	fi
	for _ in $(seq 150); do
		crictl -r "unix://$D/crib/state/crib.sock" version >/dev/null 2>&1 && break
		kill -0 "$daemon_pid" 2>/dev/null || die "crib daemon exited: $(tail -20 "$OUT/crib-daemon.log")"
		sleep 0.2
	done
	ENDPOINT=unix://$D/crib/state/crib.sock PROCESS=crib PIDFILE=$D/crib.pid POD_CIDR=10.244.240.0/22
	log "crib pid $daemon_pid on $ENDPOINT"
}

start_containerd() {
	local v2=() inst=ctrd16
	[ "$1" = containerd2 ] && { v2=(--v2); inst=ctrd2; }
	# An instance of its own (root, state, bridge, subnet), apart from the
	# one critest runs use; the kit's scripts read these from the
	# environment. Its sandbox image is the kubelet's.
	local env=("CRI_CONFORMANCE_WORK=$CACHE/containerd" CRI_CONFORMANCE_RUN=/run/crib-node-e2e
		CNI_BRIDGE=e2ectrd0 CNI_NETWORK=e2ectrd0 POD_SUBNET=10.203.8.0/22 SANDBOX_IMAGE=registry.k8s.io/pause:3.10.2
		"CONTAINERD2_BIN=$WORK/containerd2/bin/containerd")
	ENDPOINT=$(env "${env[@]}" "$CONF/containerd-up.sh" "${v2[@]}" | tail -1) || die "containerd-up.sh failed"
	runtime_down="env ${env[*]} '$CONF/containerd-down.sh' ${v2[*]}"
	PROCESS=containerd PIDFILE=/run/crib-node-e2e/$inst/containerd.pid POD_CIDR=10.203.8.0/22
	[ $CGROUP_DRIVER = systemd ] && containerd_systemd "$1" "$inst"
	log "$1 on $ENDPOINT"
}

# containerd_systemd RUNTIME INSTANCE starts the instance containerd-up.sh
# started again with runc on the systemd cgroup driver, the kubelet's here:
# the kit writes its config for cgroupfs only.
containerd_systemd() {
	local dir=$CACHE/containerd/$2 pid bin
	bin=/usr/bin/containerd
	[ "$1" = containerd2 ] && bin=$WORK/containerd2/bin/containerd
	pid=$(cat "$PIDFILE")
	kill "$pid"
	for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
	kill -0 "$pid" 2>/dev/null && die "$1 did not stop for its restart"
	sed -i 's/SystemdCgroup = false/SystemdCgroup = true/' "$dir/etc/config.toml"
	grep -q 'SystemdCgroup = true' "$dir/etc/config.toml" || die "no SystemdCgroup in $dir/etc/config.toml"
	# The shim is looked up in PATH, beside the binary as the kit does.
	PATH="$(dirname "$bin"):$PATH" start_unit ctrd-node-e2e.service "$dir/containerd.log" "$PIDFILE" "$bin" --config "$dir/etc/config.toml"
	# containerd-down.sh stops it by its pid file, then the unit goes.
	runtime_down+="; stop_unit ctrd-node-e2e.service"
	ready() {
		crictl -r "$ENDPOINT" info 2>/dev/null | jq -e '[.status.conditions[] |
			select((.type == "RuntimeReady" or .type == "NetworkReady") and .status == true)] | length == 2' >/dev/null
	}
	for _ in $(seq 300); do
		ready && break
		kill -0 "$(cat "$PIDFILE")" 2>/dev/null || die "$1 exited: $(tail -20 "$dir/containerd.log")"
		sleep 0.2
	done
	ready || die "$1 is not ready on $ENDPOINT after its restart"
	log "$1 restarted with runc's systemd cgroup driver"
}

# prepull RUNTIME pulls, through the runtime's CRI, the images the suite
# itself pre-pulls by default (NodePrePullImageList and the common tests'
# PrePulledImages at the release) that are made offline, so that no spec's
# timeout includes a first pull: under the VM's emulation a Debian-based
# image takes minutes to unpack. The suite's own pre-pull is off
# (--prepull-images=false) because its list names an image by an upstream
# digest, which cannot exist offline.
prepull() {
	[ $PREPULL = 1 ] || return 0
	local e2e=registry.k8s.io/e2e-test-images ref start=$SECONDS
	for ref in "$e2e/agnhost:2.55" "$e2e/agnhost:2.66.1" "$e2e/busybox:1.37.0-2" "$e2e/nginx:1.27.0-2" \
		"$e2e/perl:5.26" "$e2e/nonewprivs:1.4" "$e2e/ipc-utils:1.4" "$e2e/nonroot:1.5" registry.k8s.io/pause:3.10.2; do
		crictl -r "$ENDPOINT" -i "$ENDPOINT" -t 20m pull "$ref" >/dev/null || die "$1: cannot pre-pull $ref"
	done
	log "$1: pre-pulled the suite's common images in $((SECONDS - start))s"
}

# run_suite RUNTIME runs the selection against the runtime started for it
# and writes $OUT/RUNTIME/{report.json,summary.tsv,results.txt}.
run_suite() {
	local rt=$1 dir=$OUT/$1
	mkdir -p "$dir/artifacts" "$D/run-$rt"
	[ -e "$D/cgroups.before" ] || { kubelet_cgroups; echo /nonexistent; } >"$D/cgroups.before"
	# The suite starts the kubelet under systemd-run when it finds it in
	# PATH; the host has no systemd running, so it must not. A directory
	# holding systemd-run (/usr/bin, where the kubelet also finds mount)
	# is replaced by one of links to all else in it.
	local path dirs=() p n=0
	while read -r p; do
		if [ $CGROUP_DRIVER = cgroupfs ] && [ -n "$p" ] && [ -x "$p/systemd-run" ]; then
			n=$((n + 1))
			# One set per runtime: the baseline's run comes after crib's.
			mkdir -p "$D/path/$rt-$n"
			ln -s "$p"/* "$D/path/$rt-$n/" && rm "$D/path/$rt-$n/systemd-run" || die "cannot make a PATH without systemd-run"
			p=$D/path/$rt-$n
		fi
		dirs+=("$p")
	done < <(echo "$PATH" | tr ':' '\n')
	path=$(IFS=:; echo "${dirs[*]}")
	local ginkgo_args=(--procs="$PROCS" --label-filter="$LABEL_FILTER" --timeout=4h --output-dir="$dir"
		--json-report=report.json --junit-report=junit.xml --no-color)
	[ -n "$FOCUS" ] && ginkgo_args+=(--focus="$FOCUS")
	[ -n "$SKIP" ] && ginkgo_args+=(--skip="$SKIP")
	local kubelet_flags="--fail-cgroupv1=false --cgroup-driver=cgroupfs --cgroups-per-qos=true --cgroup-root=/"
	[ $CGROUP_DRIVER = systemd ] && kubelet_flags="--cgroup-driver=systemd --cgroups-per-qos=true --cgroup-root=/"
	kubelet_flags+=" --kubelet-cgroups= --system-cgroups= --runtime-cgroups= --fail-swap-on=false"
	# The suite's kubelet config has 10.100.0.0/24, which the kubelet hands
	# the runtime (UpdateRuntimeConfig) and crib's default network takes:
	# keep the runtime's own subnet, apart from the test daemons'.
	kubelet_flags+=" --pod-cidr=$POD_CIDR"
	local what=${FOCUS:+", focus '$FOCUS'"}
	[ -n "$SAMPLE" ] && what=", the sample of $OUT/sample.txt"
	log "running the suite against $rt: label filter '$LABEL_FILTER'$what, $PROCS process(es); log $dir/suite.log"
	local start=$SECONDS rc=0
	(cd "$D/run-$rt" && PATH=$path "$BIN/ginkgo" "${ginkgo_args[@]}" "$BIN/e2e_node.test" -- \
		--container-runtime-endpoint="$ENDPOINT" --container-runtime-process-name="$PROCESS" \
		--container-runtime-pid-file="$PIDFILE" --prepull-images=false --report-dir="$dir/artifacts" \
		--kubelet-flags="$kubelet_flags" --v=2) >"$dir/suite.log" 2>&1 || rc=$?
	echo "$((SECONDS - start))" >"$dir/seconds"
	echo "$rc" >"$dir/exit"
	log "$rt: the suite exited $rc after $((SECONDS - start))s"
	summarize "$dir" "$rt"
	kill_ours
}

# summarize DIR RUNTIME writes DIR/summary.tsv (state, spec, reason) and
# DIR/results.txt from ginkgo's JSON report. Specs the filters left out are
# counted, not listed.
summarize() {
	local dir=$1 rt=$2
	[ -f "$dir/report.json" ] || { log "WARNING: no $dir/report.json"; return 0; }
	jq -r '.[].SpecReports[] | select(.LeafNodeType == "It") |
		select(.State != "skipped" or ((.Failure.Message // "") != "")) |
		[.State, ((.ContainerHierarchyTexts + [.LeafNodeText]) | join(" ")),
		 ((.Failure.Message // "") | gsub("[\t\n]+"; " ") | .[0:300])] | @tsv' "$dir/report.json" | sort -t $'\t' -k2 >"$dir/summary.tsv"
	local passed failed skipped unselected
	passed=$(awk -F'\t' '$1 == "passed"' "$dir/summary.tsv" | wc -l)
	failed=$(awk -F'\t' '$1 != "passed" && $1 != "skipped"' "$dir/summary.tsv" | wc -l)
	skipped=$(awk -F'\t' '$1 == "skipped"' "$dir/summary.tsv" | wc -l)
	unselected=$(jq '[.[].SpecReports[] | select(.LeafNodeType == "It" and .State == "skipped" and ((.Failure.Message // "") == ""))] | length' "$dir/report.json")
	{
		echo "$rt: $passed passed, $failed failed, $skipped skipped in $(cat "$dir/seconds")s ($unselected specs not selected)"
		# A suite that fails before any spec (its BeforeSuite) fails none.
		[ "$failed" != 0 ] || [ "$(cat "$dir/exit" 2>/dev/null)" = 0 ] ||
			echo "  the suite exited $(cat "$dir/exit") with no spec failed: see $dir/suite.log"
		awk -F'\t' '$1 != "passed" {printf "  %-8s %s\n           %s\n", $1, $2, $3}' "$dir/summary.tsv"
	} >"$dir/results.txt"
	cat "$dir/results.txt" >&2
}

RUNTIMES=()
[ $ONLY_BASELINE = 1 ] || RUNTIMES+=(crib)
[ -n "$BASELINE" ] && RUNTIMES+=("$BASELINE")
for rt in "${RUNTIMES[@]}"; do
	case $rt in
	crib) start_crib ;;
	*) start_containerd "$rt" ;;
	esac
	prepull "$rt"
	run_suite "$rt"
	case $rt in
	crib) stop_crib ;;
	*)
		# Undoing goes on past what fails, as stop_crib's does: a Serial
		# spec may have stopped and started the runtime's unit.
		eval "$runtime_down" >&2 || log "WARNING: stopping $rt exited $?"
		runtime_down=
		;;
	esac
	# After the runtime: its pods' CNI DEL undoes their chains first.
	host_cleanup
done

# The comparison: each spec's state on both runtimes and the reason of
# each failure, in comparison.tsv (spec, state, state, reason, reason) and
# comparison.txt.
if [ ${#RUNTIMES[@]} -gt 1 ]; then
	a=$OUT/${RUNTIMES[0]}/summary.tsv b=$OUT/${RUNTIMES[1]}/summary.tsv
	join -t $'\t' -j 2 -a 1 -a 2 -e - -o 0,1.1,2.1,1.3,2.3 <(sort -t $'\t' -k2,2 "$a") <(sort -t $'\t' -k2,2 "$b") \
		>"$OUT/comparison.tsv"
	{
		head -1 "$OUT/${RUNTIMES[0]}/results.txt"
		head -1 "$OUT/${RUNTIMES[1]}/results.txt"
		printf '\n%-8s %-8s %s\n' "${RUNTIMES[0]}" "${RUNTIMES[1]}" spec
		awk -F'\t' -v a="${RUNTIMES[0]}" -v b="${RUNTIMES[1]}" '{
			printf "%-8s %-8s %s\n", $2, $3, $1
			if ($2 != "passed" && $4 != "" && $4 != "-") printf "                  %s: %s\n", a, $4
			if ($3 != "passed" && $5 != "" && $5 != "-") printf "                  %s: %s\n", b, $5
		}' "$OUT/comparison.tsv"
	} >"$OUT/comparison.txt"
	log "comparison: $OUT/comparison.txt; ${RUNTIMES[0]} fails where ${RUNTIMES[1]} passes:"
	awk -F'\t' '$2 != "passed" && $3 == "passed" {print "  " $1}' "$OUT/comparison.tsv" >&2
fi
cat "$OUT"/*/results.txt >"$OUT/results.txt" 2>/dev/null || true
log "report: $OUT/results.txt"
