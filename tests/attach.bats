#!/usr/bin/env bats
# Several tools on one QEMU, attaching and detaching at any moment, some
# killed: every tool gets its handshake; nothing stays enabled after the
# last one leaves.  Both QEMU versions, x86_64 guests.

load helpers

teardown() {
	stop_bg
	[ -z "${GUEST:-}" ] || kill "$GUEST" 2>/dev/null || true
	GUEST=
}

# Start a guest that runs until the test stops it; its pid in $GUEST.
start_guest() { # QEMU DIR NAME ARGS...
	local q=$1 d=$2
	shift 2
	(cd "$d" && exec "$q" "$(guest x86_64 "$1")" "${@:2}" >"$d/guest.out") &
	GUEST=$!
	# A map an earlier process of this pid left (pids wrap at 32768).
	rm -f "/tmp/perf-$GUEST.map"
	sleep 0.5
}

# Programs of ours still loaded (a link or a tool holds them).
our_programs() {
	bpftool prog show 2>/dev/null |
		grep -cE 'name (tb_gen_code_bat|tcg_prologue|tb_flush|jit_attach|jitdump_marker|linux_user_elf_|linux_user_gues|jit_calls) ' || true
}

# Wait until no qemu-jitbpf process is left (the detach helper included).
wait_no_tool() {
	local t=100
	while pgrep -x qemu-jitbpf >/dev/null && [ "$t" -gt 0 ]; do
		sleep 0.1
		t=$((t - 1))
	done
	! pgrep -x qemu-jitbpf >/dev/null || fail "qemu-jitbpf still running: $(pgrep -ax qemu-jitbpf)"
}

@test "A with --perfmap, B 2 s later with --uftrace --jitdump: both get named files" {
	for v in 10.2.2 7.2; do
		d=$BATS_TEST_TMPDIR/$v
		mkdir -p "$d"
		start_guest "$(qemu_bin "$v" x86_64)" "$d" hot 100000000
		"$QEMU_JITBPF" -p "$GUEST" --perfmap -d 8 2>"$d/a.err" &
		a=$!
		sleep 2
		"$QEMU_JITBPF" -p "$GUEST" --uftrace="$d/u" --jitdump -d 4 -v 2>"$d/b.err" &
		b=$!
		wait_for_file "$d/jit-$GUEST.dump"
		perf_record "$d/perf.data" 2 -p "$GUEST"
		st=0
		wait "$b" || st=$?
		[ "$st" = 0 ] || fail "$v: B exited $st: $(cat "$d/b.err")"
		grep -q "handshake after" "$d/b.err" || fail "$v: B saw no handshake"
		st=0
		wait "$a" || st=$?
		[ "$st" = 0 ] || fail "$v: A exited $st: $(cat "$d/a.err")"
		# B's uftrace data and jitdump name the guest's functions.
		run uftrace report -d "$d/u"
		assert_success
		assert_line --regexp ' hot_main$'
		assert_line --regexp ' hot_side$'
		perf_inject "$d/perf.data" "$d/perf.jit.data"
		check_attribution "$d/perf.jit.data" hot_main
		# A's perf map, written at its end, still names them.
		grep -q ' hot_main$' "/tmp/perf-$GUEST.map" || fail "$v: A's perf map has no hot_main"
		grep -q ' hot_side$' "/tmp/perf-$GUEST.map" || fail "$v: A's perf map has no hot_side"
		rm -f "/tmp/perf-$GUEST.map"
		kill "$GUEST"
		GUEST=
	done
}

@test "a tool killed with SIGKILL, another attaching at once: named data" {
	for v in 10.2.2 7.2; do
		d=$BATS_TEST_TMPDIR/$v
		mkdir -p "$d"
		start_guest "$(qemu_bin "$v" x86_64)" "$d" hot 100000000
		for round in 1 2 3; do
			"$QEMU_JITBPF" -p "$GUEST" --uftrace="$d/x$round" --perfmap -v 2>"$d/x.err" &
			x=$!
			for _ in $(seq 100); do
				grep -q "handshake after" "$d/x.err" && break
				sleep 0.05
			done
			kill -KILL "$x"
			run "$QEMU_JITBPF" -p "$GUEST" --perfmap --uftrace="$d/y$round" -d 1 -v
			assert_success
			assert_line --partial "handshake after"
			run uftrace report -d "$d/y$round"
			assert_line --regexp ' hot_main$'
			grep -q ' hot_main$' "/tmp/perf-$GUEST.map" || fail "$v: no hot_main in the perf map"
			rm -f "/tmp/perf-$GUEST.map"
		done
		kill "$GUEST"
		GUEST=
	done
}

@test "a second --jitdump while one writes it: a clear error, and no file written" {
	d=$BATS_TEST_TMPDIR
	start_guest "$(qemu_bin 10.2.2 x86_64)" "$d" hot 100000000
	"$QEMU_JITBPF" -p "$GUEST" --jitdump -d 4 2>"$d/a.err" &
	a=$!
	wait_for_file "$d/jit-$GUEST.dump"
	touch "$d/before"
	run "$QEMU_JITBPF" -p "$GUEST" --jitdump --perfmap -d 1
	assert_failure
	assert_line "qemu-jitbpf: jitdump $d/jit-$GUEST.dump is being written by another qemu-jitbpf; a QEMU process has one jitdump"
	assert_line --regexp '; no files written: no complete handshake$'
	# (One older than the run is another process's that had its pid.)
	[ -z "$(find /tmp -maxdepth 1 -name "perf-$GUEST.map" -newer "$d/before")" ] ||
		fail "a perf map was written"
	wait "$a" || fail "the first tool failed: $(cat "$d/a.err")"
	# The first tool's jitdump is whole: perf's header, then records.
	[ "$(head -c 4 "$d/jit-$GUEST.dump" | od -An -tx4 | tr -d ' ')" = 4a695444 ]
	grep -qa hot_main "$d/jit-$GUEST.dump"
}

@test "--uftrace one tool after another: the second records as much as the first (QEMU does not wait for what it never saw)" {
	local d=$BATS_TEST_TMPDIR i n counts=()
	start_guest "$(qemu_bin 10.2.2 x86_64)" "$d" hot -u "$d/stop"
	# The first leaves QEMU's JitCallSync.read behind what QEMU hands
	# over until its code is translated again without the calls.
	for i in 1 2; do
		run "$QEMU_JITBPF" -v -p "$GUEST" --uftrace="$d/u$i" -d 1
		assert_success
		assert_line --partial ", 0 events lost"
		n=$(uftrace report -d "$d/u$i" -s call 2>/dev/null | awk '$6 == "hot_main" { print $5 }')
		echo "# tool $i: hot_main ${n:-0} times, $(grep -o 'QEMU waited [0-9]* times' <<<"$output")" >&3
		counts+=("${n:-0}")
	done
	touch "$d/stop"
	wait "$GUEST"
	GUEST=
	[ "${counts[0]}" -gt 100 ] || fail "the first tool recorded hot_main ${counts[0]} times"
	# Waiting its second, QEMU would have run the guest for neither.
	[ $((counts[1] * 2)) -gt "${counts[0]}" ] ||
		fail "the second tool recorded hot_main ${counts[1]} times, the first ${counts[0]}"
}

# One churn run: for SECONDS, tools with random outputs and durations come
# and go on one guest, up to three at a time, one in four killed.
churn() { # VERSION SECONDS
	local v=$1 secs=$2 d=$BATS_TEST_TMPDIR/churn-$1 n=0 end pids=() ok=0
	mkdir -p "$d"
	start_guest "$(qemu_bin "$v" x86_64)" "$d" hot -u "$d/stop"
	end=$((SECONDS + secs))
	while [ "$SECONDS" -lt "$end" ]; do
		while [ "$(running "${pids[@]}")" -ge 3 ]; do sleep 0.05; done
		n=$((n + 1))
		local args=() r=$((RANDOM % 7 + 1)) dur=$((RANDOM % 25 + 5))
		[ $((r & 1)) = 0 ] || args+=(--perfmap)
		[ $((r & 2)) = 0 ] || args+=(--jitdump)
		[ $((r & 4)) = 0 ] || args+=(--uftrace="$d/u$n")
		echo "${args[*]}" >"$d/t$n.args"
		(
			"$QEMU_JITBPF" -p "$GUEST" "${args[@]}" -d "$((dur / 10)).$((dur % 10))" \
				>"$d/t$n.out" 2>"$d/t$n.err" &
			t=$!
			if [ $((RANDOM % 4)) = 0 ]; then
				sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
				! kill -KILL "$t" 2>/dev/null || echo killed >"$d/t$n.status"
			fi
			st=0
			wait "$t" || st=$?
			[ -e "$d/t$n.status" ] || echo "$st" >"$d/t$n.status"
		) 2>/dev/null &
		pids+=($!)
		sleep "0.$((RANDOM % 4))"
	done
	for p in "${pids[@]}"; do
		wait "$p" || true
	done
	echo "# $v: $n tools" >&3
	# The QEMU has one jitdump: each --jitdump tool starts it anew, so it
	# is the last one's, killed or not.
	local last_jd=0
	for ((i = 1; i <= n; i++)); do
		case $(cat "$d/t$i.args") in *--jitdump*) last_jd=$i ;; esac
	done
	for ((i = 1; i <= n; i++)); do
		st=$(cat "$d/t$i.status")
		if [ "$st" != 0 ]; then
			# Killed, or refused because another tool writes the jitdump:
			# as they should; anything else is not.
			echo "#   tool $i ($(cat "$d/t$i.args")): $st $(head -n 1 "$d/t$i.err")" >&3
			[ "$st" = killed ] || grep -q 'is being written by another qemu-jitbpf' "$d/t$i.err" ||
				fail "$v: tool $i failed: $(cat "$d/t$i.err")"
			continue
		fi
		ok=$((ok + 1))
		args=$(cat "$d/t$i.args")
		case $args in *--uftrace*)
			uftrace report -d "$d/u$i" 2>/dev/null | grep -q ' hot_main$' ||
				fail "$v: tool $i ($args) exited 0, its uftrace data name no hot_main" ;;
		esac
		case $args in *--perfmap*)
			map=$(perfmap_of "$(cat "$d/t$i.err")")
			grep -q ' hot_main$' "$map" || fail "$v: tool $i ($args): perf map without hot_main" ;;
		esac
		if [ "$i" = "$last_jd" ]; then
			grep -qa hot_main "$d/jit-$GUEST.dump" || fail "$v: tool $i ($args): jitdump without hot_main"
		fi
	done
	echo "# $v: $ok of $n tools exited 0" >&3
	# How many overlap a --jitdump one depends on the host's speed.
	[ "$ok" -ge $((n / 5)) ] || fail "$v: only $ok of $n tools exited 0"
	# Nothing left enabled, no link of ours, no process of ours.
	wait_no_tool
	[ "$(our_programs)" = 0 ] || fail "$v: BPF programs of ours still loaded: $(bpftool prog show)"
	run semaphores "$GUEST"
	assert_success
	[ -z "$output" ] || fail "$v: semaphores still raised: $output"
	# The guest ran on, unharmed: its output is what a native run gives.
	touch "$d/stop"
	wait "$GUEST"
	rm -f "/tmp/perf-$GUEST.map"
	GUEST=
	rounds=$(awk '{ print $2 }' "$d/guest.out")
	[ "$(cat "$d/guest.out")" = "$("$(guest x86_64 hot)" "$rounds")" ] ||
		fail "$v: guest printed $(cat "$d/guest.out")"
}

# How many of PIDS still run.
running() {
	local p n=0
	for p in "$@"; do
		! kill -0 "$p" 2>/dev/null || n=$((n + 1))
	done
	echo "$n"
}

@test "churn for 20 s: tools come, go and die; named files; nothing left enabled (10.2.2)" {
	churn 10.2.2 20
}

@test "churn for 15 s: tools come, go and die; named files; nothing left enabled (7.2)" {
	churn 7.2 15
}
