#!/bin/sh
# Expand tests/matrix/*.bats.in once per QEMU version and guest arch.
# usage: gen-matrix.sh OUTDIR "VERSION:ARCH ..." ["VERSION:ARCH ..."]
# The second list names the primary pairs, which run every test.  The
# other pairs leave out the tests marked "# matrix: primary pairs only":
# those that exercise no code of their own per guest architecture (the
# handshake, the probes' arguments, bpftrace, the tool's filters), which
# the primary pairs cover (docs/design/build-and-tests.md, "Tests").
set -eu
out=$1 pairs=$2 primary=${3:-$2}
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
rm -f "$out"/*.bats
for t in "$src"/matrix/*.bats.in; do
	name=$(basename "$t" .bats.in)
	for p in $pairs; do
		v=${p%%:*} a=${p#*:}
		case " $primary " in
		*" $p "*) all=1 ;;
		*) all=0 ;;
		esac
		# A marked test runs from its marker to the "}" closing it.
		awk -v all="$all" '
			/^# matrix: primary pairs only/ { if (!all) skip = 1 }
			skip { if ($0 == "}") skip = 0; next }
			{ print }
		' "$t" | sed -e "s|@VERSION@|$v|g" -e "s|@ARCH@|$a|g" \
			-e "s|@TESTS@|$src|g" >"$out/$name-$v-$a.bats"
		# A file left with no test at all is not written.
		grep -q '^@test' "$out/$name-$v-$a.bats" || rm -f "$out/$name-$v-$a.bats"
	done
done
