#!/usr/bin/env bats
# --stacks: every guest thread of a hung program, now, without ptrace and
# without stopping QEMU.  tests/guests/hang.c hangs as programs under
# emulation are reported to; each of its threads prints its own
# backtrace() before it blocks, which the dump must match frame by frame
# (tests/stacks-check.py).

load helpers

V=10.2.2

setup() {
	D=$BATS_TEST_TMPDIR
	cd "$D"
}

teardown() {
	stop_bg
}

# Run ARCH's hang MODE under QEMU (VERSION), wait until THREADS threads
# have said "ready" and every thread named hang-* is blocked in the host
# kernel (SPINS: one that spins, not blocked), then dump it to s.json.
hang_dump() { # VERSION ARCH MODE THREADS [spins]
	local q t n=50 blocked
	require_qemu "$1" "$2"
	q=$(qemu_bin "$1" "$2")
	start_bg "$q" "$(guest "$2" hang)" "$3"
	while [ "$(grep -c '^ready ' "$D/bg.out")" -lt "$4" ] && [ "$n" -gt 0 ]; do
		sleep 0.1
		n=$((n - 1))
	done
	[ "$(grep -c '^ready ' "$D/bg.out")" = "$4" ] || fail "not ready: $(cat "$D/bg.out")"
	for n in $(seq 50); do
		blocked=0
		for t in /proc/"$BG_PID"/task/*; do
			grep -q '^hang-' "$t/comm" 2>/dev/null || continue
			grep -q '^[0-9]' "$t/syscall" 2>/dev/null && blocked=$((blocked + 1))
		done
		[ "$blocked" -ge "$4" ] || [ "${5:-}" = spins ] && break
		sleep 0.1
	done
	run "$QEMU_JITBPF" -p "$BG_PID" --stacks="$D/s.json"
	assert_success
	/usr/bin/python3 -m json.tool "$D/s.json" >/dev/null || fail "not JSON: $(cat "$D/s.json")"
}

check() { # ARCH THREAD=SYSCALL/WCHAN...
	local a=$1
	shift
	run "$TOP/tests/stacks-check.py" "$D/s.json" "$D/bg.out" "$(guest "$a" hang)" "$@"
	[ "$status" = 0 ] || fail "$output
$(cat "$D/s.json")"
}

# The dump's one cycle of lock owners is hang-ab and hang-ba, each the
# owner of the lock the other waits on.
check_cycle() {
	/usr/bin/python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))['processes'][0]
t = {x['name']: x for x in p['threads']}
ab, ba = t['hang-ab'], t['hang-ba']
ok = (sorted(map(sorted, p['deadlocks'])) == [sorted([ab['tid'], ba['tid']])]
      and ab['futex']['owner'] == ba['tid'] and ba['futex']['owner'] == ab['tid'])
sys.exit(not ok)" "$D/s.json" || fail "no cycle of hang-ab and hang-ba: $(cat "$D/s.json")"
}

# Frames through glibc's locks, which have no CFI: each locking thread's
# goes __pthread_mutex_lock, its lock_* (found from the lock's code, and
# said so), start_thread; the main thread's reaches main.
check_prologue_frames() {
	/usr/bin/python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))['processes'][0]
bad = []
for t in p['threads']:
    fs = [f['function'] for f in t['frames']]
    if t['name'].startswith('hang-'):
        lock = 'lock_' + t['name'][5:]
        if lock not in fs or 'start_thread' not in fs[fs.index(lock):] or not any(
                f.endswith('pthread_mutex_lock') for f in fs[:fs.index(lock)]):
            bad.append((t['name'], fs))
        elif t['frames'][fs.index(lock)]['found_by'] != 'prologue':
            bad.append((t['name'], 'lock_* not marked as found by the prologue'))
    elif 'main' not in fs:
        bad.append((t['name'], fs))
print(bad) if bad else None
sys.exit(1 if bad else 0)" "$D/s.json" || fail "$(cat "$D/s.json")"
	run "$QEMU_JITBPF" -p "$BG_PID" --stacks
	assert_success
	assert_line --regexp "^  #[0-9]+ +0x[0-9a-f]+ lock_ab\+0x[0-9a-f]+ at .*hang.c:$(at hang-ab) \(found by its callee's prologue: no CFI\)$"
}

# The source line where thread NAME of hang.c blocks.
at() { # NAME
	grep -n "$1 blocks here" "$TOP/tests/guests/hang.c" | cut -d: -f1
}

@test "--stacks: two threads deadlocked on two mutexes, each blocked in futex at its line, the cycle of owners named; on x86_64 and aarch64 its frames are its own backtrace()'s" {
	local a
	for a in x86_64 aarch64; do
		hang_dump "$V" "$a" deadlock 2
		check "$a" hang-ab=futex/futex/lock_ab:"$(at hang-ab)" \
			hang-ba=futex/futex/lock_ba:"$(at hang-ba)"
		check_cycle
		stop_bg
	done
	# Debian's riscv64 and armhf static glibc have no CFI for their locks
	# (the guest's own backtrace() stops there): the frames through them
	# are found by their code, as gdb's prologue analyzers find them, on
	# to the guest's locking function at its line, its thread's start, and
	# main for the thread that joins.
	hang_dump "$V" riscv64 deadlock 2
	check riscv64 hang-ab=futex/futex/lock_ab:"$(at hang-ab)" hang-ba=futex/futex/lock_ba:"$(at hang-ba)"
	check_cycle
	check_prologue_frames
	stop_bg
	hang_dump "$V" arm deadlock 2
	check arm hang-ab=futex/futex/lock_ab:"$(at hang-ab)" hang-ba=futex/futex/lock_ba:"$(at hang-ba)"
	check_cycle
	check_prologue_frames
	# The text says it in one line.
	run "$QEMU_JITBPF" -p "$BG_PID" --stacks
	assert_success
	assert_line --regexp '^Deadlock: TID [0-9]+ hang-(ab|ba) waits for the lock at 0x[0-9a-f]+ held by TID [0-9]+ hang-(ab|ba) waits for the lock at 0x[0-9a-f]+ held by TID [0-9]+ hang-(ab|ba)$'
}

@test "--stacks: a thread blocked reading a pipe, one in nanosleep, at their lines; the main thread in pthread_join" {
	local a
	for a in x86_64 aarch64 riscv64; do
		hang_dump "$V" "$a" read 1
		check "$a" hang-read=read/pipe_read/read_pipe:"$(at hang-read)"
		/usr/bin/python3 -c "import json, sys; t = json.load(open(sys.argv[1]))['processes'][0]['threads']; m = [x for x in t if x['tid'] == int(sys.argv[2])][0]; sys.exit(not any('join' in f['function'] for f in m['frames']) or m['syscall']['name'] != 'futex')" \
			"$D/s.json" "$BG_PID" || fail "the main thread: $(cat "$D/s.json")"
		stop_bg
	done
	for a in x86_64 riscv64; do
		hang_dump "$V" "$a" sleep 1
		check "$a" hang-sleep=clock_nanosleep/nanosleep/sleep_long:"$(at hang-sleep)"
		stop_bg
	done
	hang_dump "$V" arm sleep 1
	check arm hang-sleep=clock_nanosleep/nanosleep/__clock_nanosleep_time64
}

@test "--stacks: a 32-bit arm thread retrying mremap, running in it, in the text dump too" {
	local i
	hang_dump "$V" arm spin 1 spins
	# It is in QEMU's mremap 99 % of the time: one dump in three at least.
	for i in 1 2 3; do
		run "$TOP/tests/stacks-check.py" "$D/s.json" "$D/bg.out" "$(guest arm hang)" \
			hang-spin=mremap//__libc_do_syscall
		[ "$status" = 0 ] && break
		run "$QEMU_JITBPF" -p "$BG_PID" --stacks="$D/s.json"
	done
	check arm hang-spin=mremap//__libc_do_syscall
	run "$QEMU_JITBPF" -p "$BG_PID" --stacks
	assert_success
	assert_line --regexp "^PID $BG_PID: .*/hang spin \(2 guest threads, [0-9]+ of QEMU's own\)\$"
	assert_line --regexp '^TID [0-9]+ hang-spin cpu [0-9]+: (running in mremap\(0x[0-9a-f]+, 0x1000, 0x2000, 0x0, |running$|running .*\(sampled\)(, in mremap\(0x[0-9a-f]+, 0x1000, 0x2000, 0x0, .*)?$)'
	assert_line --regexp '^TID [0-9]+ qemu-arm-static cpu 0: blocked in futex\(.*\); the host kernel waits in futex'
	assert_line --regexp '^  host kernel: futex'
}

@test "--stacks: a thread running guest code is sampled, its leaf exact by the code map, its callers by CFI (x86_64, aarch64)" {
	local a i out
	for a in x86_64 aarch64; do
		start_bg "$(qemu_bin $V $a)" "$(guest $a hot)" 1000000000
		sleep 0.5
		for i in 1 2 3; do
			run "$QEMU_JITBPF" -p "$BG_PID" --stacks="$D/s.json"
			assert_success
			out=$(/usr/bin/python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))['processes'][0]['threads']
f = [x['function'] for x in t[0]['frames']]
print(len(t), t[0].get('sampled'), ';'.join(f), t[0]['frames'][0].get('line'))" "$D/s.json")
			echo "# $a: $out" >&3
			# At a line of hot_main or hot_side, called from main, or
			# of main itself (between the calls, or in QEMU's lookup
			# of the next block), from the C library's start; the
			# sample may catch it in a helper or in the host kernel
			# (a page fault, an interrupt's return).
			[[ $out =~ ^1\ running\ (guest\ code|in\ QEMU.*|in\ the\ host\ kernel|a\ helper.*)\ (hot_main\;main\;.*_start\ 1[3-8]|hot_side\;main\;.*_start\ 2[0-4]|main\;.*_start\ 3[0-8])$ ]] ||
				fail "$out"
		done
		stop_bg
	done
}

@test "-p on a QEMU that has run for two minutes: --stacks names every thread where it is, --off-cpu puts 80 % ± 5 of the wall time where they sleep" {
	local out
	# Four threads, each sleeping 8 ms in snooze() and working 2 ms in
	# work(), for 126 s; attached after 120, until its end.
	start_bg "$(qemu_bin $V x86_64)" "$(guest x86_64 waits)" 126 8000 2000 4
	sleep 120
	run "$QEMU_JITBPF" -p "$BG_PID" --stacks="$D/s.json"
	assert_success
	out=$(/usr/bin/python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))['processes'][0]['threads']
for x in t:
    f = [y['function'] for y in x['frames']]
    where = x.get('sampled') or x.get('syscall', {}).get('name') or x['state']
    print(where, ';'.join(f))" "$D/s.json")
	echo "$out" | sed 's/^/# /' >&3
	[ "$(wc -l <<<"$out")" = 4 ] || fail "$out"
	# Each asleep in snooze, or in work (running, or waiting for QEMU
	# there), or between the two.
	! grep -vE '^(clock_nanosleep .*;snooze;run;|(running |R |S ).*(work|now|snooze);run;)' <<<"$out" || fail "$out"
	run "$QEMU_JITBPF" -p "$BG_PID" -d 3 --off-cpu -F 499 --profile="$D/p.folded"
	assert_success
	# Against the guest's own clock: on a busy host its rounds wait for
	# a CPU in work(), and it sleeps less than 80 % of the time.
	wait "$BG_PID"
	read -r out _ < <(share "$D/p.folded" snooze)
	check_share "$out" "$(cat "$D/bg.out")"
	BG_PID=
}

@test "--stacks on QEMU 7.2's series: the same deadlock" {
	hang_dump 7.2 x86_64 deadlock 2
	check x86_64 hang-ab=futex/futex/lock_ab:"$(at hang-ab)" hang-ba=futex/futex/lock_ba:"$(at hang-ba)"
}

@test "--stacks needs -p or -a" {
	run "$QEMU_JITBPF" --stacks -- "$(qemu_bin "$V" x86_64)" "$(guest x86_64 hang)"
	assert_failure
	assert_output --partial "--stacks goes with -p PID or -a"
}

@test "--stacks of a Go program cross-compiled for arm64 with Debian's Go: its goroutine blocked in read named through os.(*File).Read to main.readInput, the runtime's threads in its own functions" {
	require_qemu "$V" aarch64
	mkfifo "$D/in"
	# Its standard input a pipe nobody writes (we hold it open).
	exec 4<>"$D/in"
	"$(qemu_bin "$V" aarch64)" "$(guest aarch64 hang-go)" <"$D/in" >"$D/bg.out" 2>&1 &
	BG_PID=$!
	wait_for_file_line "$D/bg.out" '^ready$'
	sleep 0.5
	run "$QEMU_JITBPF" -p "$BG_PID" --stacks="$D/s.json"
	assert_success
	/usr/bin/python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))['processes'][0]['threads']
fn = lambda x: [f['function'] for f in x['frames']]
r = [x for x in t if x.get('syscall', {}).get('name') == 'read']
ok = (len(r) == 1 and 'main.readInput' in fn(r[0]) and 'os.(*File).Read' in fn(r[0])
      and 'anon_pipe_read' in r[0]['wchan']
      and sum(any(f.startswith('runtime.') for f in fn(x)) for x in t) >= 3)
sys.exit(not ok)" "$D/s.json" || fail "$(cat "$D/s.json")"
	run "$QEMU_JITBPF" -p "$BG_PID" --stacks
	assert_success
	assert_line --regexp '^  #[0-9] +0x[0-9a-f]+ main\.readInput\+0x[0-9a-f]+$'
}
