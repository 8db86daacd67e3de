#!/usr/bin/env bats
# --off-cpu: wall-clock profiles, where guest threads wait as well as
# where they run.  tests/guests/waits.c sleeps in snooze() and works in
# work(), and measures with its own clock the share of its time it slept:
# the profile must give snooze() that share of the wall time.

load helpers

V=10.2.2

setup() {
	D=$BATS_TEST_TMPDIR
	cd "$D"
}

teardown() {
	stop_bg
}

@test "--off-cpu: a guest asleep 80 % of its time in one function gets 80 % ± 5 of the wall time there (x86_64, aarch64); folded in ns, SVG and pprof read" {
	local a q s
	for a in x86_64 aarch64; do
		q=$(qemu_bin $V $a)
		# (At 499 Hz: 1500 ticks, a share within 1 % of its mean.)
		run "$QEMU_JITBPF" --off-cpu -F 499 --profile="$D/$a.folded" --profile="$D/$a.pb.gz" \
			--profile="$D/$a.svg" -- "$q" "$(guest $a waits)" 3
		assert_success
		read -r s total < <(share "$D/$a.folded" snooze)
		echo "# $a: $total s of wall time in the profile" >&3
		check_share "$s" "$output"
		# The wait by its reason: the guest's system call, the host
		# kernel's wait under it.
		grep -qE ';snooze;.*;\[off-CPU: clock_nanosleep\]_\[q\];.*hrtimer_nanosleep_\[k\]' "$D/$a.folded" ||
			fail "no wait in clock_nanosleep: $(cut -c1-300 "$D/$a.folded")"
		# Wall time, about the run's 3 s.
		awk -v t="$total" 'BEGIN { exit !(t >= 2.5 && t <= 3.6) }' || fail "$total s of wall time"
		go tool pprof -raw "$D/$a.pb.gz" >"$D/raw" 2>&1
		grep -q '^PeriodType: wall nanoseconds$' "$D/raw" || fail "$(head "$D/raw")"
		grep -qE '^Samples:$' "$D/raw"
		sed -n '/^Samples:$/{n;p}' "$D/raw" | grep -qF 'samples/count wall/nanoseconds[dflt] cpu/nanoseconds off_cpu/nanoseconds' ||
			fail "sample types: $(sed -n '/^Samples:$/{n;p}' "$D/raw")"
		go tool pprof -sample_index=off_cpu -top "$D/$a.pb.gz" 2>/dev/null | grep -q 'snooze$' ||
			fail "go tool pprof: no off-CPU time in snooze"
		grep -q 'of wall-clock time at 499 Hz, [0-9.]*% off-CPU' "$D/$a.svg" || fail "SVG title"
	done
}

@test "--off-cpu -p on a running QEMU of four threads that each sleep 80 %" {
	local q s
	q=$(qemu_bin $V x86_64)
	start_bg "$q" "$(guest x86_64 waits)" 6 8000 2000 4
	sleep 1
	# Not at the default 99 Hz: its 10.1 ms period is the guest's own
	# cycle (8 ms asleep, 2 ms at work), and samples of a periodic
	# program at its own period keep their phase, for ticks of waits and
	# of CPU alike: over 3 s a thread's work is then sampled at every
	# tick or at none (85.6 % in snooze once, against the guest's 79.8).
	run "$QEMU_JITBPF" -p "$BG_PID" -d 3 --off-cpu -F 499 --profile="$D/p.folded"
	assert_success
	wait "$BG_PID"
	read -r s total < <(share "$D/p.folded" snooze)
	echo "# $total s of wall time for 4 threads over 3 s" >&3
	awk -v t="$total" 'BEGIN { exit !(t >= 11.4 && t <= 13) }' || fail "$total s of wall time"
	check_share "$s" "$(cat "$D/bg.out")"
	BG_PID=
}

@test "--off-cpu on a deadlocked program, attached after it blocked: each thread's whole wait, by guest stack and reason, in every --interval's profile" {
	local f n=0 t
	start_bg "$(qemu_bin $V x86_64)" "$(guest x86_64 hang)" deadlock
	for _ in $(seq 50); do
		[ "$(grep -c '^ready ' "$D/bg.out")" -ge 2 ] && break
		sleep 0.1
	done
	sleep 0.5
	run "$QEMU_JITBPF" -p "$BG_PID" -d 3.5 --interval=1 --off-cpu --profile="$D/d.folded"
	assert_success
	# Both threads of the cycle, and main joining one of them, blocked in
	# futex the whole time: no wait ends, so each is counted as it goes.
	for f in "$D"/d.*.folded; do
		t=$(awk '{ t += $NF } END { printf "%.2f", t / 1e9 }' "$f")
		echo "# $(basename "$f"): $t s of wall time, $(wc -l <"$f") stacks" >&3
		grep -qE ';start_thread;lock_ab;.*;\[off-CPU: futex\]_\[q\];' "$f" || fail "$f: $(cat "$f")"
		grep -qE ';start_thread;lock_ba;.*;\[off-CPU: futex\]_\[q\];' "$f" || fail "$f: $(cat "$f")"
		grep -qE ';main;.*join.*;\[off-CPU: futex\]_\[q\];' "$f" || fail "$f: $(cat "$f")"
		# An interval of one second whole: a second for each thread.
		awk -v t="$t" 'BEGIN { exit !(t >= 2.8 && t <= 3.2) }' && n=$((n + 1))
	done
	[ "$n" -ge 2 ] || fail "$n whole intervals of 3 s"
}

@test "--off-cpu --interval: a wait under way when an interval ends is split between the two, never counted twice" {
	local f n=0 t
	# One thread: sleeps of 0.7 s, most across an interval's end.
	run "$QEMU_JITBPF" --interval=1 --off-cpu --profile="$D/i.folded" -- \
		"$(qemu_bin $V x86_64)" "$(guest x86_64 waits)" 5.5 700000 50000 1
	assert_success
	local files=("$D"/i.*.folded)
	for f in "${files[@]}"; do
		t=$(awk '{ t += $NF } END { printf "%.3f", t / 1e9 }' "$f")
		echo "# $(basename "$f"): $t s of wall time" >&3
		# The thread's second, on its CPU or off it, once (a wait counted
		# twice would make 1.3 s and more): off-CPU ticks and CPU samples
		# of 10 ms (99 Hz, their periods as the kernel adapts them), and
		# in the first and the last QEMU's start and exit, which its other
		# threads share (up to 1.10 s seen on a busy host).
		awk -v t="$t" 'BEGIN { exit !(t <= 1.15) }' || fail "$f: $t s in an interval of 1 s"
		[ "$f" = "${files[0]}" ] || [ "$f" = "${files[-1]}" ] ||
			awk -v t="$t" 'BEGIN { exit !(t >= 0.95 && t <= 1.05) }' ||
			fail "$f: $t s in an interval of 1 s"
		n=$((n + 1))
	done
	# The guest runs 6 s: its last round starts before 5.5 s.
	[ "$n" -ge 6 ] || fail "$n intervals, not 6"
}

@test "valgrind: no memory error and no leak with --off-cpu (waits taken by BPF and under way, every writer)" {
	no_valgrind_under_asan
	start_bg "$(qemu_bin $V x86_64)" "$(guest x86_64 hang)" deadlock
	wait_for_file_line "$D/bg.out" '^ready '
	run valgrind -q --suppressions="$TOP/tests/valgrind.supp" --error-exitcode=99 \
		--leak-check=full --errors-for-leak-kinds=definite,possible \
		"$QEMU_JITBPF" -p "$BG_PID" -d 2.5 --interval=1 --off-cpu \
		--profile="$D/d.folded" --profile="$D/d.pb.gz" --profile="$D/d.svg"
	[ "$status" -ne 99 ] || fail "valgrind: $output"
	assert_success
	grep -q 'lock_ab;.*\[off-CPU: futex\]' "$D"/d.*.folded
	stop_bg
	run valgrind -q --suppressions="$TOP/tests/valgrind.supp" --error-exitcode=99 \
		--leak-check=full --errors-for-leak-kinds=definite,possible \
		"$QEMU_JITBPF" --off-cpu --profile="$D/w.folded" --profile="$D/w.pb.gz" -- \
		"$(qemu_bin $V aarch64)" "$(guest aarch64 waits)" 1 8000 2000 2
	[ "$status" -ne 99 ] || fail "valgrind: $output"
	assert_success
	grep -q ';snooze;.*\[off-CPU: clock_nanosleep\]' "$D/w.folded"
}

@test "--off-cpu: bad input is a one-line error" {
	run "$QEMU_JITBPF" --off-cpu -p 1
	assert_failure
	assert_output --partial "--off-cpu goes with --profile or --push"
	run "$QEMU_JITBPF" --off-cpu --top -p 1
	assert_failure
	assert_output --partial "--off-cpu goes with --profile or --push"
}
