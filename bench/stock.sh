#!/bin/bash
# What the degraded mode costs a stock QEMU (make qemu-stock: 10.2.2
# unpatched, as Fedora builds its qemu-user-static): W1 (bench/lib.sh,
# python3 importing a few modules, ~55 k TBs) under the stock
# qemu-x86_64, wall time, ROUNDS interleaved runs of each:
#
#   plain     no tool;
#   attached  `qemu-jitbpf -a --qemu STOCK --perfmap` already running (a
#             host's service): each translation hits a uprobe;
#   launched  `qemu-jitbpf -- STOCK ...`: the tool starts, attaches before
#             QEMU runs, writes the perf map at the end;
#   beside    no tool on this QEMU, but `qemu-jitbpf --qemu STOCK -- sleep`
#             running: a tree watching the binary for every process that
#             runs it (its BPF side drops those outside the tree);
#   ours      for comparison, the patched QEMU launched the same way.
#
# GAP=S sleeps S seconds between runs (default 0: back to back); BUSY=1
# keeps a busy loop running beside them.  Medians, min and max, in s.
#
#   ROUNDS=10 bench/stock.sh          (root)
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/bench/lib.sh"
ROUNDS=${ROUNDS:-10}
GAP=${GAP:-0}
BUSY=${BUSY:-0}
STOCK=$TOP/build/qemu-10.2.2-stock/bin/qemu-x86_64
PAT=$TOP/build/qemu-10.2.2/bin/qemu-x86_64
TOOL=$TOP/build/bin/qemu-jitbpf
PY=/usr/bin/python3

need "make qemu qemu-stock tool" "$STOCK" "$PAT" "$TOOL" "$PY"
need_rounds
need_root

work=$(mktemp -d)
busy= svc=
# The perf maps the runs leave in /tmp go at the end.
trap '[ -z "$busy" ] || kill "$busy"; [ -z "$svc" ] || kill -INT -- -"$svc"
	find /tmp -maxdepth 1 -name "perf-*.map" -newer "$work/start" -delete; rm -rf "$work"' EXIT
touch "$work/start"
cd "$work"
[ "$BUSY" != 1 ] || { sh -c 'while :; do :; done' & busy=$!; }

wall() { # COMMAND...: its wall time, s
	local t0=$EPOCHREALTIME
	"$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
	echo "$EPOCHREALTIME - $t0" | bc -l
}

# W1 under the stock QEMU while the tool runs with ARGS, from when its
# stderr says READY, its wall time into T; the tool is then stopped as
# Ctrl-C does.  (Not in a subshell: the EXIT trap stops it on a failure.)
with_tool() { # READY ARGS...
	local ready=$1
	shift
	# (Its own process group: a tree's command goes with it.)
	setsid "$TOOL" "$@" 2>"$work/tool.err" &
	svc=$!
	while ! grep -q "$ready" "$work/tool.err"; do sleep 0.05; done
	sleep 0.3
	T=$(wall "$STOCK" "$PY" -c "$W1")
	kill -INT -- -"$svc"
	wait "$svc" || true
	svc=
}

plain=() attached=() launched=() beside=() ours=()
settle
for ((i = 0; i < ROUNDS; i++)); do
	plain+=("$(wall "$STOCK" "$PY" -c "$W1")")
	sleep "$GAP"
	with_tool 'qemu-jitbpf: warning' -a --qemu "$STOCK" --perfmap
	attached+=("$T")
	settle
	sleep "$GAP"
	launched+=("$(wall "$TOOL" -- "$STOCK" "$PY" -c "$W1")")
	settle
	sleep "$GAP"
	with_tool 'probes attached' -v --qemu "$STOCK" -- sleep 60
	beside+=("$T")
	settle
	sleep "$GAP"
	ours+=("$(wall "$TOOL" -- "$PAT" "$PY" -c "$W1")")
	settle
	sleep "$GAP"
done

# Each run against the plain run of its round (the machine drifts).
ratios() { # VALUES
	local -a v=($1)
	for ((i = 0; i < ${#v[@]}; i++)); do echo "${v[i]} / ${plain[i]}" | bc -l; done | paste -sd' '
}
row() { # NAME VALUES
	local v=$2 r
	r=$(ratios "$v")
	printf '%-9s median %.3f s  (min %.3f, max %.3f)  to plain, pair by pair: median %.3f\n' \
		"$1" "$(median_of "$v")" "$(lines_of "$v" | sort -g | head -n1)" \
		"$(lines_of "$v" | sort -g | tail -n1)" "$(median_of "$r")"
}
echo "W1 under QEMU 10.2.2, $ROUNDS rounds, GAP=$GAP BUSY=$BUSY, $(date -u +%F)"
row plain "${plain[*]}"
row attached "${attached[*]}"
row launched "${launched[*]}"
row beside "${beside[*]}"
row ours "${ours[*]}"
