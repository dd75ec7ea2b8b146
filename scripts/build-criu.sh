#!/usr/bin/env bash
# Builds CRIU 4.1.1 the way ../shared/conformance/build-criu.sh does (the upstream source tarball that Debian
# trixie ships, bookworm's build dependencies), with one patch: criu-inet-passcred.patch beside this script.
# Since Linux 6.16 getsockopt(SO_PASSCRED / SO_PASSSEC) on a socket that is not unix, netlink or bluetooth
# fails with EOPNOTSUPP, and CRIU 4.1.1 asks it of every socket it dumps: no process holding a TCP or UDP
# socket can be checkpointed. Patched, such a socket has the options "not set", as CRIU 4.2 records them
# (upstream commit 4b73985955ec, checkpoint-restore/criu#2705). Its own folder, so the shared build stays as it is.
# Idempotent; ~70 s on 2 cores the first time (more on a loaded host). Prints the binary's path last.
#   usage: build-criu.sh            -> /var/lib/cri-conformance/criu-crib/bin/criu (CRIU_DEST to change the folder)
set -euo pipefail
ver=4.1.1 rev=4.1.1-1
sum=f80a66cb3726bb2116266d4759ce3bcbfab7abdb6b6d430bf20dd41911717afe   # criu_4.1.1.orig.tar.xz, trixie's Sources
dest=${CRIU_DEST:-/var/lib/cri-conformance/criu-crib}
bin=$dest/bin/criu   # runc runs "criu" from PATH: the name stays
patch=$(cd "$(dirname "$0")" && pwd)/criu-inet-passcred.patch
stamp="$ver $(sha256sum <"$patch" | cut -c1-16)"
if [ -x "$bin" ] && [ "$(cat "$dest/bin/.built" 2>/dev/null)" = "$stamp" ]; then echo "$bin"; exit 0; fi

apt-get install -y -qq --no-install-recommends build-essential pkg-config protobuf-c-compiler \
  libprotobuf-c-dev protobuf-compiler libprotobuf-dev python3-protobuf libnl-3-dev libnet1-dev \
  libcap-dev libgnutls28-dev libnftables-dev libbsd-dev uuid-dev >&2

work=$dest/build; mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
tarball=$work/criu_$ver.orig.tar.xz
# The shared build's copy of the tarball, when there is one, saves the download; the checksum vouches for it.
shared=/var/lib/cri-conformance/criu/build/criu_$ver.orig.tar.xz
if ! echo "$sum  $tarball" | sha256sum -c --status 2>/dev/null && echo "$sum  $shared" | sha256sum -c --status 2>/dev/null; then
  cp "$shared" "$tarball"
fi
if ! echo "$sum  $tarball" | sha256sum -c --status 2>/dev/null; then
  # trixie's source index, in apt lists of its own (the host's sources stay as they are); the archive's
  # address is taken from the host's own Debian sources.
  uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null | grep -oE 'https?://[^ ]+/debian/?( |$)' | awk 'NR==1{print $1}' || true)
  [ -n "$uri" ] || { echo "build-criu: no Debian archive found in /etc/apt sources" >&2; exit 1; }
  echo "deb-src $uri trixie main" >"$work/src.list"
  apto=(-o Dir::Etc::sourcelist="$work/src.list" -o Dir::Etc::sourceparts=/nonexistent
        -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache")
  apt-get "${apto[@]}" update -qq >&2
  # the .dsc and Debian's patch tarball may be missing from the archive; the upstream tarball is what we build
  (cd "$work" && apt-get "${apto[@]}" source --download-only "criu=$rev" >&2 || true)
  echo "$sum  $tarball" | sha256sum -c --status || { echo "build-criu: criu_$ver.orig.tar.xz missing or wrong checksum" >&2; exit 1; }
fi
rm -rf "$work/criu-$ver"; tar -C "$work" -xf "$tarball"
patch -d "$work/criu-$ver" -p1 -s <"$patch"
make -C "$work/criu-$ver" -j"$(nproc)" criu >"$work/build.log" 2>&1 || { tail -20 "$work/build.log" >&2; exit 1; }
install -D -m 0755 "$work/criu-$ver/criu/criu" "$bin"
echo "$stamp" >"$dest/bin/.built"
"$bin" check >&2 || echo "build-criu: warning: 'criu check' did not pass on this kernel" >&2
echo "$bin"
