#!/usr/bin/env bats
# The degraded mode: QEMU 10.2.2 unpatched, built as Fedora builds its
# qemu-user-static (the dtrace trace backend, stripped): perf map and
# coverage of what it translates while we watch; everything else refused
# in one line, as are a QEMU of an unknown layout and Debian's (no probes).

load helpers

setup() {
	D=$BATS_TEST_TMPDIR
	SX=$BUILD/qemu-10.2.2-stock/bin/qemu-x86_64
	SA=$BUILD/qemu-10.2.2-stock/bin/qemu-aarch64
	[ -x "$SX" ] && [ -x "$SA" ] || fail "make qemu-stock first"
	[ -x "$QEMU_JITBPF" ] || fail "make tool first"
	PIDS=()
	cd "$D"
}

teardown() {
	touch "$D/stop" 2>/dev/null || true
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	stop_bg
	[ -z "${BINFMT_ON:-}" ] || binfmt_unregister
}

# The perf maps a run's -v output says it wrote, one a line.
maps_written() { # OUTPUT
	sed -nE 's/^qemu-jitbpf: pid [0-9]+ \(exit\): wrote (.*)$/\1/p' <<<"$1"
}

NOTE='^qemu-jitbpf: warning: .* is a QEMU without our probes: perf map and coverage of the blocks it translates from now on, named per block; no jitdump'

@test "stock dtrace QEMU, launched under perf (x86_64, aarch64): the perf map names >= 90 % of the JIT samples, hot_main the hottest; what it cannot do said once" {
	local a q
	readelf -S "$SX" | grep -q '\.symtab' && fail "the stock build kept its symbols"
	for a in x86_64 aarch64; do
		q=$SX
		[ "$a" = x86_64 ] || q=$SA
		run perf record -q -e cpu-clock -k 1 -o "$D/perf.$a" -- \
			"$QEMU_JITBPF" -- "$q" "$(guest "$a" hot)" 150000
		assert_success
		assert_line --regexp '^hot 150000 [0-9a-f]+$'
		[ "$(grep -cE "$NOTE" <<<"$output")" = 1 ] || fail "$output"
		assert_line --regexp '^qemu-jitbpf: [0-9]+ TBs, [0-9]+ flushes, [0-9]+ bytes written, 0 events lost$'
		check_attribution "$D/perf.$a" hot_main
	done
}

@test "stock: -a --qemu, attached before the QEMUs start: each its perf map, >= 90 % of its JIT samples named; coverage of what was translated" {
	local pid a i=0
	start_bg "$QEMU_JITBPF" -a -v --qemu "$SX" --qemu "$SA" --perfmap --coverage="$D/cov.info"
	wait_bg_err 'attached to .* binaries' 10
	for a in x86_64 aarch64; do
		q=$SX
		[ "$a" = x86_64 ] || q=$SA
		"$q" "$(guest "$a" hot)" -u "$D/stop" >/dev/null 2>&1 &
		PIDS+=($!)
	done
	sleep 1
	perf record -q -a -e cpu-clock -k 1 -o "$D/perf.data" -- sleep 3 >/dev/null 2>&1
	touch "$D/stop"
	for pid in "${PIDS[@]}"; do wait "$pid"; done
	sleep 0.5
	kill -INT "$BG_PID"
	wait_bg 60
	grep -v 'pid [0-9]*: ' "$D/bg.err" | sed 's/^/# /' >&3 || true
	[ "$BG_STATUS" = 0 ] || fail "$(cat "$D/bg.err")"
	assert_regex "$(cat "$D/bg.err")" '2 QEMU processes \(0 forked\), 2 perf maps'
	for pid in "${PIDS[@]}"; do
		# Its exit came as a patched QEMU's does, before we stopped.
		grep -q "^qemu-jitbpf: pid $pid (exit): wrote /tmp/perf-$pid.map$" "$D/bg.err" ||
			fail "pid $pid: $(grep "pid $pid" "$D/bg.err")"
		[ -s "/tmp/perf-$pid.map" ] || fail "no perf map for pid $pid"
		perf script -i "$D/perf.data" --pid "$pid" -F time,ip,sym,dso 2>/dev/null |
			awk '$NF ~ /perf-[0-9]+\.map\)$/ { t = $1; sub(":", "", t); print t, $3 }' >"$D/s.txt"
		total=$(wc -l <"$D/s.txt")
		named=$(awk '$2 != "[unknown]"' "$D/s.txt" | wc -l)
		top=$(awk '{ print $2 }' "$D/s.txt" | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }')
		echo "# pid $pid: $named of $total JIT samples named, hottest $top" >&3
		[ "$total" -ge 100 ] && [ $((named * 100)) -ge $((total * 90)) ] && [ "$top" = hot_main ] ||
			fail "pid $pid: $named of $total named, hottest $top"
		rm -f "/tmp/perf-$pid.map"
	done
	# What ran was translated: hot.c's hot_main and main, for both.
	grep -q '^SF:.*/tests/guests/hot\.c$' "$D/cov.info" || fail "$(head "$D/cov.info")"
	grep -qE '^FNDA:[1-9][0-9]*,hot_main$' "$D/cov.info" || fail "$(grep FN "$D/cov.info")"
}

@test "stock: -p late: what is translated after the tool started is named (a flush retranslates it all), what ran before is not" {
	start_bg "$SX" "$(guest x86_64 flush)" 800000
	sleep 1
	"$QEMU_JITBPF" -p "$BG_PID" 2>"$D/tool.err" &
	TOOL=$!
	# (The guest's 5.5 s may end first here: perf then ends its sleep with
	# SIGTERM, 143, having recorded all the guest ran.)
	perf_record "$D/perf.data" 5 -p "$BG_PID" || [ $? = 143 ]
	wait_bg 120
	wait "$TOOL" || fail "$(cat "$D/tool.err")"
	sed 's/^/# /' "$D/tool.err" >&3
	grep -qE "$NOTE" "$D/tool.err" || fail "$(cat "$D/tool.err")"
	jit_samples "$D/perf.data" >"$D/s.txt"
	# From the first sample of the second phase (after the flush) on.
	first_two=$(awk '$2 == "phase_two" { print $1; exit }' "$D/s.txt")
	[ -n "$first_two" ] || fail "no phase_two sample: $(sort -k2 "$D/s.txt" | uniq -c -f1 | head)"
	awk -v t="$first_two" '$1 >= t' "$D/s.txt" >"$D/after.txt"
	total=$(wc -l <"$D/after.txt")
	named=$(awk '$2 != "[unknown]"' "$D/after.txt" | wc -l)
	before=$(awk -v t="$first_two" '$1 < t && $2 == "phase_one"' "$D/s.txt" | wc -l)
	echo "# after the flush: $named of $total JIT samples named; phase_one named $before times before it" >&3
	[ "$total" -ge 100 ] && [ $((named * 100)) -ge $((total * 90)) ] || fail "$named of $total"
	# phase_one ran from before we attached: its code was never seen.
	[ "$before" -eq 0 ] || fail "phase_one named $before times: translated before we attached"
	rm -f "/tmp/perf-$BG_PID.map"
}

@test "stock: launched through a shell, each QEMU it execs is seen from its first TB (one after another, two at once, through binfmt_misc), a forked child with its own names; the same binary outside the tree is not followed" {
	local hot=$(guest x86_64 hot) ahot=$(guest aarch64 hot) full afull maps p n
	# Outside the tree, on the same binary, all along.
	touch "$D/before"
	start_bg "$SX" "$hot" -u "$D/stop"
	# What a QEMU launched directly, the tool attached before it started,
	# translates: all of it.
	run "$QEMU_JITBPF" -v --perfmap -- "$SX" "$hot" 100000
	assert_success
	full=$(wc -l <"$(perfmap_of "$output")")
	rm -f "$(perfmap_of "$output")"
	run "$QEMU_JITBPF" -v --perfmap -- "$SA" "$ahot" 100000
	assert_success
	afull=$(wc -l <"$(perfmap_of "$output")")
	rm -f "$(perfmap_of "$output")"
	# --qemu: the stock binary is watched before the command runs it.
	run "$QEMU_JITBPF" -v --perfmap --qemu "$SX" -- sh -c "'$SX' '$hot' 100000; '$SX' '$hot' 100000 &
		'$SX' '$hot' 100000; wait; (sleep 1; touch '$D/fstop') & '$SX' '$(guest x86_64 forker)' '$D/fstop'"
	assert_success
	assert_line --regexp '^parent [0-9]+ '
	maps=$(maps_written "$output")
	[ "$(wc -l <<<"$maps")" = 5 ] || fail "$output"
	for p in $maps; do
		n=$(wc -l <"$p")
		if grep -q ' hot_main$' "$p"; then
			echo "# $p: $n lines (launched directly: $full)" >&3
			[ $((n * 100)) -ge $((full * 99)) ] || fail "$p: $n lines of $full: its first TBs were missed"
		else
			grep -q ' child_work$' "$p" && grep -q ' parent_work$' "$p" || fail "$p: $(head "$p")"
		fi
	done
	[ "$(grep -l ' hot_main$' $maps | wc -l)" = 3 ] || fail "$maps"
	[ -z "$(find /tmp -maxdepth 1 -name "perf-$BG_PID.map" -newer "$D/before")" ] ||
		fail "the QEMU outside the tree got a map"
	rm -f $maps
	# binfmt_misc's emulator is watched before the command runs a
	# foreign program: the first one too.
	binfmt_register "$SA"
	BINFMT_ON=1
	run "$QEMU_JITBPF" -v --perfmap -- sh -c "'$ahot' 100000; '$ahot' 100000"
	binfmt_unregister
	BINFMT_ON=
	assert_success
	maps=$(maps_written "$output")
	[ "$(wc -l <<<"$maps")" = 2 ] || fail "$output"
	for p in $maps; do
		n=$(wc -l <"$p")
		echo "# aarch64 through binfmt_misc: $p: $n lines (launched directly: $afull)" >&3
		[ $((n * 100)) -ge $((afull * 99)) ] && grep -q ' hot_main$' "$p" || fail "$p: $n lines of $afull"
	done
	rm -f $maps
}

@test "stock: what it cannot give is refused in one line; a TB laid out otherwise is refused, not misread, as are argument specs libbpf cannot read; Debian's QEMU, without probes, is refused naming the builds that work" {
	local opt
	for opt in --jitdump "--uftrace=$D/u" --profile="$D/p.folded" --report --perfmap-insn; do
		run "$QEMU_JITBPF" "$opt" -- "$SX" "$(guest x86_64 hot)" 100
		assert_failure
		assert_output --regexp "^qemu-jitbpf: $SX is a QEMU without our probes \(its own trace events only\): no --[a-z-]+.*; build one with them: make qemu \(see README.md\)$"
	done
	# A stand-in for a stock QEMU of a version whose TB keeps its code
	# pointer elsewhere.
	touch "$D/before"
	run "$QEMU_JITBPF" -- "$BUILD/host/qemu-other-layout" 300
	assert_failure
	assert_line --regexp '^qemu-jitbpf: QEMU \(pid [0-9]+\) keeps its TBs otherwise than QEMU 10\.2\.2 \(tb 0x[0-9a-f]+ holds 0x1234 where its code 0x[0-9a-f]+ should be\): refused rather than misread'
	assert_line --partial 'no files written'
	pid=$(sed -nE 's/^qemu-jitbpf: QEMU \(pid ([0-9]+)\) keeps its TBs.*/\1/p' <<<"$output")
	# (One older than the run is another process's that had its pid.)
	[ -z "$(find /tmp -maxdepth 1 -name "perf-$pid.map" -newer "$D/before")" ] ||
		fail "a perf map was written for it"
	assert_line --regexp '^qemu-jitbpf: 0 TBs, '
	# The same with an argument spec libbpf cannot read (as compilers
	# may write them when told STAP_SDT_ARG_CONSTRAINT=g): its last
	# argument's, rewritten in the note of a copy.
	cp "$BUILD/host/qemu-other-layout" "$D/qemu-odd-spec"
	spec=$(readelf -n "$D/qemu-odd-spec" | grep -A2 'Name: translate_block$' | sed -n 's/^ *Arguments: //p')
	[ -n "$spec" ] || fail "no translate_block spec"
	/usr/bin/python3 - "$D/qemu-odd-spec" "$spec" <<'PY'
import sys
path, spec = sys.argv[1], sys.argv[2].encode()
odd = spec.rsplit(b" ", 1)[0] + b" 8@[x1]"
data = open(path, "rb").read()
assert data.count(spec + b"\0") == 1 and len(odd) <= len(spec)
open(path, "wb").write(data.replace(spec + b"\0", odd.ljust(len(spec), b"\0") + b"\0"))
PY
	run "$QEMU_JITBPF" -- "$D/qemu-odd-spec" 10
	assert_failure
	assert_line --regexp "^qemu-jitbpf: $D/qemu-odd-spec: its probe's arguments are in a form libbpf cannot read \(a QEMU built with STAP_SDT_ARG_CONSTRAINT=g\?\): use one built with our probes \(make qemu\)$"
	# Debian 12's qemu-user-static: the log trace backend, no probes.
	dq=$BUILD/debian-qemu/usr/bin/qemu-x86_64-static
	[ -x "$dq" ] || fail "make guests first (scripts/debian-qemu.sh)"
	run "$QEMU_JITBPF" -- "$dq" "$(guest x86_64 hot)" 100
	assert_failure
	assert_output --regexp "^qemu-jitbpf: $dq \(pid [0-9]+\) has no USDT probes: it works with a QEMU built with ours \(make qemu, see README.md\), or, degraded, with a linux-user QEMU built with the dtrace trace backend \(Fedora's, RHEL's, Azure Linux's\)$"
	run "$QEMU_JITBPF" -a --qemu "$dq"
	assert_failure
	assert_output --partial "$dq: not a QEMU with the qemu-jitbpf probes (make qemu), nor a linux-user one with the dtrace trace backend's"
}

@test "valgrind: no memory error and no leak in the degraded mode (launched with coverage; the stand-in refused)" {
	no_valgrind_under_asan
	vg() {
		valgrind -q --suppressions="$TOP/tests/valgrind.supp" --error-exitcode=99 \
			--leak-check=full --errors-for-leak-kinds=definite,possible "$@"
	}
	# Long enough for the sweep to finish the loop's last TBs.
	run vg "$QEMU_JITBPF" --perfmap --coverage="$D/c.info" -- "$SX" "$(guest x86_64 hot)" 1000000
	[ "$status" -ne 99 ] || fail "valgrind: $output"
	assert_success
	assert_line --regexp "^hot 1000000 "
	map=$(sed -nE 's/^qemu-jitbpf: perf map: (.*)$/\1/p' <<<"$output")
	grep -q ' hot_main$' "$map" || fail "$(head "$map")"
	rm -f "$map"
	run vg "$QEMU_JITBPF" -- "$BUILD/host/qemu-other-layout" 50
	[ "$status" -ne 99 ] || fail "valgrind: $output"
	assert_failure
}
