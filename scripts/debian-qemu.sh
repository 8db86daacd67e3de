#!/bin/bash
# Debian 12's own qemu-user-static (built with the log trace backend: no
# USDT probes at all), unpacked, not installed, for the test that the tool
# refuses it in one line: build/debian-qemu/usr/bin/qemu-ARCH-static.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/apt-private.sh"
OUT=$ROOT/build/debian-qemu
DEBVER=1:7.2+dfsg-7+deb12u18+b3

[ ! -x "$OUT/usr/bin/qemu-x86_64-static" ] || exit 0
dl=$CACHE/dl
mkdir -p "$dl"
deb=$dl/qemu-user-static_${DEBVER#1:}_amd64.deb
if [ ! -f "$deb" ]; then
	apt_private bookworm update >/dev/null
	(cd "$dl" && apt_private bookworm download "qemu-user-static=$DEBVER" >/dev/null)
	mv "$dl"/qemu-user-static_*"${DEBVER#1:}"_amd64.deb "$deb" 2>/dev/null || true
fi
rm -rf "$OUT"
mkdir -p "$OUT"
dpkg -x "$deb" "$OUT"
echo "debian-qemu: $OUT/usr/bin" >&2
