#!/usr/bin/env bats
# tools/: qemu-tbstat, and make install of every tool.

load helpers

teardown() {
	stop_bg
}

tbstat() {
	timeout -s INT 60 "$TOOLS/qemu-tbstat" "$@" 2> >(grep -v RLIMIT_MEMLOCK >&2)
}

# Sum of column N of qemu-tbstat's data lines.
column_sum() { # N
	awk -v n="$1" '/^[0-9][0-9]:[0-9][0-9]:[0-9][0-9] / { s += $n } END { print s + 0 }' <<<"$output"
}

@test "qemu-tbstat -c: a line per second from QEMU's start, both QEMUs" {
	script=$BATS_TEST_TMPDIR/w.py
	# (a pause at the end: a line comes before QEMU's exit flush)
	printf 'import json, decimal, email.parser, time\nprint(sum(range(10**6)))\ntime.sleep(1.5)\n' >"$script"
	for v in 10.2.2 7.2; do
		q=$(qemu_bin "$v" x86_64)
		run tbstat -c "$q /usr/bin/python3 $script"
		assert_success
		assert_line 499999500000
		assert_line --regexp '^TIME +TBS +INSNS +FLUSH +CODE_KiB +BATCH +HANDED$'
		echo "$output" | sed 's/^/#   /' >&3
		tbs=$(column_sum 2)
		insns=$(column_sum 3)
		handed=$(column_sum 7)
		[ "$tbs" -gt 10000 ] || fail "$v: $tbs TBs"
		[ "$insns" -gt "$tbs" ] || fail "$v: $insns instructions in $tbs TBs"
		# Every TB reported was handed over in a batch.
		[ "$handed" -eq "$tbs" ] || fail "$v: $handed of $tbs TBs handed over"
		# (QEMU built with plugins flushes at exit: the last line may say 0.)
		code=$(awk '/^[0-9][0-9]:[0-9][0-9]:[0-9][0-9] / && $5 > c { c = $5 } END { print c + 0 }' <<<"$output")
		[ "$code" -gt 1024 ] || fail "$v: $code KiB of code"
	done
}

@test "qemu-tbstat -p: a flush in a running QEMU, and the code translated after it" {
	start_bg "$(qemu_bin 10.2.2 x86_64)" "$(guest x86_64 flush)" 1500000
	sleep 0.5
	run tbstat -p "$BG_PID" -d 12
	assert_success
	echo "$output" | sed 's/^/#   /' >&3
	# Compute-bound phase one translates nothing; its thread makes QEMU
	# flush and translate again (and QEMU built with plugins flushes at exit).
	[ "$(column_sum 4)" -ge 1 ] || fail "no flush"
	[ "$(column_sum 2)" -gt 10 ] || fail "$(column_sum 2) TBs"
	[ "$(grep -cE "^[0-9]{2}:[0-9]{2}:[0-9]{2} " <<<"$output")" -ge 3 ]
	# Before the thread: a second of nothing.
	assert_line --regexp '^[0-9:]{8} +0 +0 +0 +0 +0 +0$'
}

@test "qemu-tbstat: bad input gets one line and a non-zero exit" {
	run "$TOOLS/qemu-tbstat"
	[ "$status" -eq 2 ]
	assert_output "qemu-tbstat: give exactly one of -p PID and -c CMD"
	run "$TOOLS/qemu-tbstat" -p 4194303
	assert_failure
	assert_output "qemu-tbstat: no process 4194303"
	run "$TOOLS/qemu-tbstat" -c /bin/true
	assert_failure
	assert_output "qemu-tbstat: /bin/true has no qemu-jitbpf probes (build one with 'make qemu')"
	run "$TOOLS/qemu-tbstat" -d 1.5 -p 1
	[ "$status" -eq 2 ]
	assert_output "qemu-tbstat: -d takes whole seconds, not '1.5'"
}

@test "make install puts every tool on PATH, and they run from there" {
	d=$BATS_TEST_TMPDIR/inst
	run make -C "$TOP" --no-print-directory install DESTDIR="$d" PREFIX=/usr
	assert_success
	for t in qemu-jitbpf qemu-jit-events qemu-tbstat; do
		[ -x "$d/usr/bin/$t" ] || fail "$t not installed"
	done
	[ -f "$d/usr/share/man/man8/qemu-jitbpf.8" ]
	[ -f "$d/usr/share/doc/qemu-jitbpf/one-liners.md" ]
	run "$d/usr/bin/qemu-tbstat" -h
	assert_success
	assert_line --partial 'Usage: qemu-tbstat'
	run "$d/usr/bin/qemu-jit-events" -s -c "$(qemu_bin 10.2.2 x86_64) $(guest x86_64 hot) 10"
	assert_success
	assert_line --regexp '^@tbs: [0-9]+$'
}
