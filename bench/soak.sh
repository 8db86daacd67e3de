#!/bin/bash
# Host-wide mode over time: `qemu-jitbpf -a --perfmap --profile --interval`
# while QEMU processes (x86_64 and aarch64 guests, QEMU 10.2.2) start and
# exit about once a second: compute-bound ones (~1.5 s), forking ones
# (parent and child, ~1 s) and short ones (~50 ms), in turn.
#
# Every SAMPLE_EVERY (5) s: the tool's RSS, open fds and CPU time.  At the
# end: those over time (a table, and a PNG plot by gnuplot when PLOT names
# the file), whether RSS and fds stay flat after the first minute (the
# largest excess over the first minute's last figure), the tool's CPU
# share, QEMU processes seen, perf maps written, events and samples lost.
#
#   SOAK_SECONDS=600 INTERVAL=60 PLOT=docs/soak-rss.png bench/soak.sh
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/bench/lib.sh"
SOAK_SECONDS=${SOAK_SECONDS:-600}
INTERVAL=${INTERVAL:-60}
SAMPLE_EVERY=${SAMPLE_EVERY:-5}
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

"$TOOL" -a -v --qemu "$QX" --qemu "$QA" --perfmap --profile="$work/soak.pb.gz" \
	--interval="$INTERVAL" >/dev/null 2>"$work/err" &
tool=$!
while ! grep -q 'attached to' "$work/err"; do
	kill -0 "$tool" || { cat "$work/err" >&2; exit 1; }
	sleep 0.1
done
hz=$(getconf CLK_TCK)
t0=$EPOCHREALTIME

# The tool's figures every SAMPLE_EVERY s: seconds RSS-KiB fds CPU-seconds.
watch_tool() {
	local now rss fds cpu
	while kill -0 "$tool" 2>/dev/null; do
		now=$(echo "$EPOCHREALTIME - $t0" | bc -l)
		rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$tool/status" 2>/dev/null) || break
		fds=$(find "/proc/$tool/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
		cpu=$(awk -v hz="$hz" '{ print ($14 + $15) / hz }' "/proc/$tool/stat" 2>/dev/null) || break
		printf '%.0f %s %s %s\n' "$now" "$rss" "$fds" "$cpu"
		sleep "$SAMPLE_EVERY"
	done
}
watch_tool >"$work/series" &
watcher=$!

# One QEMU process a second, in turn: compute-bound, forking, short.
started=0
end=$((${EPOCHSECONDS} + SOAK_SECONDS))
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
wait_qemus() { while pgrep -f "$G/" >/dev/null; do sleep 0.2; done; }
wait_qemus
sleep 1
kill -INT "$tool"
wait "$tool" || { cat "$work/err" >&2; exit 1; }
tool=
wait "$watcher" || true
elapsed=$(echo "$EPOCHREALTIME - $t0" | bc -l)

echo "-a soak: $SOAK_SECONDS s, $started QEMU commands (a third of them fork), --interval=$INTERVAL"
echo "seconds RSS-KiB fds tool-CPU-s"
awk 'NR % 6 == 1' "$work/series"
awk -v e="$elapsed" '
	$1 <= 60 { rss60 = $2; fd60 = $3 }
	$1 > 60 { if ($2 > maxrss) maxrss = $2; if ($3 > maxfd) maxfd = $3 }
	{ cpu = $4 }
	END {
		printf "RSS after the first minute: %d KiB, at most %d KiB after (%+.1f %%)\n",
			rss60, maxrss, (maxrss - rss60) * 100 / rss60
		printf "open fds after the first minute: %d, at most %d after\n", fd60, maxfd
		printf "tool CPU: %.2f s in %.0f s, %.2f %% of one CPU\n", cpu, e, cpu * 100 / e
	}' "$work/series"
grep -E 'QEMU processes|samples at' "$work/err" | sed 's/^qemu-jitbpf: //'
echo "interval profiles: $(ls "$work"/soak.*.pb.gz | wc -l)"
if [ -n "${PLOT:-}" ]; then
	gnuplot <<EOF
set terminal pngcairo size 800,400
set output "$PLOT"
set title "qemu-jitbpf -a: RSS and open fds, QEMUs starting about once a second"
set xlabel "seconds"
set ylabel "RSS (MiB)"
set y2label "open fds"
set y2tics
set key bottom right
set yrange [0:*]
set y2range [0:*]
plot "$work/series" using 1:(\$2/1024) with lines title "RSS", \
     "" using 1:3 axes x1y2 with lines title "fds"
EOF
	echo "plot: $PLOT"
fi
