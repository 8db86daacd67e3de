#!/bin/bash
# System mode: Debian's x86_64 kernel (2 vCPUs, MTTCG) booting the test
# initramfs to the end of its workload (scripts/linux-vm.sh), whole, as a
# user sees it:
#
#   plain     patched QEMU 10.2.2, nobody attached
#   tool      qemu-jitbpf --perfmap --jitdump (guest kernel symbols and the
#             workload's ELF) launching it: attached from the first block
#   own       QEMU's own -perfmap
#   ref       the unpatched reference build (make qemu-ref): the probes'
#             cost when nobody is attached
#
# Runs are interleaved, ROUNDS of each; medians of wall-clock time and of
# CPU time (user + system, QEMU and the tool), and the ratios to plain.
# WORK (default 200000) rounds of the workload per vCPU: ~2.5 s of boot and
# ~2.5 s of work here.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/bench/lib.sh"
ROUNDS=${ROUNDS:-7}
WORK=${WORK:-200000}
BIN=$TOP/build/qemu-10.2.2/bin
REF=$TOP/build/qemu-10.2.2-ref/bin
TOOL=$TOP/build/bin/qemu-jitbpf
G=$TOP/build/guests
need "make qemu qemu-ref tool guests" "$BIN/qemu-system-x86_64" "$REF/qemu-system-x86_64" \
	"$TOOL" "$G/linux/x86_64/vmlinuz" "$G/linux/x86_64/initramfs.cpio.gz"
need_rounds
need_root

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
KS=$G/linux/x86_64/kallsyms
[ -s "$KS" ] || "$TOP/scripts/guest-kallsyms.sh" x86_64 "$BIN" "$KS"

# "wall:cpu" seconds of one boot-to-power-off; fails unless the workload
# completed.
run() { # MODE
	local TIMEFORMAT='%3R:%3U:%3S' bin=$BIN wrap= extra=()
	case $1 in
	tool) wrap="$TOOL --perfmap --jitdump -o $tmp --guest-symbols $KS --guest-elf $G/x86_64/hot --" ;;
	own) extra=(-perfmap) ;;
	ref) bin=$REF ;;
	esac
	settle
	{ time LINUX_VM_WRAP=$wrap "$TOP/scripts/linux-vm.sh" x86_64 "$bin" "work:$WORK" \
		"$tmp/console" "${extra[@]}" >"$tmp/out" 2>&1; } 2>"$tmp/t"
	grep -q '^work: done' "$tmp/console" || { echo "bench: $1: the workload did not finish" >&2; cat "$tmp/out" >&2; exit 1; }
	rm -f "$tmp"/jit-*.dump
	awk -F: '{ printf "%s:%.3f\n", $1, $2 + $3 }' "$tmp/t"
}

MODES="plain tool own ref"
declare -A T
for m in $MODES; do T[$m]=; done
for r in $(seq "$ROUNDS"); do
	for m in $MODES; do
		T[$m]="${T[$m]} $(run "$m")"
	done
	printf 'round %d:' "$r" >&2
	for m in $MODES; do printf ' %s %s' "$m" "${T[$m]##* }" >&2; done
	# wall:cpu
	echo >&2
done
col() { tr ' ' '\n' <<<"$1" | grep . | cut -d: -f"$2" | median; } # SAMPLES FIELD
pw=$(col "${T[plain]}" 1)
pc=$(col "${T[plain]}" 2)
echo "Linux x86_64 boot + workload ($WORK rounds on 2 vCPUs), median of $ROUNDS:"
echo "          wall s   ratio    CPU s   ratio"
for m in $MODES; do
	w=$(col "${T[$m]}" 1)
	c=$(col "${T[$m]}" 2)
	printf '  %-6s %7.3f  x%.3f  %7.3f  x%.3f\n' "$m" "$w" "$(echo "$w / $pw" | bc -l)" \
		"$c" "$(echo "$c / $pc" | bc -l)"
done
printf '  detached, patched/unpatched: wall x%.3f, CPU x%.3f\n' \
	"$(echo "$pw / $(col "${T[ref]}" 1)" | bc -l)" "$(echo "$pc / $(col "${T[ref]}" 2)" | bc -l)"
echo "  (tool: qemu-jitbpf --perfmap --jitdump from the first block; own: QEMU's -perfmap;"
echo "   ref: the unpatched build)"
