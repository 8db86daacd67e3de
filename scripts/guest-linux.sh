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
meta=$(find "$DL" -name "linux-image-cloud-${ARCH}_*.deb" | head -n 1)
if [ -z "$meta" ]; then
	apt_arch update >/dev/null
	(cd "$DL" && apt_arch download "linux-image-cloud-$ARCH:$ARCH" >/dev/null)
	meta=$(find "$DL" -name "linux-image-cloud-${ARCH}_*.deb" | head -n 1)
fi
[ -n "$meta" ] || { echo "guest-linux: no linux-image-cloud-$ARCH" >&2; exit 1; }
# The metapackage names the kernel package of the day.
pkg=$(dpkg-deb -f "$meta" Depends | tr ',' '\n' | grep -o "linux-image-[0-9][^ ]*-cloud-$ARCH" |
	head -n 1)
[ -n "$pkg" ] || { echo "guest-linux: $meta names no kernel package" >&2; exit 1; }
deb=$(find "$DL" -name "${pkg}_*.deb" | head -n 1)
if [ -z "$deb" ]; then
	apt_arch update >/dev/null
	(cd "$DL" && apt_arch download "$pkg:$ARCH" >/dev/null)
	deb=$(find "$DL" -name "${pkg}_*.deb" | head -n 1)
fi
[ -n "$deb" ] || { echo "guest-linux: cannot download $pkg" >&2; exit 1; }
version=${pkg#linux-image-}
dpkg-deb --fsys-tarfile "$deb" | tar -xO "./boot/vmlinuz-$version" >"$OUT/vmlinuz.tmp"
mv "$OUT/vmlinuz.tmp" "$OUT/vmlinuz"
echo "$version" >"$OUT/version"
