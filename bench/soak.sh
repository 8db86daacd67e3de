#!/bin/bash
# Host-wide mode over time: `qemu-jitbpf -a --perfmap --profile --interval`
# while QEMU processes come and go.  Two modes:
#
# MODE=mix (the default): x86_64 and aarch64 guests, QEMU 10.2.2, start
# and exit about once a second: compute-bound ones (~1.5 s), forking ones
# (parent and child, ~1 s) and short ones (~50 ms), in turn.
#
# MODE=churn: a build farm's day in half an hour.  NPROGS (500) distinct
# programs are generated (FUNCS, 400, functions each; -O0 -g, dynamic;
# cached in build/churn) and run back to back, JOBS (3) at a time, each
# in turn, for SOAK_SECONDS (1800), under the service's retention
# (--keep-exited's default for -a, --keep-profiles=KEEP_PROFILES, 5).
# New ELF files and names arrive all the time: memory must stay bounded.
#
# Every SAMPLE_EVERY s (mix 5, churn 10): the tool's RSS, open fds and CPU
# time, the perf maps in /tmp and the files in the profile directory.  At
# the end: those over time (a table, and a PNG plot by gnuplot when PLOT
# names the file), whether each stays flat after the first FLAT_AFTER s
# (mix 60, churn 300: the largest departure from its figure then), the
# tool's CPU share and CPU per QEMU run, QEMU processes seen, perf maps
# written, events and samples lost.
#
#   SOAK_SECONDS=600 INTERVAL=60 PLOT=docs/soak-rss.png bench/soak.sh
#   MODE=churn PLOT=docs/soak-churn.png bench/soak.sh
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/bench/lib.sh"
MODE=${MODE:-mix}
case $MODE in
mix)
	SOAK_SECONDS=${SOAK_SECONDS:-600}
	SAMPLE_EVERY=${SAMPLE_EVERY:-5}
	FLAT_AFTER=${FLAT_AFTER:-60}
	;;
churn)
	SOAK_SECONDS=${SOAK_SECONDS:-1800}
	SAMPLE_EVERY=${SAMPLE_EVERY:-10}
	FLAT_AFTER=${FLAT_AFTER:-300}
	NPROGS=${NPROGS:-500}
	FUNCS=${FUNCS:-400}
	JOBS=${JOBS:-3}
	KEEP_PROFILES=${KEEP_PROFILES:-5}
	;;
*)
	echo "bench: MODE is mix or churn" >&2
	exit 1
	;;
esac
INTERVAL=${INTERVAL:-60}
QX=$TOP/build/qemu-10.2.2/bin/qemu-x86_64
QA=$TOP/build/qemu-10.2.2/bin/qemu-aarch64
TOOL=${TOOL:-$TOP/build/bin/qemu-jitbpf}
G=$TOP/build/guests

need "make qemu tool guests" "$QX" "$QA" "$TOOL" "$G/x86_64/hot" "$G/aarch64/forker"
need_root

work=$(mktemp -d)
cleanup() {
	touch "$work/stop"
	[ -z "${tool:-}" ] || kill -INT "$tool" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# Program SEED of the churn, C source on stdout: FUNCS functions of its
# own names and constants, each called once.
gen_prog() {
	awk -v seed="$1" -v n="$FUNCS" 'BEGIN {
		srand(seed)
		print "#include <stdio.h>"
		for (k = 0; k < n; k++) {
			a = int(rand() * 1000) + 1
			b = int(rand() * 7) + 1
			printf "__attribute__((noinline)) unsigned long p%d_f%d(unsigned long x)\n{\n", seed, k
			printf "\tfor (int i = 0; i < %d; i++)\n\t\tx = x * %d + (x >> %d) + i;\n", b + 2, a, b
			print "\treturn x;\n}"
		}
		print "int main(int argc, char **argv)\n{\n\tunsigned long x = argc;\n\n\t(void)argv;"
		for (k = 0; k < n; k++)
			printf "\tx = p%d_f%d(x);\n", seed, k
		print "\tprintf(\"%lu\\n\", x);\n\treturn 0;\n}"
	}'
}

if [ "$MODE" = churn ]; then
	progs=$TOP/build/churn/$FUNCS
	mkdir -p "$progs"
	export -f gen_prog
	export FUNCS
	# Compiled once (about a second each), in parallel.
	seq 0 $((NPROGS - 1)) | xargs -P "$(nproc)" -I{} bash -c \
		'[ -x "$1/p$2" ] || { gen_prog "$2" >"$1/p$2.c" && gcc -O0 -g -o "$1/p$2" "$1/p$2.c" && rm "$1/p$2.c"; }' \
		bash "$progs" {}
	args=(--qemu "$QX" --keep-profiles="$KEEP_PROFILES")
else
	args=(--qemu "$QX" --qemu "$QA")
fi
# TOOL_ARGS: more options for the tool, e.g. --ringbuf-mb=32.
read -ra extra <<<"${TOOL_ARGS:-}"
args+=("${extra[@]}")
mkdir "$work/prof"
touch "$work/start" # perf maps newer than this are the run's
"$TOOL" -a -v "${args[@]}" --perfmap --profile="$work/prof/soak.pb.gz" \
	--interval="$INTERVAL" >/dev/null 2>"$work/err" &
tool=$!
while ! grep -q 'attached to' "$work/err"; do
	kill -0 "$tool" || { cat "$work/err" >&2; exit 1; }
	sleep 0.1
done
hz=$(getconf CLK_TCK)
t0=$EPOCHREALTIME

# The tool's figures every SAMPLE_EVERY s: seconds RSS-KiB fds CPU-seconds
# perf-maps-in-/tmp (of this run) files-in-the-profile-directory.
watch_tool() {
	local now rss fds cpu maps profs
	while kill -0 "$tool" 2>/dev/null; do
		now=$(echo "$EPOCHREALTIME - $t0" | bc -l)
		rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$tool/status" 2>/dev/null) || break
		cpu=$(awk -v hz="$hz" '{ print ($14 + $15) / hz }' "/proc/$tool/stat" 2>/dev/null) || break
		# (find fails on a file removed while it looks: not the end.)
		fds=$(find "/proc/$tool/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l || true)
		maps=$(find /tmp -maxdepth 1 -name 'perf-*.map' -newer "$work/start" 2>/dev/null | wc -l || true)
		profs=$(find "$work/prof" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l || true)
		printf '%.0f %s %s %s %s %s\n' "$now" "$rss" "$fds" "$cpu" "$maps" "$profs"
		sleep "$SAMPLE_EVERY"
	done
}
watch_tool >"$work/series" &
watcher=$!

started=0
end=$((EPOCHSECONDS + SOAK_SECONDS))
if [ "$MODE" = churn ]; then
	# JOBS runners, each taking every JOBS-th program in turn.
	runner() {
		local i=$1 n=0
		while [ "$EPOCHSECONDS" -lt "$end" ]; do
			"$QX" "$progs/p$(((i + n * JOBS) % NPROGS))" >/dev/null 2>&1 || true
			n=$((n + 1))
		done
		echo "$n" >"$work/ran.$i"
	}
	for j in $(seq 0 $((JOBS - 1))); do runner "$j" & done
	for j in $(seq 0 $((JOBS - 1))); do
		while [ ! -e "$work/ran.$j" ]; do sleep 1; done
	done
	started=$(cat "$work"/ran.* | awk '{ n += $1 } END { print n }')
else
	# One QEMU process a second, in turn: compute-bound, forking, short.
	while [ "$EPOCHSECONDS" -lt "$end" ]; do
		arch=x86_64 q=$QX
		[ $((started % 2)) = 0 ] || arch=aarch64 q=$QA
		case $((started % 3)) in
		0) timeout 1.5 "$q" "$G/$arch/hot" 100000000 >/dev/null 2>&1 & ;;
		1)
			rm -f "$work/stop.$started"
			"$q" "$G/$arch/forker" "$work/stop.$started" >/dev/null 2>&1 &
			(sleep 1 && touch "$work/stop.$started") &
			;;
		2) "$q" "$G/$arch/hot" 300 >/dev/null 2>&1 & ;;
		esac
		started=$((started + 1))
		sleep 1
	done
fi
wait_qemus() { while pgrep -f "$G/|$TOP/build/churn/" >/dev/null; do sleep 0.2; done; }
wait_qemus
sleep 1
kill -INT "$tool"
wait "$tool" || { cat "$work/err" >&2; exit 1; }
tool=
wait "$watcher" || true
elapsed=$(echo "$EPOCHREALTIME - $t0" | bc -l)

if [ "$MODE" = churn ]; then
	echo "-a churn: $SOAK_SECONDS s, $started QEMU runs of $NPROGS distinct programs" \
		"($FUNCS functions each), $JOBS at a time, --interval=$INTERVAL --keep-profiles=$KEEP_PROFILES"
else
	echo "-a soak: $SOAK_SECONDS s, $started QEMU commands (a third of them fork), --interval=$INTERVAL"
fi
echo "seconds RSS-KiB fds tool-CPU-s perf-maps profile-files"
awk -v every=$((60 / SAMPLE_EVERY)) 'NR % every == 1' "$work/series"
awk -v e="$elapsed" -v after="$FLAT_AFTER" -v runs="$started" '
	$1 <= after { for (i = 2; i <= 6; i++) { at[i] = $i; max[i] = $i; min[i] = $i } }
	$1 > after {
		for (i = 2; i <= 6; i++) {
			if ($i > max[i]) max[i] = $i
			if ($i < min[i]) min[i] = $i
		}
	}
	{ cpu = $4 }
	END {
		split("x RSS-KiB fds x perf-maps profile-files", name)
		for (i = 2; i <= 6; i++) {
			if (i == 4)
				continue
			d = max[i] - at[i] > at[i] - min[i] ? max[i] - at[i] : min[i] - at[i]
			printf "%s at %d s: %d; after: %d to %d (%+.1f %%)\n", name[i], after,
				at[i], min[i], max[i], at[i] ? d * 100 / at[i] : 0
		}
		printf "tool CPU: %.2f s in %.0f s, %.2f %% of one CPU, %.2f ms per QEMU run\n",
			cpu, e, cpu * 100 / e, runs ? cpu * 1000 / runs : 0
	}' "$work/series"
grep -E 'QEMU processes|samples at|TBs,|files of exited|ELF files' "$work/err" | sed 's/^qemu-jitbpf: //'
echo "interval profiles kept: $(find "$work/prof" -name 'soak.*.pb.gz' | wc -l)"
if [ -n "${PLOT:-}" ]; then
	if [ "$MODE" = churn ]; then
		title="qemu-jitbpf -a: $started QEMU runs of $NPROGS distinct programs in $SOAK_SECONDS s"
	else
		title="qemu-jitbpf -a: QEMUs starting about once a second"
	fi
	gnuplot <<EOF
set terminal pngcairo size 900,450
set output "$PLOT"
set title "$title"
set xlabel "seconds"
set ylabel "RSS (MiB), open fds, profile files"
set y2label "perf maps in /tmp"
set y2tics
set key bottom right
set yrange [0:*]
set y2range [0:*]
plot "$work/series" using 1:(\$2/1024) with lines title "RSS (MiB)", \
     "" using 1:3 with lines title "open fds", \
     "" using 1:6 with lines title "profile files", \
     "" using 1:5 axes x1y2 with lines title "perf maps in /tmp (right)"
EOF
	echo "plot: $PLOT"
fi
