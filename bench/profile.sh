#!/bin/bash
# Cost of the sampling profiler (--profile), QEMU 10.2.2, x86_64 guests:
#
#   steady   tree.c, compute-bound, ~9 s (STEADY_SECONDS), whole commands:
#            plain QEMU; --profile at 99 and 999 Hz, --call-graph=fp and
#            dwarf; `perf record -F 99 -g` around `qemu-jitbpf --perfmap`
#            (what a user would do instead); QEMU's own -perfmap (unpatched)
#   W1       python3 imports, translation-heavy: plain, fp and dwarf at 99 Hz
#   memory   the tool's peak RSS on W1 and on a flush-heavy python3 run of
#            FLUSH_SECONDS (60) with a 2 MiB code buffer
#
# Every command is timed whole, the tool's own CPU time included (wall
# time, and user+system of the command and all its children).  Each run of
# a mode sits between two plain runs; its ratio is to their mean, and the
# figures are medians over ROUNDS.  Every run starts PAUSE (0.5) s after
# the last tool's detach is done.  Lost samples are summed.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/bench/lib.sh"
ROUNDS=${ROUNDS:-7}
PAUSE=${PAUSE:-0.5}
STEADY_SECONDS=${STEADY_SECONDS:-9}
FLUSH_SECONDS=${FLUSH_SECONDS:-60}
REF=$TOP/build/qemu-10.2.2-ref/bin/qemu-x86_64
PAT=$TOP/build/qemu-10.2.2/bin/qemu-x86_64
TOOL=${TOOL:-$TOP/build/bin/qemu-jitbpf}
TREE=$TOP/build/guests/x86_64/tree

need "make qemu qemu-ref tool guests" "$REF" "$PAT" "$TOOL" "$TREE"
need_rounds
need_root

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# Rounds of tree.c that take STEADY_SECONDS on plain QEMU.
t0=$EPOCHREALTIME
"$PAT" "$TREE" 200000 >/dev/null
t=$(echo "$EPOCHREALTIME - $t0" | bc -l)
N=$(echo "200000 * $STEADY_SECONDS / $t" | bc)

lost=0 samples=0
declare -A bpf_ms tool_s
# WORKLOAD MODE -> "wall-seconds cpu-seconds" on stdout
run_mode() {
	local w=$1 m=$2 t0 t1 err=$work/err cmd
	if [ "$w" = steady ]; then cmd=("$TREE" "$N"); else cmd=(/usr/bin/python3 -c "$W1"); fi
	# The same pause before every run: a run after a pause goes faster on
	# this virtual machine, and only runs after a tool would wait for its
	# detach helper (settle).
	settle
	sleep "$PAUSE"
	rm -f "$err"
	t0=$EPOCHREALTIME
	case $m in
	plain) /usr/bin/time -f "%U %S" -o "$work/time" "$PAT" "${cmd[@]}" >/dev/null ;;
	fp99 | fp999 | dwarf99 | dwarf999)
		/usr/bin/time -f "%U %S" -o "$work/time" "$TOOL" -v --profile="$work/p.pb.gz" \
			-F "${m//[a-z]/}" --call-graph="${m//[0-9]/}" -- "$PAT" "${cmd[@]}" \
			>/dev/null 2>"$err"
		;;
	perf99)
		/usr/bin/time -f "%U %S" -o "$work/time" perf record -q -F 99 -g -e cpu-clock \
			-o "$work/perf.data" -- "$TOOL" --perfmap -- "$PAT" "${cmd[@]}" >/dev/null 2>"$err"
		;;
	ref-perfmap) /usr/bin/time -f "%U %S" -o "$work/time" "$REF" -perfmap "${cmd[@]}" >/dev/null ;;
	esac
	t1=$EPOCHREALTIME
	if [ -s "$err" ] && grep -q 'samples at' "$err"; then
		lost=$((lost + $(sed -nE 's/^qemu-jitbpf: [0-9]+ samples at [0-9]+ Hz, ([0-9]+) samples lost$/\1/p' "$err")))
		samples=$((samples + $(sed -nE 's/^qemu-jitbpf: ([0-9]+) samples at .*/\1/p' "$err")))
		sed -nE 's/^qemu-jitbpf: peak RSS ([0-9]+) KiB.*/\1/p' "$err" >"$work/rss"
		# The cost itself, beside the noisy ratios: the sampler's time
		# in the kernel (in QEMU's context), the tool's own CPU time.
		bpf_ms[$w-$m]+=" $(sed -nE 's/^qemu-jitbpf: BPF program sample: ([0-9.]+) ms.*/\1/p' "$err")"
		tool_s[$w-$m]+=" $(sed -nE 's/^qemu-jitbpf: peak RSS [0-9]+ KiB, ([0-9.]+) s of CPU$/\1/p' "$err")"
	fi
	find /tmp -maxdepth 1 -name 'perf-*.map' -newer "$work" -delete
	echo "$(echo "$t1 - $t0" | bc -l) $(awk '{ print $1 + $2 }' "$work/time")"
}

declare -A wall cpu ratio cratio
# Each round runs plain between every two other modes: plain m1 plain m2
# ... plain.  A mode's ratio in a round is to the mean of the plain runs
# right before and after it, so the machine's drift over a round (minutes)
# does not enter it.
bench() { # WORKLOAD MODE... (plain implied)
	local w=$1 i k m a c pa pc
	shift
	local modes=("$@")
	run_mode "$w" plain >/dev/null # warm caches
	for m in "${modes[@]}"; do run_mode "$w" "$m" >/dev/null; done
	for ((i = 0; i < ROUNDS; i++)); do
		read -r pa pc < <(run_mode "$w" plain)
		wall[$w-plain]+=" $pa"
		cpu[$w-plain]+=" $pc"
		for ((k = 0; k < ${#modes[@]}; k++)); do
			m=${modes[$(((i + k) % ${#modes[@]}))]}
			read -r a c < <(run_mode "$w" "$m")
			read -r pa2 pc2 < <(run_mode "$w" plain)
			wall[$w-plain]+=" $pa2"
			cpu[$w-plain]+=" $pc2"
			wall[$w-$m]+=" $a"
			cpu[$w-$m]+=" $c"
			ratio[$w-$m]+=" $(echo "2 * $a / ($pa + $pa2)" | bc -l)"
			cratio[$w-$m]+=" $(echo "2 * $c / ($pc + $pc2)" | bc -l)"
			pa=$pa2 pc=$pc2
		done
	done
	plain=$(median_of "${wall[$w-plain]}")
	printf '%-7s %-12s wall %7.3f s                  CPU %7.3f s\n' "$w" plain \
		"$plain" "$(median_of "${cpu[$w-plain]}")"
	for m in "${modes[@]}"; do
		printf '%-7s %-12s wall %7.3f s  ratio %.3f     CPU %7.3f s  ratio %.3f\n' \
			"$w" "$m" "$(median_of "${wall[$w-$m]}")" "$(median_of "${ratio[$w-$m]}")" \
			"$(median_of "${cpu[$w-$m]}")" "$(median_of "${cratio[$w-$m]}")"
	done
	for m in "${modes[@]}"; do
		[ -n "${bpf_ms[$w-$m]:-}" ] || continue
		b=$(median_of "${bpf_ms[$w-$m]}") t=$(median_of "${tool_s[$w-$m]}")
		printf '%-7s %-12s sampler in the kernel %.1f ms (%.2f %% of plain), tool CPU %.3f s (%.2f %%)\n' \
			"$w" "$m" "$b" "$(echo "$b / 10 / $plain" | bc -l)" "$t" "$(echo "$t * 100 / $plain" | bc -l)"
	done
}

echo "--profile cost, QEMU 10.2.2 x86_64, median of $ROUNDS interleaved runs"
echo "steady: tree $N (~$STEADY_SECONDS s plain)"
# STEADY_MODES and W1_MODES pick modes (e.g. more ROUNDS for fewer modes);
# MEMORY=0 skips the memory runs.
read -ra steady_modes <<<"${STEADY_MODES:-fp99 fp999 dwarf99 dwarf999 perf99 ref-perfmap}"
read -ra w1_modes <<<"${W1_MODES-fp99 dwarf99}"
bench steady "${steady_modes[@]}"
[ ${#w1_modes[@]} = 0 ] || bench w1 "${w1_modes[@]}"
echo "samples: $samples taken, $lost lost"
[ "${MEMORY:-1}" = 1 ] || exit 0

run_mode w1 fp99 >/dev/null
echo "tool peak RSS on W1 (fp, 99 Hz): $(cat "$work/rss") KiB"
# Flush-heavy: python3 with a 2 MiB code buffer, FLUSH_SECONDS long.
"$TOOL" -v --profile="$work/f.pb.gz" -- "$PAT" -tb-size 2 /usr/bin/python3 -c "
import json, time
t = time.time()
while time.time() - t < $FLUSH_SECONDS:
    json.loads(json.dumps({'a': [1, 2.5, 'x'] * 50})); str(list(range(100)))
" >/dev/null 2>"$work/err"
fl=$(sed -nE 's/^qemu-jitbpf: [0-9]+ TBs, ([0-9]+) flushes.*/\1/p' "$work/err")
echo "tool peak RSS on a ${FLUSH_SECONDS} s flush-heavy guest ($fl flushes):" \
	"$(sed -nE 's/^qemu-jitbpf: peak RSS ([0-9]+) KiB.*/\1/p' "$work/err") KiB;" \
	"$(grep -E 'samples at' "$work/err" | sed 's/^qemu-jitbpf: //')"
