#!/bin/bash
# Attached overhead of qemu-jitbpf on W1 (python3 imports, translation-
# heavy), QEMU 10.2.2:
#
#   plain         patched QEMU, nobody attached
#   qemu-jitbpf   qemu-jitbpf --perfmap --jitdump -- <patched QEMU> W1
#   ref -perfmap  unpatched QEMU's own perf map
#   ref -jitdump  unpatched QEMU's own jitdump
#
# Every command is timed whole, as a user sees it; for qemu-jitbpf also the
# CPU time of QEMU itself (from wait4), against plain QEMU's, and with the
# tool's own CPU time (its -v summary) added.  Runs are
# interleaved, and each starts when the previous qemu-jitbpf has finished
# detaching (docs/design/engine.md, "Stopping").  Figures are medians of ROUNDS;
# ratios are to plain.  Events lost by qemu-jitbpf are summed over its runs.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/bench/lib.sh"
ROUNDS=${ROUNDS:-7}
REF=$TOP/build/qemu-10.2.2-ref/bin/qemu-x86_64
PAT=$TOP/build/qemu-10.2.2/bin/qemu-x86_64
TOOL=$TOP/build/bin/qemu-jitbpf

need "make qemu qemu-ref tool" "$REF" "$PAT" "$TOOL"
need_rounds
need_root

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# MODE -> "wall-seconds qemu-cpu-seconds" on stdout
run_mode() {
	local t0 t1 cpu=0 err=$work/err
	rm -f "$work"/jit-*.dump
	settle
	t0=$EPOCHREALTIME
	case $1 in
	plain)
		/usr/bin/time -f "%U %S" -o "$work/time" "$PAT" /usr/bin/python3 -c "$W1" >/dev/null
		cpu=$(awk '{ print $1 + $2 }' "$work/time")
		;;
	tool)
		"$TOOL" -v --perfmap --jitdump -o "$work" -- "$PAT" /usr/bin/python3 -c "$W1" \
			>/dev/null 2>"$err"
		;;
	ref-perfmap) "$REF" -perfmap /usr/bin/python3 -c "$W1" >/dev/null ;;
	ref-jitdump) "$REF" -jitdump /usr/bin/python3 -c "$W1" >/dev/null ;;
	esac
	t1=$EPOCHREALTIME
	if [ "$1" = tool ]; then
		local l
		l=$(sed -nE 's/^qemu-jitbpf: [0-9]+ TBs, .* ([0-9]+) events lost( \(.*)?$/\1/p' "$err")
		[ -n "$l" ] || { cat "$err" >&2; exit 1; }
		# A subshell runs this: the counts go to files.
		echo "$l" >>"$work/lost"
		sed -nE 's/^qemu-jitbpf: ([0-9]+) TBs, .*/\1/p' "$err" >"$work/tbs"
		cpu=$(sed -nE 's/^qemu-jitbpf: QEMU used ([0-9.]+) s of CPU, .*$/\1/p' "$err")
		sed -nE 's/^qemu-jitbpf: peak RSS [0-9]+ KiB, ([0-9.]+) s of CPU$/\1/p' "$err" >>"$work/toolcpu"
		rm -f "$(sed -nE 's/^qemu-jitbpf: perf map: (.*)$/\1/p' "$err")"
	fi
	echo "$(echo "$t1 - $t0" | bc -l) ${cpu:-0}"
}

modes=(plain tool ref-perfmap ref-jitdump)
declare -A wall cpu
for m in "${modes[@]}"; do run_mode "$m" >/dev/null; done # warm caches
for ((i = 0; i < ROUNDS; i++)); do
	for ((k = 0; k < ${#modes[@]}; k++)); do
		m=${modes[$(((i + k) % ${#modes[@]}))]}
		read -r w c < <(run_mode "$m")
		wall[$m]+=" $w"
		cpu[$m]+=" $c"
		# QEMU's own perf map goes to /tmp/perf-PID.map: do not pile them up.
		[ "$m" != ref-perfmap ] || find /tmp -maxdepth 1 -name 'perf-*.map' -newer "$work" -delete
	done
done

echo "attached overhead, W1 on QEMU 10.2.2 x86_64, median of $ROUNDS interleaved runs"
plain=$(median_of "${wall[plain]}")
for m in "${modes[@]}"; do
	v=$(median_of "${wall[$m]}")
	printf '%-14s %8.3f s  ratio to plain %.3f\n' "$m" "$v" "$(echo "$v / $plain" | bc -l)"
done
# Machine speed drifts over minutes: the ratio within each round (tool and
# plain run next to each other) is steadier than the ratio of medians.
paired=$(paste <(lines_of "${wall[tool]}") <(lines_of "${wall[plain]}") |
	awk '{ print $1 / $2 }' | median)
printf 'tool / plain within each round: median %.3f\n' "$paired"
pc=$(median_of "${cpu[plain]}")
tc=$(median_of "${cpu[tool]}")
printf 'QEMU CPU time: plain %.3f s, under qemu-jitbpf %.3f s, ratio %.3f\n' "$pc" "$tc" \
	"$(echo "$tc / $pc" | bc -l)"
oc=$(median <"$work/toolcpu")
printf 'with the tool'"'"'s own CPU (median %.3f s): ratio %.3f\n' "$oc" "$(echo "($tc + $oc) / $pc" | bc -l)"
echo "qemu-jitbpf: $(cat "$work/tbs") TBs per run," \
	"$(awk '{ n += $1 } END { print n + 0 }' "$work/lost") events lost in $(wc -l <"$work/lost") runs"
