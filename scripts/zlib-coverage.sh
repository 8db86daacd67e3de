#!/bin/bash
# Coverage of a cross-compiled project nobody here wrote: Debian's zlib
# (bookworm's source package) built for arm64 with aarch64-linux-gnu-gcc
# (-O0 -g, static), its own test programs (minigzip both ways, example)
# run under qemu-jitbpf --coverage with the patched qemu-aarch64, and the
# tracefile rendered by genhtml.  The page of 2026-11-27 is
# docs/coverage-zlib-arm64.png.
#
#   scripts/zlib-coverage.sh [OUTDIR]     (root; make tool qemu first)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "${1:-$ROOT/build/zlib-coverage}" && cd "${1:-$ROOT/build/zlib-coverage}" && pwd)
TOOL=$ROOT/build/bin/qemu-jitbpf
QA=$ROOT/build/qemu-10.2.2/bin/qemu-aarch64
if [ ! -x "$TOOL" ] || [ ! -x "$QA" ]; then
	echo "zlib-coverage: make tool qemu first" >&2
	exit 1
fi
# shellcheck source=scripts/apt-private.sh
. "$ROOT/scripts/apt-private.sh"

cd "$OUT"
if [ ! -x src/example ]; then
	rm -rf src
	ls zlib_*.dsc >/dev/null 2>&1 || apt_private bookworm source --download-only zlib >/dev/null
	dpkg-source -q -x zlib_*.dsc src >/dev/null
	(cd src && CC=aarch64-linux-gnu-gcc CFLAGS="-O0 -g" ./configure --static >/dev/null &&
		make example minigzip LDFLAGS=-static >/dev/null)
fi
cd src
# One tracefile for the three processes of the little test suite.
"$TOOL" --coverage="$OUT/zlib.info" -- sh -c \
	"echo hello world | $QA ./minigzip | $QA ./minigzip -d && $QA ./example $OUT/foo.gz" >/dev/null
rm -rf "$OUT/html"
genhtml -q -o "$OUT/html" --title "zlib $(sed -n 's/^Version: //p' ../zlib_*.dsc) arm64 under qemu-aarch64" \
	"$OUT/zlib.info"
echo "zlib-coverage: $OUT/html/index.html"
