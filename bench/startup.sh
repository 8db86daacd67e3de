#!/bin/bash
# The sampler's start-up (QEMU 10.2.2, x86_64 guests):
#
# 1. A launched short guest (tests/guests/hot.c, GUEST_ROUNDS rounds, ~10 ms
#    of guest work), `--profile` against `--perfmap`, ROUNDS interleaved
#    pairs back to back: wall time of the whole command and the tool's
#    own CPU (-v's figure). Goal: --profile within 20 ms of --perfmap.
# 2. The same guest run LONG_ROUNDS rounds (~7 s) under `--profile` at
#    99 Hz, ROUNDS runs: the sampler's BPF time plus the tool's whole CPU
#    (-v's figures) as a share of the run. Goal: <= 1 %.
# 3. The same long guest under `-a --profile` already attached (a host's
#    service): what its run adds to the tool's CPU, plus the sampler's BPF
#    time, as a share of the run (SKIP_ATTACHED=1 skips it).
#
# Parts 2 and 3 as people also run them: PAUSE=S waits S seconds before
# each long run (caches gone cold); BUSY=1 keeps a busy loop running
# beside them (a loaded host).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/bench/lib.sh"
ROUNDS=${ROUNDS:-10}
GUEST_ROUNDS=${GUEST_ROUNDS:-1000}
LONG_ROUNDS=${LONG_ROUNDS:-1200000}
PAT=$TOP/build/qemu-10.2.2/bin/qemu-x86_64
TOOL=$TOP/build/bin/qemu-jitbpf
G=$TOP/build/guests/x86_64/hot

need "make qemu tool guests" "$PAT" "$TOOL" "$G"
need_rounds
need_root

work=$(mktemp -d)
stats=$(cat /proc/sys/kernel/bpf_stats_enabled)
busy=
trap '[ -z "$busy" ] || kill "$busy"; rm -rf "$work"; echo "$stats" >/proc/sys/kernel/bpf_stats_enabled' EXIT
echo 1 >/proc/sys/kernel/bpf_stats_enabled
cd "$work"

# Run the tool with -v on the guest: "WALL TOOL_CPU SAMPLER_BPF_MS".
run() { # GUEST_ROUNDS OPTIONS...
	local n=$1 t0 t1 cpu bpf
	shift
	t0=$EPOCHREALTIME
	"$TOOL" -v "$@" -- "$PAT" "$G" "$n" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
	t1=$EPOCHREALTIME
	cpu=$(sed -nE 's/^qemu-jitbpf: peak RSS [0-9]+ KiB, ([0-9.]+) s of CPU$/\1/p' "$work/err")
	bpf=$(sed -nE 's/^qemu-jitbpf: BPF program (sample|jit_vcpu): ([0-9.]+) ms in .*/\2/p' "$work/err" |
		awk '{ s += $1 } END { print s + 0 }')
	rm -f "$(sed -nE 's/^qemu-jitbpf: perf map: (.*)$/\1/p' "$work/err")" "$work"/profile-*.folded
	echo "$(echo "$t1 - $t0" | bc -l) $cpu $bpf"
}

settle
pw=() pc=() fw=() fc=()
for ((i = 0; i < ROUNDS; i++)); do
	read -r w c _ < <(run "$GUEST_ROUNDS" --perfmap)
	pw+=("$w") pc+=("$c")
	read -r w c _ < <(run "$GUEST_ROUNDS" --profile)
	fw+=("$w") fc+=("$c")
done
mp=$(median_of "${pw[*]}") mf=$(median_of "${fw[*]}")
echo "launched short guest ($GUEST_ROUNDS rounds), $ROUNDS pairs back to back, medians:"
printf '  --perfmap  %.1f ms wall, tool CPU %.1f ms\n' "$(echo "$mp * 1000" | bc -l)" \
	"$(echo "$(median_of "${pc[*]}") * 1000" | bc -l)"
printf '  --profile  %.1f ms wall, tool CPU %.1f ms\n' "$(echo "$mf * 1000" | bc -l)" \
	"$(echo "$(median_of "${fc[*]}") * 1000" | bc -l)"
printf '  --profile - --perfmap: %+.1f ms wall (goal <= 20 ms)\n' "$(echo "($mf - $mp) * 1000" | bc -l)"

if [ -n "${BUSY:-}" ]; then
	sh -c 'while :; do :; done' &
	busy=$!
	echo "(a busy loop runs beside the long runs: pid $busy)"
fi
shares=()
for ((i = 0; i < ROUNDS / 2; i++)); do
	[ -z "${PAUSE:-}" ] || sleep "$PAUSE"
	read -r w c b < <(run "$LONG_ROUNDS" --profile)
	shares+=("$(echo "($c + $b / 1000) / $w * 100" | bc -l)")
	printf '  long run %d: %.2f s wall, tool CPU %.3f s, sampler BPF %.1f ms\n' "$((i + 1))" "$w" "$c" "$b"
done
printf 'long guest under --profile at 99 Hz: tool CPU + sampler BPF = %.2f %% of the run (median of %d; goal <= 1 %%)\n' \
	"$(median_of "${shares[*]}")" "${#shares[@]}"

# 3. The same long guest under a tool already attached, as a host runs it
#    (`-a --profile`, started before): what the guest's run adds to the
#    tool's CPU (/proc/PID/stat before it starts and once its samples are
#    named) plus the sampler's BPF time, as a share of the run.
if [ -z "${SKIP_ATTACHED:-}" ]; then
	# The CPU time of all its threads, in seconds, to the nanosecond
	# (/proc/PID/stat's ticks are 10 ms).
	tool_cpu() { cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%.6f\n", s / 1e9 }'; }
	ashares=()
	for ((i = 0; i < ROUNDS / 2; i++)); do
		settle
		[ -z "${PAUSE:-}" ] || sleep "$PAUSE"
		"$TOOL" -a -v --qemu "$PAT" --profile="$work/a.folded" >/dev/null 2>"$work/aerr" &
		t=$!
		while ! grep -q 'attached to' "$work/aerr"; do sleep 0.05; done
		sleep 1
		c0=$(tool_cpu "$t")
		t0=$EPOCHREALTIME
		"$PAT" "$G" "$LONG_ROUNDS" >/dev/null
		t1=$EPOCHREALTIME
		sleep 2 # its last samples are named a second after they came
		c1=$(tool_cpu "$t")
		kill -INT "$t"
		wait "$t"
		b=$(sed -nE 's/^qemu-jitbpf: BPF program (sample|jit_vcpu): ([0-9.]+) ms in .*/\2/p' "$work/aerr" |
			awk '{ s += $1 } END { print s + 0 }')
		w=$(echo "$t1 - $t0" | bc -l)
		ashares+=("$(echo "($c1 - $c0 + $b / 1000) / $w * 100" | bc -l)")
		printf '  attached run %d: %.2f s wall, tool CPU +%.3f s, sampler BPF %.1f ms\n' "$((i + 1))" \
			"$w" "$(echo "$c1 - $c0" | bc -l)" "$b"
		rm -f "$work"/a.folded
	done
	printf 'long guest under -a --profile already attached: tool CPU + sampler BPF = %.2f %% of the run (median of %d; goal <= 1 %%)\n' \
		"$(median_of "${ashares[*]}")" "${#ashares[@]}"
fi
