#!/usr/bin/env bash
# Installs crib on a systemd node, or removes what an install put there.
#
#   scripts/install.sh install [BINARY]   BINARY defaults to a fresh `go build ./cmd/crib`;
#                                         crib-monitor is taken from beside it (./cmd/crib-monitor)
#   scripts/install.sh uninstall
#
# install puts in place, and records in $MANIFEST with their checksums:
#   /usr/local/bin/crib, crib-monitor (the program beside each container)
#   /etc/systemd/system/crib.service, crib-agent.service   (from packaging/systemd)
#   /etc/crib/crib.toml              only when there is none: every key commented out at its default
#   /etc/crib/pods/                  the agent's manifest directory, when missing
#   <conf_dir>/10-crib.conflist      only when the CNI conf dir (/etc/cni/net.d) holds no network
# It starts nothing: `systemctl enable --now crib` (and crib-agent) does. Installing again
# replaces the binary and the units and keeps what the first install recorded.
#
# uninstall stops and disables the units, then removes every file of the manifest that is
# unchanged since it was installed (a changed one is kept and named) and the directories it made
# once they are empty. It leaves crib's state - images, pods' records, containers that still run,
# logs - and names those directories.
#
# DESTDIR, when set, is a directory every path above is put under (an image being built, or a
# test); systemctl is then left alone.
#
# A script rather than `crib install`: what it does to a host is readable in one page, and it
# needs nothing but coreutils and systemctl.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
D=${DESTDIR:-}
MANIFEST=$D/var/lib/crib-install/manifest
BIN=$D/usr/local/bin/crib
MONITOR_BIN=$D/usr/local/bin/crib-monitor
UNIT_DIR=$D/etc/systemd/system
CONFIG=$D/etc/crib/crib.toml
tmp=
UNITS=(crib.service crib-agent.service)

log() { printf 'install.sh: %s\n' "$*"; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

systemd_runs() { [ -z "$D" ] && [ -d /run/systemd/system ]; }

# record KIND PATH: a line of the manifest, "file SHA256 PATH" or "dir - PATH", replacing an
# earlier line of PATH.
record() {
	local kind=$1 path=$2 sum=-
	[ "$kind" = file ] && sum=$(sha256sum "$path" | cut -d' ' -f1)
	mkdir -p "$(dirname "$MANIFEST")"
	touch "$MANIFEST"
	awk -v p="$path" '$3 != p' "$MANIFEST" > "$MANIFEST.tmp"
	printf '%s %s %s\n' "$kind" "$sum" "$path" >> "$MANIFEST.tmp"
	mv "$MANIFEST.tmp" "$MANIFEST"
}

# mkdirs DIR: makes DIR and its missing parents, recording each one made.
mkdirs() {
	local dir=$1
	[ -d "$dir" ] && return
	mkdirs "$(dirname "$dir")"
	mkdir -m 0755 "$dir"
	record dir "$dir"
}

# put SRC DEST MODE: installs a file atomically and records it.
put() {
	mkdirs "$(dirname "$2")"
	install -m "$3" "$1" "$2.crib-install.tmp"
	mv "$2.crib-install.tmp" "$2"
	record file "$2"
}

do_install() {
	[ -n "$D" ] || [ "$(id -u)" = 0 ] || die "run as root"
	local bin=${1:-}
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	if [ -z "$bin" ]; then
		command -v go >/dev/null || die "no BINARY given and no go to build one"
		log "building crib and crib-monitor"
		(cd "$repo" && CGO_ENABLED=0 go build -tags containers_image_openpgp -o "$tmp/" ./cmd/crib ./cmd/crib-monitor)
		bin=$tmp/crib
	fi
	"$bin" version >/dev/null || die "$bin does not run"
	local monitor
	monitor=$(dirname "$bin")/crib-monitor
	[ -x "$monitor" ] || die "no crib-monitor beside $bin (CGO_ENABLED=0 go build -o DIR/ ./cmd/crib ./cmd/crib-monitor)"

	# Renamed into place: running monitors keep the file they started from.
	put "$monitor" "$MONITOR_BIN" 0755
	put "$bin" "$BIN" 0755
	for unit in "${UNITS[@]}"; do
		put "$repo/packaging/systemd/$unit" "$UNIT_DIR/$unit" 0644
	done
	if [ ! -e "$CONFIG" ]; then
		{
			echo "# crib's configuration. Every key is at its default, commented out: set a key here"
			echo "# or, better, in a drop-in /etc/crib/crib.d/NAME.toml (merged in name order, later"
			echo "# files win). \`crib config dump\` prints the effective configuration and which file"
			echo "# set each key; \`systemctl reload crib\` applies mirrors and the log level live."
			echo
			"$BIN" config default | sed -e 's/^\([^[:space:]]\)/# \1/' -e 's/^\([[:space:]]\)/#\1/'
		} > "$tmp/crib.toml"
		put "$tmp/crib.toml" "$CONFIG" 0644
	else
		log "keeping the existing $CONFIG"
	fi
	mkdirs "$D/etc/crib/pods"

	local confdir
	confdir=$("$BIN" config dump --config "$CONFIG" 2>/dev/null | sed -n 's/^ *conf_dir = "\(.*\)".*/\1/p' | head -n1)
	[ -n "$confdir" ] || die "cannot read network.conf_dir from \`crib config dump\`"
	confdir=$D$confdir
	if compgen -G "$confdir/*.conflist" >/dev/null || compgen -G "$confdir/*.conf" >/dev/null ||
		compgen -G "$confdir/*.json" >/dev/null; then
		log "keeping the CNI network configuration in $confdir"
	else
		"$BIN" config cni --config "$CONFIG" > "$tmp/10-crib.conflist"
		put "$tmp/10-crib.conflist" "$confdir/10-crib.conflist" 0644
	fi

	if systemd_runs; then
		systemctl daemon-reload
	fi
	log "installed; what it put in place is listed in $MANIFEST"
	log "start it: systemctl enable --now crib.service (and crib-agent.service for the node agent)"
}

# state_dirs prints the directories of crib's state under the effective configuration.
state_dirs() {
	local dump
	dump=$("$BIN" config dump --config "$CONFIG" 2>/dev/null) || true
	for key in root state; do
		printf '%s\n' "$dump" | sed -n "s/^$key = \"\(.*\)\".*/\1/p"
	done
	echo /var/log/pods
}

do_uninstall() {
	[ -n "$D" ] || [ "$(id -u)" = 0 ] || die "run as root"
	[ -f "$MANIFEST" ] || die "no $MANIFEST: nothing was installed by this script"
	local state=
	[ -x "$BIN" ] && state=$(state_dirs)
	if systemd_runs; then
		for unit in crib-agent.service crib.service; do
			grep -q " $UNIT_DIR/$unit\$" "$MANIFEST" || continue
			systemctl disable --now "$unit" 2>/dev/null || true
		done
	fi
	local kind sum path kept=0
	# Files first, then directories deepest first.
	while read -r kind sum path; do
		[ "$kind" = file ] || continue
		if [ ! -e "$path" ]; then
			continue
		elif [ "$(sha256sum "$path" | cut -d' ' -f1)" = "$sum" ]; then
			rm -f "$path"
			log "removed $path"
		else
			log "kept $path: it changed since it was installed"
			kept=1
		fi
	done < "$MANIFEST"
	awk '$1 == "dir" {print $3}' "$MANIFEST" | sort -r | while read -r path; do
		rmdir "$path" 2>/dev/null && log "removed $path/" || log "kept $path/: not empty"
	done
	rm -f "$MANIFEST"
	rmdir "$(dirname "$MANIFEST")" 2>/dev/null || true
	if systemd_runs; then
		systemctl daemon-reload
	fi
	log "uninstalled; crib's state is left in place (remove it once no container of crib's runs):"
	printf '  %s\n' ${state:-/var/lib/crib /run/crib /var/log/pods}
	[ $kept = 0 ] || log "files you changed were kept (above)"
}

case "${1:-}" in
install) shift; do_install "$@" ;;
uninstall) do_uninstall ;;
*) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
