#!/bin/bash
# Run the bats suite as root (the probes need BPF), TAP output, and end
# with one line a person or CI can read the result from:
#   N passed, N failed[, N skipped]
# The same line goes to $TEST_SUMMARY when set (.ci/run repeats it last).
set -u
if [ "$(id -u)" != 0 ]; then
	echo "tests need root for BPF: sudo make test" >&2
	exit 1
fi
export BATS_LIB_PATH=${BATS_LIB_PATH:-/usr/lib/bats}
log=$(mktemp)
# QEMU's builds stay where the build cached them (a test that builds a
# tree of its own, as tests/release.bats does, finds them there).
export QEMU_JITBPF_CACHE=${QEMU_JITBPF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/qemu-jitbpf}
# The tool's cache of listings (--cache-dir) is the suite's own: no test
# reads what an earlier suite or a user's runs left in ~/.cache.
XDG_CACHE_HOME=$(mktemp -d)
export XDG_CACHE_HOME
unset CACHE_DIRECTORY
trap 'rm -rf "$log" "$XDG_CACHE_HOME"' EXIT
bats --tap --timing "$@" | tee "$log"
status=${PIPESTATUS[0]}

planned=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$log" | head -n 1)
skipped=$(grep -cE '^ok [0-9]+ .*# skip' "$log")
passed=$(($(grep -cE '^ok [0-9]+' "$log") - skipped))
failed=$(grep -cE '^not ok [0-9]+' "$log")
# Tests that never reported (bats stopped early) count as failed.
missing=$((${planned:-0} - passed - failed - skipped))
if [ "$missing" -gt 0 ]; then
	echo "# $missing planned tests did not run" >&2
	failed=$((failed + missing))
fi
[ "$failed" = 0 ] && [ "$passed" -gt 0 ] || [ "$status" != 0 ] || status=1
line="$passed passed, $failed failed"
[ "$skipped" = 0 ] || line="$line, $skipped skipped"
# Repeat each failure with the start of its diagnostics just above the
# count, so a log's tail names what failed.
failures=$(awk '
	/^not ok [0-9]+/ { show = 1; n = 0; print; next }
	/^(ok|not ok) [0-9]+/ { show = 0 }
	show && /^#/ && n < 12 { print; n++ }
' "$log")
{
	[ -z "$failures" ] || printf 'failed:\n%s\n' "$failures"
	echo "$line"
} >"${TEST_SUMMARY:-/dev/null}"
[ -z "$failures" ] || printf 'failed:\n%s\n' "$failures"
echo "$line"
exit "$status"
