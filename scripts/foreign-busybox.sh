#!/bin/bash
# Debian's busybox-static for a foreign architecture: a shell nobody here
# built, for the -a tests (binfmt_misc) and the named samples of every
# guest architecture.  Downloaded once from the Debian archive into the
# build cache (a private apt configuration for that architecture, so that
# the machine's own apt stays as it is), then unpacked.  Debian 12 has no
# riscv64 port: that one comes from sid.
#
#   scripts/foreign-busybox.sh OUT DEBIAN-ARCH     (arm64, armhf, riscv64, ...)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/apt-private.sh"
OUT=$1
ARCH=${2:-arm64}
SUITE=bookworm
[ "$ARCH" != riscv64 ] || SUITE=sid
DL=$CACHE/dl/$ARCH
mkdir -p "$DL" "$(dirname "$OUT")"
deb=$(find "$DL" -name "busybox-static_*_$ARCH.deb" | head -n 1)
if [ -z "$deb" ]; then
	apt_arch() {
		CACHE=$CACHE/$ARCH apt_private "$SUITE" -o APT::Architecture="$ARCH" \
			-o APT::Architectures="$ARCH" "$@"
	}
	apt_arch update >/dev/null
	(cd "$DL" && apt_arch download "busybox-static:$ARCH" >/dev/null)
	deb=$(find "$DL" -name "busybox-static_*_$ARCH.deb" | head -n 1)
fi
[ -n "$deb" ] || { echo "foreign-busybox: no busybox-static for $ARCH" >&2; exit 1; }
# /bin in Debian 12, /usr/bin in sid.
member=./bin/busybox
dpkg-deb -c "$deb" | grep ' \./bin/busybox$' >/dev/null || member=./usr/bin/busybox
dpkg-deb --fsys-tarfile "$deb" | tar -xO "$member" >"$OUT.tmp"
chmod 755 "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
