#!/bin/bash
# Call tracing on W2 (static fib(30), call-heavy), QEMU 10.2.2 x86_64:
# qemu-jitbpf --uftrace on the patched QEMU vs QEMU's own
# contrib/plugins/libuftrace.so on the unpatched build, both writing a
# uftrace data directory.  Interleaved runs, each qemu-jitbpf run after
# the previous one finished detaching; medians of ROUNDS.  Then the
# tool with uftrace's record filters -D 3 and -t 1us: records and time.
# Then W1 (python3 imports, bench/lib.sh) plain and under --uftrace.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/bench/lib.sh"
ROUNDS=${ROUNDS:-7}
REF=$TOP/build/qemu-10.2.2-ref
PAT=$TOP/build/qemu-10.2.2/bin/qemu-x86_64
TOOL=$TOP/build/bin/qemu-jitbpf
FIB=$TOP/build/guests/x86_64/fib

need "make qemu qemu-ref tool guests" "$REF/bin/qemu-x86_64" "$REF/plugins/libuftrace.so" "$PAT" \
	"$TOOL" "$FIB"
need_rounds
need_root

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# run_mode runs in a subshell: what it counts goes to files.
: >"$work/lost"
run_mode() { # MODE -> seconds
	local t0 t1
	rm -rf "$work/uftrace.data" "$work/u"
	settle
	t0=$EPOCHREALTIME
	case $1 in
	plugin) "$REF/bin/qemu-x86_64" -plugin "$REF/plugins/libuftrace.so" "$FIB" 30 >/dev/null ;;
	tool) "$TOOL" --uftrace="$work/u" -- "$PAT" "$FIB" 30 >/dev/null 2>"$work/err" ;;
	tool-D3) "$TOOL" --uftrace="$work/u" -D 3 -- "$PAT" "$FIB" 30 >/dev/null 2>"$work/err" ;;
	tool-t1us) "$TOOL" --uftrace="$work/u" -t 1us -- "$PAT" "$FIB" 30 >/dev/null 2>"$work/err" ;;
	plain) "$PAT" "$FIB" 30 >/dev/null ;;
	py-plain) "$PAT" /usr/bin/python3 -c "$W1" >/dev/null ;;
	tool-py) "$TOOL" --uftrace="$work/u" -- "$PAT" /usr/bin/python3 -c "$W1" >/dev/null 2>"$work/err" ;;
	esac
	t1=$EPOCHREALTIME
	if [ "${1%%-*}" = tool ]; then
		local l
		l=$(sed -nE 's/^qemu-jitbpf: .* ([0-9]+) events lost( \(.*)?$/\1/p' "$work/err")
		[ -n "$l" ] || { cat "$work/err" >&2; exit 1; }
		echo "$l" >>"$work/lost"
		sed -nE 's/^qemu-jitbpf: uftrace: .* \(([0-9]+) records\)$/\1/p' "$work/err" >"$work/records-$1"
	fi
	echo "$t1 - $t0" | bc -l
}

modes=(plain plugin tool tool-D3 tool-t1us py-plain tool-py)
declare -A samples
for m in "${modes[@]}"; do run_mode "$m" >/dev/null; done # warm caches
for ((i = 0; i < ROUNDS; i++)); do
	for ((k = 0; k < ${#modes[@]}; k++)); do
		m=${modes[$(((i + k) % ${#modes[@]}))]}
		samples[$m]+=" $(run_mode "$m")"
	done
done

echo "call tracing, W2 fib(30) static on QEMU 10.2.2 x86_64, median of $ROUNDS interleaved runs"
for m in "${modes[@]}"; do
	declare "med_${m//-/_}=$(median_of "${samples[$m]}")"
done
printf '%-24s %8.3f s\n' "plain (no tracing)" "$med_plain"
printf '%-24s %8.3f s\n' "plugin libuftrace.so" "$med_plugin"
printf '%-24s %8.3f s\n' "qemu-jitbpf --uftrace" "$med_tool"
declare -A records
for m in tool tool-D3 tool-t1us tool-py; do records[$m]=$(cat "$work/records-$m"); done
lost=$(awk '{ n += $1 } END { print n + 0 }' "$work/lost")
printf '%-24s %8.3f s  %s records\n' "  with -D 3" "$med_tool_D3" "${records[tool-D3]}"
printf '%-24s %8.3f s  %s records\n' "  with -t 1us" "$med_tool_t1us" "${records[tool-t1us]}"
printf 'qemu-jitbpf is %.2fx faster than the plugin\n' "$(echo "$med_plugin / $med_tool" | bc -l)"
printf '%-24s %8.3f s\n' "W1 python3 plain" "$med_py_plain"
printf '%-24s %8.3f s  %s records, ratio to plain %.3f\n' "W1 python3 --uftrace" "$med_tool_py" \
	"${records[tool-py]}" "$(echo "$med_tool_py / $med_py_plain" | bc -l)"
paired=$(paste <(lines_of "${samples[tool-py]}") <(lines_of "${samples[py-plain]}") |
	awk '{ print $1 / $2 }' | median)
printf 'W1 --uftrace / plain within each round: median %.3f\n' "$paired"
echo "qemu-jitbpf: ${records[tool]} uftrace records per run, $lost events lost in $(wc -l <"$work/lost") runs"
