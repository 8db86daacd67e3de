#!/bin/bash
# The code symbols of the tests' Linux guest kernel, as the guest itself
# lists them in /proc/kallsyms (Debian's System.map is a stub that points
# at the -dbg package).  Boots the VM once in kallsyms mode (nokaslr: the
# addresses hold for every boot of this kernel) and keeps the list.
#
#   scripts/guest-kallsyms.sh x86_64|aarch64 QEMU-BIN-DIR OUT
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARCH=$1 BIN=$2 OUT=$3
console=$(mktemp)
trap 'rm -f "$console"' EXIT
timeout 300 "$ROOT/scripts/linux-vm.sh" "$ARCH" "$BIN" kallsyms "$console" >/dev/null
tr -d '\r' <"$console" | sed -n '/^=== kallsyms$/,/^=== end$/p' | sed '1d;$d' >"$OUT.tmp"
n=$(wc -l <"$OUT.tmp")
if [ "$n" -lt 1000 ] || ! grep -q ' T start_kernel$' "$OUT.tmp"; then
	echo "guest-kallsyms: the $ARCH guest listed $n symbols, without start_kernel" >&2
	exit 1
fi
mv "$OUT.tmp" "$OUT"
