#!/bin/bash
# What --coverage costs a launched run, QEMU 10.2.2 x86_64, against plain
# QEMU and against --perfmap (the same TB reports, another file); and what
# --coverage-counts costs, against QEMU's own plugins that count or list
# blocks (hotblocks with inline counters, drcov), loaded into the same
# patched QEMU (which runs its usual code when no tool listens):
#
#   W1   python3 imports (translation-heavy: the code that runs once)
#   fib  a static fib(30) guest (execution-bound: a few hot blocks)
#
# --coverage keeps what it read of a file's lines in a cache of its own
# (--cache-dir, coverage/listcache.h), as a test suite or a build farm
# runs the same libraries again and again: "coverage" and "counts" run
# with it (here a fresh one, filled by the warm-up runs), "cold" with
# --no-cache (what a first run, or a new library, costs).
#
# Every command is timed whole, as a user sees it, interleaved (each mode
# in turn, rotated each round), each run after the previous tool has
# detached.  Figures are medians of ROUNDS, and the median of the ratio
# within each round (the machine's speed drifts over minutes) with its
# 95 % confidence interval; build/bench-coverage-WORKLOAD-MODE.txt keeps
# every run's wall time and QEMU CPU.
#
#   ROUNDS=10 bench/coverage.sh
#   ROUNDS=20 WORKLOADS=w1 MODES="plain perfmap coverage counts" bench/coverage.sh
#
# (MODES and WORKLOADS narrow a run to what is asked, for more rounds in
# the same time: this machine's spread is as large as the figures.)
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/bench/lib.sh"
ROUNDS=${ROUNDS:-10}
PAT=$TOP/build/qemu-10.2.2/bin/qemu-x86_64
PLUGINS=$TOP/build/qemu-10.2.2/plugins
TOOL=$TOP/build/bin/qemu-jitbpf
FIB=$TOP/build/guests/x86_64/fib

need "make qemu tool guests" "$PAT" "$TOOL" "$FIB" "$PLUGINS/libhotblocks.so" "$PLUGINS/libdrcov.so"
need_rounds
need_root

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# WORKLOAD MODE -> "WALL QEMU_CPU" in seconds on stdout: the whole command
# as a user sees it, and QEMU's own CPU (what counting costs inside it;
# the tool's -v says it, bash's time for QEMU alone: /usr/bin/time counts
# in 10 ms steps, a tenth of fib(30), and forks one process more).
run_mode() {
	local t0 t1 cmd cpu TIMEFORMAT='%3U %3S'
	if [ "$1" = w1 ]; then cmd=("$PAT" /usr/bin/python3 -c "$W1"); else cmd=("$PAT" "$FIB" 30); fi
	settle
	t0=$EPOCHREALTIME
	case $2 in
	plain) { time "${cmd[@]}" >/dev/null; } 2>"$work/time" ;;
	perfmap) "$TOOL" -v --perfmap -- "${cmd[@]}" >/dev/null 2>"$work/err" ;;
	coverage) "$TOOL" -v --cache-dir="$work/cache" --coverage="$work/c.info" -- "${cmd[@]}" \
		>/dev/null 2>"$work/err" ;;
	cold) "$TOOL" -v --no-cache --coverage="$work/c.info" -- "${cmd[@]}" >/dev/null 2>"$work/err" ;;
	counts) "$TOOL" -v --cache-dir="$work/cache" --coverage-counts --coverage="$work/c.info" \
		--coverage="$work/hot.csv" -- "${cmd[@]}" >/dev/null 2>"$work/err" ;;
	hotblocks) { time "${cmd[0]}" \
		-plugin "$PLUGINS/libhotblocks.so,inline=on" -d plugin -D "$work/hb.log" \
		"${cmd[@]:1}" >/dev/null; } 2>"$work/time" ;;
	drcov) { time "${cmd[0]}" \
		-plugin "$PLUGINS/libdrcov.so,filename=$work/p.drcov" "${cmd[@]:1}" >/dev/null; } \
		2>"$work/time" ;;
	esac
	t1=$EPOCHREALTIME
	case $2 in
	plain | hotblocks | drcov) cpu=$(awk '{ print $1 + $2 }' "$work/time") ;;
	*)
		grep -q ' 0 events lost' "$work/err" || echo "lost: $(grep 'events lost' "$work/err")" >>"$work/lost"
		# (The whole -v of a run that warned, to see why.)
		if grep 'warning' "$work/err" >>"$work/lost"; then
			{ echo "== $1 $2"; cat "$work/err"; } >>"$TOP/build/bench-coverage-warned.log"
		fi
		rm -f "$(sed -nE 's/^qemu-jitbpf: perf map: (.*)$/\1/p' "$work/err")"
		cpu=$(sed -nE 's/^qemu-jitbpf: QEMU used ([0-9.]+) s of CPU.*/\1/p' "$work/err")
		;;
	esac
	echo "$(echo "$t1 - $t0" | bc -l) ${cpu:-0}"
}

read -r -a modes <<<"${MODES:-plain perfmap coverage cold counts hotblocks drcov}"
[ "${modes[0]}" = plain ] || { echo "bench: MODES must start with plain" >&2; exit 1; }
for w in ${WORKLOADS:-w1 fib}; do
	declare -A wall=() qcpu=()
	for m in "${modes[@]}"; do run_mode "$w" "$m" >/dev/null; done # warm caches
	for ((i = 0; i < ROUNDS; i++)); do
		for ((k = 0; k < ${#modes[@]}; k++)); do
			m=${modes[$(((i + k) % ${#modes[@]}))]}
			read -r t c < <(run_mode "$w" "$m")
			wall[$m]+=" $t"
			qcpu[$m]+=" $c"
		done
	done
	echo "$w: median of $ROUNDS interleaved runs (QEMU's CPU: its own, tool or plugin included)"
	plain=$(median_of "${wall[plain]}")
	pcpu=$(median_of "${qcpu[plain]}")
	for m in "${modes[@]}"; do
		v=$(median_of "${wall[$m]}")
		c=$(median_of "${qcpu[$m]}")
		paste <(lines_of "${wall[$m]}") <(lines_of "${wall[plain]}") |
			awk '{ print $1 / $2 }' >"$work/ratios"
		paired=$(median <"$work/ratios")
		read -r lo hi < <(median_ci <"$work/ratios")
		printf '  %-9s %7.3f s  ratio to plain %.3f (within rounds %.3f, 95 %% CI %.3f-%.3f)  QEMU CPU %.3f s (%.3f x)\n' \
			"$m" "$v" "$(echo "$v / $plain" | bc -l)" "$paired" "$lo" "$hi" "$c" "$(echo "$c / $pcpu" | bc -l)"
		# (Every run's figures, to look at again: WALL QEMU_CPU per line.)
		paste <(lines_of "${wall[$m]}") <(lines_of "${qcpu[$m]}") \
			>"$TOP/build/bench-coverage-$w-$m.txt"
	done
	grep -h . "$work/c.info" | grep -c '^SF:' | sed 's/^/  source files in the last tracefile: /'
done
[ ! -s "$work/lost" ] || {
	echo "events were lost, or the tool warned (-v of those runs: build/bench-coverage-warned.log):"
	sort "$work/lost" | uniq -c
}
