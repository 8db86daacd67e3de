#!/bin/sh
# Expand tests/matrix/*.bats.in once per QEMU version and guest arch.
# usage: gen-matrix.sh OUTDIR "VERSION:ARCH ..."
set -eu
out=$1 pairs=$2
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
rm -f "$out"/*.bats
for t in "$src"/matrix/*.bats.in; do
	name=$(basename "$t" .bats.in)
	for p in $pairs; do
		v=${p%%:*} a=${p#*:}
		sed -e "s|@VERSION@|$v|g" -e "s|@ARCH@|$a|g" \
			-e "s|@TESTS@|$src|g" "$t" >"$out/$name-$v-$a.bats"
	done
done
