#!/bin/sh
# Expand tests/matrix/*.bats.in once per QEMU version and guest arch.
# usage: gen-matrix.sh OUTDIR "VERSIONS" "ARCHES"
set -eu
out=$1 versions=$2 arches=$3
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
rm -f "$out"/*.bats
for t in "$src"/matrix/*.bats.in; do
	name=$(basename "$t" .bats.in)
	for v in $versions; do
		for a in $arches; do
			sed -e "s|@VERSION@|$v|g" -e "s|@ARCH@|$a|g" \
				-e "s|@TESTS@|$src|g" "$t" >"$out/$name-$v-$a.bats"
		done
	done
done
