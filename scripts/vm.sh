#!/usr/bin/env bash
# A real cgroup v2 + systemd host for crib's tests: a Debian 12 VM under qemu.
#
#   scripts/vm.sh image                     build the cached guest image (once) and print its path
#   scripts/vm.sh run [OPTIONS] -- CMD...   boot a throwaway copy of it, run CMD as root, power off
#
# run options:
#   --timeout SEC   kill the VM after SEC seconds (default 3600); the exit status is then 124
#   --mem MIB       guest memory (default 4096)
#   --cpus N        guest CPUs (default: the host's, at most 4)
# CRIB_VM_SHARES="PATH[:ro] ..." shares more host directories at the same path (:ro read-only).
#
# The image is built from Debian's packages with debootstrap (systemd, runc, CNI plugins, iptables,
# docker-registry, ...) and cached under $CRIB_VM_CACHE (default /var/cache/crib-vm), keyed by
# this script's recipe, so a changed recipe builds a new one. Each run boots a copy-on-write overlay
# of it, so nothing a run does survives it.
#
# Inside, CMD runs under bash in the repository's own path (shared from the host over 9p, so
# test binaries and scripts find their files as on the host), with a freshly built crib first in
# PATH along with crictl and critest from the host when it has them. ../shared (when present)
# and /var/lib/cri-conformance (the loopback registry's data: the guest serves it on its own
# 127.0.0.1:5000) are shared the same way. CMD's output streams back, and its exit status is
# vm.sh's. The VM has no network beyond its own loopback.
#
# Acceleration: KVM when CRIB_VM_ACCEL=kvm (and /dev/kvm opens), else qemu's software
# emulation (TCG), several times slower than the host but available everywhere. The guest boots
# with AppArmor off, as this machine's kernel has none, so that critest runs the same specs.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
# The running VM's qemu, the tail that streams its output, and its directory (for the exit trap).
qemu_pid= tail_pid= work=
cache=${CRIB_VM_CACHE:-/var/cache/crib-vm}
suite=bookworm
packages=(
	systemd systemd-sysv dbus udev kmod iproute2 procps util-linux mount e2fsprogs
	linux-image-amd64 initramfs-tools
	runc containernetworking-plugins iptables busybox-static ca-certificates
	docker-registry curl
	# The shared libraries of the CRIU that build-criu.sh builds on the host (Debian 12 too), which the
	# guest runs for the checkpoint tests; the others it links are in the image already.
	libprotobuf-c1 libnl-3-200 libnet1 libnftables1
)

log() { printf 'vm.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

need_host_tools() {
	local missing=()
	command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
	command -v qemu-img >/dev/null || missing+=(qemu-utils)
	command -v debootstrap >/dev/null || missing+=(debootstrap)
	command -v mkfs.ext4 >/dev/null || missing+=(e2fsprogs)
	if [ ${#missing[@]} -gt 0 ]; then
		log "installing ${missing[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2 ||
			{ apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2; }
	fi
}

# debian_mirror is the Debian mirror apt already uses on this host.
debian_mirror() {
	local m
	m=$(grep -hoE '(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null |
		grep -oE 'https?://[^ ]+' | head -n1)
	echo "${m:-http://deb.debian.org/debian}"
}

# The guest's side of a run: mount the run directory and the shares, run the command with its
# output on the second serial port, record its exit status, power off.
guest_runner() {
	cat <<'EOF'
#!/bin/bash
set -u
run=/run/crib-vm
mkdir -p $run
mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 cribrun $run || { echo "vm: no run share" > /dev/ttyS0; systemctl poweroff --force; exit 1; }
out=/dev/ttyS1
stty -F $out raw -echo 2>/dev/null
while read -r tag path; do
	mkdir -p "$path"
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288,cache=loose "$tag" "$path" ||
		echo "vm: cannot mount share $tag at $path" > $out
done < $run/shares
{
	systemctl is-system-running --wait >/dev/null 2>&1
	echo "vm: $(uname -r), $(nproc) CPUs, $(free -m | awk '/^Mem:/{print $2}') MiB; /sys/fs/cgroup is $(stat -fc %T /sys/fs/cgroup); systemd: $(systemctl is-system-running)"
	cd "$(cat $run/cwd)" || exit 1
	export PATH=$run/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
	[ -f $run/env ] && set -a && . $run/env && set +a
	bash $run/cmd
} > $out 2>&1 < /dev/null
echo $? > $run/exit-code.tmp && mv $run/exit-code.tmp $run/exit-code
sync
systemctl poweroff --force
EOF
}

guest_unit() {
	cat <<'EOF'
[Unit]
Description=Run the command crib's vm.sh passed in
After=multi-user.target
[Service]
# simple, so that boot completes (is-system-running says running) while the command runs.
Type=simple
ExecStart=/usr/local/sbin/crib-vm-run
[Install]
WantedBy=multi-user.target
EOF
}

recipe_key() {
	{ printf '%s\n' "$suite" "${packages[@]}"; guest_runner; guest_unit; declare -f build_image; } | sha256sum | cut -c1-16
}

build_image() {
	local out=$1 root=$cache/root.$$
	need_host_tools
	mkdir -p "$cache"
	rm -rf "$root"
	log "debootstrap $suite into $root (a few minutes)"
	local IFS=,
	debootstrap --variant=minbase --include="${packages[*]}" "$suite" "$root" "$(debian_mirror)" >"$cache/debootstrap.log" 2>&1 ||
		{ tail -30 "$cache/debootstrap.log" >&2; rm -rf "$root"; die "debootstrap failed (log: $cache/debootstrap.log)"; }
	unset IFS
	echo crib-vm > "$root/etc/hostname"
	printf '127.0.0.1 localhost\n127.0.1.1 crib-vm\n::1 localhost\n' > "$root/etc/hosts"
	printf '/dev/vda / ext4 defaults,noatime 0 1\n' > "$root/etc/fstab"
	: > "$root/etc/resolv.conf"
	chroot "$root" passwd -d root >/dev/null
	guest_runner > "$root/usr/local/sbin/crib-vm-run"
	chmod 755 "$root/usr/local/sbin/crib-vm-run"
	guest_unit > "$root/etc/systemd/system/crib-vm-run.service"
	ln -s /etc/systemd/system/crib-vm-run.service "$root/etc/systemd/system/multi-user.target.wants/crib-vm-run.service"
	# The serial console login and the host's registry service are not wanted: the run's
	# command starts what it needs.
	rm -f "$root/etc/systemd/system/multi-user.target.wants/docker-registry.service"
	ln -sf /dev/null "$root/etc/systemd/system/serial-getty@.service"
	ln -sf /dev/null "$root/etc/systemd/system/getty@.service"
	ln -sf /dev/null "$root/etc/systemd/system/systemd-timesyncd.service"
	ln -sf /dev/null "$root/etc/systemd/system/apt-daily.timer"
	ln -sf /dev/null "$root/etc/systemd/system/apt-daily-upgrade.timer"
	ls "$root"/boot/vmlinuz-* >/dev/null || die "no kernel in the image"
	rm -rf "$root/var/cache/apt/archives"/*.deb "$root/var/lib/apt/lists"/*
	mkdir -p "$out.tmp"
	cp "$root"/boot/vmlinuz-* "$out.tmp/vmlinuz"
	cp "$root"/boot/initrd.img-* "$out.tmp/initrd.img"
	truncate -s 16G "$out.tmp/disk.img"
	mkfs.ext4 -q -F -L crib-vm -d "$root" "$out.tmp/disk.img"
	rm -rf "$root" "$out"
	mv "$out.tmp" "$out"
	log "image ready: $out"
}

# image prints the directory of the cached image (vmlinuz, initrd.img, disk.img), building it first
# when the recipe changed. Builds are serialized by a lock.
image() {
	local dir
	dir=$cache/image-$(recipe_key)
	mkdir -p "$cache"
	exec 9>"$cache/lock"
	flock 9
	[ -f "$dir/disk.img" ] || build_image "$dir"
	# Images of other recipes are not needed any more; a run booting one holds its files open.
	find "$cache" -maxdepth 1 -name 'image-*' ! -path "$dir" ! -name '*.tmp' -exec rm -rf {} +
	flock -u 9
	echo "$dir"
}

run() {
	local timeout=3600 mem=4096 cpus
	cpus=$(nproc)
	[ "$cpus" -gt 4 ] && cpus=4
	while [ $# -gt 0 ]; do
		case $1 in
		--timeout) timeout=$2; shift 2 ;;
		--mem) mem=$2; shift 2 ;;
		--cpus) cpus=$2; shift 2 ;;
		--) shift; break ;;
		*) die "run: unknown option $1 (usage: vm.sh run [--timeout SEC] [--mem MIB] [--cpus N] -- CMD...)" ;;
		esac
	done
	[ $# -gt 0 ] || die "run: no command (usage: vm.sh run [OPTIONS] -- CMD...)"
	local n
	for n in "$timeout" "$mem" "$cpus"; do
		[[ $n =~ ^[1-9][0-9]*$ ]] || die "run: $n is not a positive number"
	done
	[ "$(id -u)" = 0 ] || die "run: needs root (qemu shares files with their owners kept)"
	need_host_tools

	local img
	img=$(image)
	work=$(mktemp -d /tmp/crib-vm-XXXXXX)
	# shellcheck disable=SC2317 # called by the trap
	cleanup() {
		if [ -n "$qemu_pid" ]; then kill "$qemu_pid" 2>/dev/null; wait "$qemu_pid" 2>/dev/null; fi
		if [ -n "$tail_pid" ]; then kill "$tail_pid" 2>/dev/null; fi
		rm -rf "$work"
	}
	trap cleanup EXIT
	trap 'exit 130' INT TERM

	mkdir -p "$work/run/bin"
	log "building crib"
	(cd "$repo" && CGO_ENABLED=0 go build -o "$work/run/bin/" ./cmd/crib ./cmd/crib-monitor)
	local tool
	for tool in crictl critest; do
		if command -v "$tool" >/dev/null; then cp "$(command -v "$tool")" "$work/run/bin/"; fi
	done
	printf '%q ' "$@" > "$work/run/cmd"
	echo >> "$work/run/cmd"
	if [ "$PWD" = "$repo" ] || [[ $PWD == "$repo"/* ]]; then echo "$PWD" > "$work/run/cwd"; else echo "$repo" > "$work/run/cwd"; fi
	# Variables a caller passes on (CRIB_VM_ENV="A B") reach the command.
	local name
	for name in ${CRIB_VM_ENV:-}; do
		[ -n "${!name+x}" ] && printf '%s=%q\n' "$name" "${!name}" >> "$work/run/env"
	done

	local shares=("$repo")
	[ -d "$repo/../shared" ] && shares+=("$(cd "$repo/../shared" && pwd)")
	[ -d /var/lib/cri-conformance ] && shares+=(/var/lib/cri-conformance)
	# Directories a caller adds (CRIB_VM_SHARES="PATH[:ro] ..."), at the same path, read-only with
	# :ro; they must exist (mounted in order, so a share inside another comes after it).
	local extra
	for extra in ${CRIB_VM_SHARES:-}; do
		[ -d "${extra%:ro}" ] || die "run: CRIB_VM_SHARES: ${extra%:ro} is not a directory"
		shares+=("$extra")
	done
	local args=() i=0 path ro
	for path in "${shares[@]}"; do
		ro=
		[[ $path == *:ro ]] && { path=${path%:ro}; ro=,readonly=on; }
		args+=(-virtfs "local,path=$path,mount_tag=share$i,security_model=passthrough,id=share$i$ro")
		echo "share$i $path" >> "$work/run/shares"
		i=$((i + 1))
	done
	args+=(-virtfs "local,path=$work/run,mount_tag=cribrun,security_model=passthrough,id=cribrun")

	local accel=(-accel tcg,thread=multi,tb-size=512 -cpu max)
	if [ "${CRIB_VM_ACCEL:-tcg}" = kvm ]; then
		[ -w /dev/kvm ] || die "CRIB_VM_ACCEL=kvm but /dev/kvm does not open"
		accel=(-enable-kvm -cpu host)
	fi
	qemu-img create -q -f qcow2 -F raw -b "$img/disk.img" "$work/disk.qcow2"
	: > "$work/out.log"
	local started=$SECONDS
	log "booting the VM (${accel[0]} ${accel[1]}, $cpus CPUs, $mem MiB)"
	# timeout(1) bounds qemu even if this script is killed. mitigations=off: a throwaway test guest
	# under emulation needs no Spectre defences, and its system calls are a third faster without.
	timeout -k 30 "$timeout" qemu-system-x86_64 "${accel[@]}" -smp "$cpus" -m "$mem" \
		-kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
		-append "root=/dev/vda rw console=ttyS0 quiet systemd.unified_cgroup_hierarchy=1 systemd.show_status=0 panic=-1 apparmor=0 mitigations=off" \
		-drive "file=$work/disk.qcow2,format=qcow2,if=virtio,cache=unsafe,discard=unmap" \
		-nic none -display none -monitor none -no-reboot \
		-serial "file:$work/console.log" -serial "file:$work/out.log" \
		"${args[@]}" </dev/null &
	qemu_pid=$!
	tail -n +1 -f --pid="$qemu_pid" "$work/out.log" &
	tail_pid=$!
	local qemu_status=0
	wait "$qemu_pid" || qemu_status=$?
	qemu_pid=
	wait "$tail_pid" 2>/dev/null || true
	tail_pid=
	if [ "$qemu_status" = 124 ]; then
		log "timed out after ${timeout}s; the VM was stopped"
		return 124
	fi
	if [ ! -f "$work/run/exit-code" ]; then
		log "the VM stopped (qemu status $qemu_status) without the command's exit status; its console:"
		tail -40 "$work/console.log" >&2
		return 1
	fi
	local code
	code=$(cat "$work/run/exit-code")
	log "VM done in $((SECONDS - started)) s; exit status $code"
	return "$code"
}

case ${1:-} in
image) image ;;
run) shift; run "$@" ;;
*) sed -n '2,5p' "$0" >&2; exit 2 ;;
esac
