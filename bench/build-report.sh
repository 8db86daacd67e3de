#!/bin/bash
# What --report costs on an emulated build: Debian's zlib built in an
# arm64 Debian root where make, gcc, cc1, as and ld all run under the
# static qemu-aarch64 through binfmt_misc (scripts/chroot-build.sh), with
# `qemu-jitbpf -a` attached to every QEMU of the host:
#
#   perfmap   qemu-jitbpf -a --perfmap
#   report    qemu-jitbpf -a --perfmap --report=FILE
#
# ROUNDS interleaved pairs (the order swapped every other pair), back to
# back.  Each run's CPU is the build's (every process of it, as wait4()
# counts them) plus the tool's; the figure is the median of the pairs'
# differences, in per cent of the perfmap run's.  Goal: at most 2 %.
# A build's CPU varies by 10 % and more from run to run here, which hides
# a difference of 2 %; what --report adds is also given part by part, each
# exact: the tool's own CPU, and the time its sampling program ran in the
# QEMUs (the kernel's BPF statistics, from -v's summary).
#
#   ROUNDS=10 bench/build-report.sh          (root; scripts/chroot-build.sh root first)
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/bench/lib.sh"
ROUNDS=${ROUNDS:-10}
DIR=${DIR:-$TOP/build/chroot-arm64}
need "make tool qemu; scripts/chroot-build.sh root" "$TOP/build/bin/qemu-jitbpf" \
	"$DIR/usr/bin/gcc" "$DIR/src/zlib"
need_rounds
need_root
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One build: "WALL BUILD-CPU TOOL-CPU SAMPLER-S".
one() { # MODE
	local args=(--perfmap) out bpf
	[ "$1" = report ] && args+=(--report="$work/r.json")
	out=$(TOOL_LOG=$work/log "$TOP/scripts/chroot-build.sh" build "$DIR" -- "${args[@]}" 2>&1 >/dev/null |
		sed -nE 's/^chroot-build: ([0-9.]+) s wall, ([0-9.]+) s of CPU in the build, ([0-9.]+) s in the tool$/\1 \2 \3/p')
	[ -n "$out" ] || { echo "bench: the $1 build failed" >&2; exit 1; }
	bpf=$(sed -nE 's/^qemu-jitbpf: BPF program sample: ([0-9.]+) ms in .*/\1/p' "$work/log")
	echo "$out $(echo "${bpf:-0} / 1000" | bc -l)"
}

diffs=() pm=() rp=() tooldiff=() sampler=()
for ((i = 0; i < ROUNDS; i++)); do
	if ((i % 2)); then order=(report perfmap); else order=(perfmap report); fi
	for m in "${order[@]}"; do
		read -r wall cpu tool smp <<<"$(one "$m")"
		total=$(echo "$cpu + $tool" | bc -l)
		printf 'round %d %-7s %7.2f s wall %7.2f s build CPU %5.2f s tool CPU %5.3f s sampler\n' \
			"$((i + 1))" "$m" "$wall" "$cpu" "$tool" "$smp"
		if [ "$m" = perfmap ]; then
			a=$total ta=$tool ca=$cpu
		else
			b=$total tb=$tool s=$smp
		fi
	done
	pm+=("$a") rp+=("$b")
	diffs+=("$(echo "($b - $a) * 100 / $a" | bc -l)")
	tooldiff+=("$(echo "($tb - $ta) * 100 / $ca" | bc -l)")
	sampler+=("$(echo "$s * 100 / $ca" | bc -l)")
done
printf 'perfmap: median %.2f s of CPU (build + tool)\n' "$(median_of "${pm[*]}")"
printf 'report:  median %.2f s of CPU (build + tool)\n' "$(median_of "${rp[*]}")"
read -r lo hi <<<"$(lines_of "${diffs[*]}" | median_ci)"
printf -- '--report adds %.2f %% of CPU (median of %d pairs, 95 %% CI %.2f to %.2f %%; goal <= 2 %%)\n' \
	"$(median_of "${diffs[*]}")" "$ROUNDS" "$lo" "$hi"
printf -- '  of which the tool: %.2f %% of the build CPU (median), its sampling program in the QEMUs: %.2f %%\n' \
	"$(median_of "${tooldiff[*]}")" "$(median_of "${sampler[*]}")"
