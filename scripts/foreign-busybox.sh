#!/bin/bash
# Debian's busybox-static for arm64: a foreign-architecture shell nobody
# here built, for the -a tests (binfmt_misc).  Downloaded once from the
# Debian archive into the build cache (a private apt configuration for
# arm64, so that the machine's own apt stays as it is), then unpacked.
#
#   scripts/foreign-busybox.sh OUT
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/apt-private.sh"
OUT=$1
DL=$CACHE/dl/arm64
mkdir -p "$DL" "$(dirname "$OUT")"
deb=$(find "$DL" -name 'busybox-static_*_arm64.deb' | head -n 1)
if [ -z "$deb" ]; then
	CACHE=$CACHE/arm64 apt_private bookworm -o APT::Architecture=arm64 \
		-o APT::Architectures=arm64 update >/dev/null
	(cd "$DL" && CACHE=$CACHE/arm64 apt_private bookworm -o APT::Architecture=arm64 \
		-o APT::Architectures=arm64 download busybox-static:arm64 >/dev/null)
	deb=$(find "$DL" -name 'busybox-static_*_arm64.deb' | head -n 1)
fi
[ -n "$deb" ] || { echo "foreign-busybox: no busybox-static for arm64" >&2; exit 1; }
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./bin/busybox >"$OUT.tmp"
chmod 755 "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
