#!/bin/bash
# What following a process tree costs (QEMU 10.2.2): a foreign shell
# script (Debian's arm64 busybox under qemu-aarch64) runs COMMANDS
# commands, each a QEMU forked and exec'd through binfmt_misc (registered
# to the same qemu-aarch64, as a container build host has it):
#
#   plain         the script, nobody attached
#   qemu-jitbpf   qemu-jitbpf --perfmap -- qemu-aarch64 busybox sh -c SCRIPT
#
# ROUNDS interleaved pairs, no pause; medians, the cost per command, and
# how long after its fork the tool had attached to each child (-v), which
# is how long each child waited for it (qemu:jit_fork_wait).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/bench/lib.sh"
ROUNDS=${ROUNDS:-10}
COMMANDS=${COMMANDS:-20}
GUEST_ROUNDS=${GUEST_ROUNDS:-300}
QA=$TOP/build/qemu-10.2.2/bin/qemu-aarch64
TOOL=$TOP/build/bin/qemu-jitbpf
BB=$TOP/build/guests/aarch64/busybox
HOT=$TOP/build/guests/aarch64/hot

need "make qemu tool guests" "$QA" "$TOOL" "$BB" "$HOT"
need_rounds
need_root

NAME=jitbpf-bench-aarch64
work=$(mktemp -d)
trap '"$TOP/scripts/binfmt.sh" unregister "$NAME"; rm -rf "$work"' EXIT
[ -e /proc/sys/fs/binfmt_misc/register ] ||
	mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
"$TOP/scripts/binfmt.sh" register "$NAME" "$QA" aarch64 F
cd "$work"

SCRIPT="i=0; while [ \$i -lt $COMMANDS ]; do '$HOT' $GUEST_ROUNDS >/dev/null; i=\$((i + 1)); done"

timed() {
	local t0=$EPOCHREALTIME
	"$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
	echo "$EPOCHREALTIME - $t0" | bc -l
}

settle
declare -a pw tw
: >"$work/waits"
for ((i = 0; i < ROUNDS; i++)); do
	tw+=("$(timed "$TOOL" -v --perfmap -- "$QA" "$BB" sh -c "$SCRIPT")")
	sed -nE 's/^qemu-jitbpf: pid [0-9]+: forked by [0-9]+, attached ([0-9.]+) ms after the fork$/\1/p' \
		"$work/err" >>"$work/waits"
	grep -q ' 0 without a handshake$' "$work/err" || { cat "$work/err" >&2; exit 1; }
	sed -nE 's/^qemu-jitbpf: pid [0-9]+ \(exit\): wrote (.*)$/\1/p' "$work/err" | xargs rm -f
	pw+=("$(timed "$QA" "$BB" sh -c "$SCRIPT")")
done
tool=$(median_of "${tw[*]}")
plain=$(median_of "${pw[*]}")
echo "busybox sh running $COMMANDS commands (hot $GUEST_ROUNDS) under qemu-aarch64, $ROUNDS pairs"
printf 'plain          median %7.3f s\n' "$plain"
printf 'qemu-jitbpf    median %7.3f s: %+.1f ms per command\n' "$tool" \
	"$(echo "($tool - $plain) * 1000 / $COMMANDS" | bc -l)"
printf 'a forked child waited for the tool: median %.1f ms, max %.1f ms (%d forks)\n' \
	"$(median <"$work/waits")" "$(sort -g "$work/waits" | tail -n 1)" "$(wc -l <"$work/waits")"
