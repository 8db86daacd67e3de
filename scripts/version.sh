#!/bin/sh
# The project's version, printed on one line:
# - in a tarball of make dist, the version it was made from (.tarball-version);
# - in a git checkout, git describe's from the last v* tag (v0.9.0 -> 0.9.0,
#   five commits later 0.9.0+5.g1a2b3c4), or with no such tag VERSION and
#   the commit (0.9.0+g1a2b3c4); +dirty for uncommitted changes;
# - else VERSION.
# Every part is a valid Debian upstream version: the packages take it as is.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
if [ -f "$top/.tarball-version" ]; then
	cat "$top/.tarball-version"
	exit 0
fi
base=$(cat "$top/VERSION")
if [ -e "$top/.git" ] && command -v git >/dev/null 2>&1; then
	if d=$(git -C "$top" describe --tags --match 'v[0-9]*' --dirty 2>/dev/null); then
		echo "$d" | sed -e 's/^v//' -e 's/-\([0-9][0-9]*\)-g\([0-9a-f]*\)/+\1.g\2/' \
			-e 's/-dirty$/+dirty/'
		exit 0
	fi
	if sha=$(git -C "$top" rev-parse --short=7 HEAD 2>/dev/null); then
		dirty=
		git -C "$top" diff --quiet HEAD -- 2>/dev/null || dirty=+dirty
		echo "$base+g$sha$dirty"
		exit 0
	fi
fi
echo "$base"
