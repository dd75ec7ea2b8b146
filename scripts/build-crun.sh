#!/usr/bin/env bash
# Builds crun 1.21 (the OCI runtime CRI-O runs by default) from the upstream source tarball that Debian trixie
# ships, the way ../shared/conformance/build-criu.sh builds CRIU. Bookworm's own crun 1.8.1 has no `crun
# features` (so crib cannot learn it has id-mapped mounts and "rro", and offers neither user namespaces nor
# recursive read-only mounts on it); 1.21 answers it. Bookworm's build dependencies suffice; bookworm has no
# libcriu-dev, so this crun has no checkpoint (crib refuses checkpoint on it: `crun features` says so).
# One patch, crun-hybrid-cgroup.patch beside this script: crun (1.8.1 and 1.21 alike) refuses every container on a
# cgroup v1 host whose /sys/fs/cgroup/unified holds a controller that v1 does not mount (hugetlb,
# on this CI host: "cgroups in hybrid mode not supported"); patched, it refuses only a controller mounted on both.
# Idempotent; ~60 s on 2 cores the first time (more on a loaded host). Prints the binary's path last.
#   usage: build-crun.sh            -> /var/lib/cri-conformance/crun/bin/crun (CRUN_DEST to change the folder)
set -euo pipefail
ver=1.21 rev=1.21-1
sum=4bfb700e764a4804a4de3ecf07753f4c391005356d60356df65d80ae0914c486   # crun_1.21.orig.tar.gz, trixie's Sources
dest=${CRUN_DEST:-/var/lib/cri-conformance/crun}
bin=$dest/bin/crun
patch=$(dirname "$0")/crun-hybrid-cgroup.patch
stamp="$ver $(sha256sum <"$patch" | cut -c1-16)"
if [ -x "$bin" ] && [ "$(cat "$dest/bin/.built" 2>/dev/null)" = "$stamp" ]; then echo "$bin"; exit 0; fi

apt-get install -y -qq --no-install-recommends build-essential pkg-config libcap-dev libseccomp-dev \
  libsystemd-dev libyajl-dev python3 gperf >&2

# trixie's source index, in apt lists of its own (the host's sources stay as they are); the archive's address
# is taken from the host's own Debian sources.
work=$dest/build; mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null | grep -oE 'https?://[^ ]+/debian/?( |$)' | awk 'NR==1{print $1}' || true)
[ -n "$uri" ] || { echo "build-crun: no Debian archive found in /etc/apt sources" >&2; exit 1; }
echo "deb-src $uri trixie main" >"$work/src.list"
apto=(-o Dir::Etc::sourcelist="$work/src.list" -o Dir::Etc::sourceparts=/nonexistent
      -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache")
tarball=$work/crun_$ver.orig.tar.gz
if ! echo "$sum  $tarball" | sha256sum -c --status 2>/dev/null; then
  apt-get "${apto[@]}" update -qq >&2
  # the .dsc and Debian's patch tarball are not needed: the upstream tarball (configure included) is what we build
  (cd "$work" && apt-get "${apto[@]}" source --download-only "crun=$rev" >&2 || true)
  echo "$sum  $tarball" | sha256sum -c --status || { echo "build-crun: crun_$ver.orig.tar.gz missing or wrong checksum" >&2; exit 1; }
fi
rm -rf "$work/crun-$ver"; tar -C "$work" -xzf "$tarball"
patch -d "$work/crun-$ver" -p1 -s <"$patch"
(cd "$work/crun-$ver" && ./configure --disable-criu --enable-shared=no >"$work/build.log" 2>&1 &&
  make git-version.h >>"$work/build.log" 2>&1 && make -j"$(nproc)" crun >>"$work/build.log" 2>&1) || { tail -20 "$work/build.log" >&2; exit 1; }
install -D -m 0755 "$work/crun-$ver/crun" "$bin"
echo "$stamp" >"$dest/bin/.built"
"$bin" --version >&2
echo "$bin"
