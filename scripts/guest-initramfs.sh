#!/bin/bash
# The initramfs of the system-mode tests: Debian's static busybox as the
# shell, tests/guests/linux-init.sh as /init, and a static workload as
# /hot.  Needs root (the /dev/console node).
#
#   scripts/guest-initramfs.sh BUSYBOX INIT WORKLOAD OUT.cpio.gz
set -euo pipefail
BUSYBOX=$1 INIT=$2 WORKLOAD=$3 OUT=$4
for f in "$BUSYBOX" "$INIT" "$WORKLOAD"; do
	[ -f "$f" ] || { echo "guest-initramfs: $f is missing" >&2; exit 1; }
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,dev,proc,sys,tmp}
install -m 755 "$BUSYBOX" "$stage/bin/busybox"
install -m 755 "$INIT" "$stage/init"
install -m 755 "$WORKLOAD" "$stage/hot"
mknod -m 600 "$stage/dev/console" c 5 1
mkdir -p "$(dirname "$OUT")"
(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) | gzip -1 >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
