#!/bin/bash
# make dist: the release tarball, OUTDIR/qemu-jitbpf-VERSION.tar.gz.  It holds
# every file git tracks at HEAD, under qemu-jitbpf-VERSION/, and
# .tarball-version, which scripts/version.sh reads where there is no git:
# the tarball builds, tests and packages as that version.  Uncommitted
# changes are not in it; a dirty tree is refused, so that a tarball never
# says it is a commit it is not.
#
#   scripts/dist.sh OUTDIR
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "${1:?usage: dist.sh OUTDIR}" && cd "$1" && pwd)
if [ ! -e "$TOP/.git" ]; then
	echo "dist: not a git checkout: a tarball is made from one" >&2
	exit 1
fi
if ! git -C "$TOP" diff --quiet HEAD --; then
	echo "dist: uncommitted changes in $TOP: commit them first" >&2
	exit 1
fi
VERSION=$("$TOP/scripts/version.sh")
NAME=qemu-jitbpf-$VERSION
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "$VERSION" >"$tmp/.tarball-version"
# git archive's own timestamps (the commit's), and gzip -n: the same commit
# gives the same bytes.
git -C "$TOP" archive --format=tar --prefix="$NAME/" --add-file="$tmp/.tarball-version" HEAD |
	gzip -n -9 >"$tmp/$NAME.tar.gz"
mv "$tmp/$NAME.tar.gz" "$OUT/"
echo "$OUT/$NAME.tar.gz"
