#!/usr/bin/env bash
# Build a single-layer busybox test image as an OCI image-layout tarball.
#
#   scripts/build-busybox-image.sh OUT.tar [NAME:TAG]
#
# The rootfs holds Debian's static busybox with a symlink per applet in /bin,
# /etc/passwd and /etc/group (root, www uid/gid 33, nobody 65534), /tmp and
# /etc/hostname. The image is annotated with NAME:TAG (default
# docker.io/library/busybox:latest) so loading it gives it that tag. Cmd is
# ["sh"], no entrypoint. Needs no network beyond apt when busybox-static is
# missing; the output is reproducible for a given busybox binary.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
	echo "usage: $0 OUT.tar [NAME:TAG]" >&2
	exit 2
fi
out=$1
name=${2:-docker.io/library/busybox:latest}
case $out in
/*) ;;
*) out=$PWD/$out ;;
esac

if ! dpkg -s busybox-static >/dev/null 2>&1; then
	echo "installing busybox-static" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y busybox-static >&2 ||
		{ apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y busybox-static >&2; }
fi
busybox=$(dpkg -L busybox-static | grep -E '/bin/busybox$' | head -n1)
if [[ -z $busybox || ! -x $busybox ]]; then
	echo "$0: busybox binary of busybox-static not found" >&2
	exit 1
fi

cd "$(dirname "$0")/.."
go run ./scripts/busybox-image -busybox "$busybox" -name "$name" -out "$out"
