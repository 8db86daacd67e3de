#!/bin/bash
# Debian 12's own Linux kernel for the system-mode tests: the cloud flavour
# (small, serial console built in), fetched from the Debian archive with a
# private apt configuration into the build cache, unpacked, never
# installed.  Writes OUT/vmlinuz and OUT/version.
#
#   scripts/guest-linux.sh amd64|arm64 OUT
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/apt-private.sh"
ARCH=${1:?usage: guest-linux.sh amd64|arm64 OUT}
OUT=${2:?usage: guest-linux.sh amd64|arm64 OUT}
case $ARCH in amd64 | arm64) ;; *)
	echo "guest-linux: unknown architecture '$ARCH' (amd64 or arm64)" >&2
	exit 1
	;;
esac
DL=$CACHE/dl/$ARCH
mkdir -p "$DL" "$OUT"
apt_arch() {
	CACHE=$CACHE/$ARCH apt_private bookworm -o APT::Architecture="$ARCH" \
		-o APT::Architectures="$ARCH" "$@"
}
# The .deb of PACKAGE, downloaded once.
deb_of() { # PACKAGE
	local f
	f=$(find "$DL" -name "$1_*.deb" | head -n 1)
	if [ -z "$f" ]; then
		apt_arch update >/dev/null
		(cd "$DL" && apt_arch download "$1:$ARCH" >/dev/null)
		f=$(find "$DL" -name "$1_*.deb" | head -n 1)
	fi
	[ -n "$f" ] || { echo "guest-linux: cannot download $1" >&2; exit 1; }
	echo "$f"
}
meta=$(deb_of "linux-image-cloud-$ARCH")
# The metapackage names the kernel package of the day.
pkg=$(dpkg-deb -f "$meta" Depends | tr ',' '\n' | grep -o "linux-image-[0-9][^ ]*-cloud-$ARCH" |
	head -n 1)
[ -n "$pkg" ] || { echo "guest-linux: $meta names no kernel package" >&2; exit 1; }
deb=$(deb_of "$pkg")
version=${pkg#linux-image-}
dpkg-deb --fsys-tarfile "$deb" | tar -xO "./boot/vmlinuz-$version" >"$OUT/vmlinuz.tmp"
mv "$OUT/vmlinuz.tmp" "$OUT/vmlinuz"
echo "$version" >"$OUT/version"
