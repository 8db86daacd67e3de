#!/usr/bin/env bats
# -p and a launched QEMU follow the process tree: every process the QEMU
# forks, and what those exec, gets its perf map, its COMM-PID root in the
# profile and its tasks in the one uftrace data directory, as uftrace
# record gives a forking program.  QEMU 10.2.2; the aarch64 children exec
# through binfmt_misc, as on a container build host.

load helpers

V=10.2.2

setup_file() {
	# The oracle: the same sources built natively with -pg.
	cd "$BATS_FILE_TMPDIR"
	uftrace record -d native "$BUILD/guests/native/forktree-pg" -n 2 \
		-e "$BUILD/guests/native/exectree-pg" >/dev/null
}

setup() {
	require_qemu "$V" x86_64
	require_qemu "$V" aarch64
	D=$BATS_TEST_TMPDIR
	QX=$(qemu_bin "$V" x86_64)
	QA=$(qemu_bin "$V" aarch64)
	BB=$(guest aarch64 busybox)
	PIDS=()
	cd "$D"
}

teardown() {
	binfmt_unregister
	touch "$D/stop" 2>/dev/null || true
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	stop_bg
}

qemu_for() { # ARCH
	[ "$1" = x86_64 ] && echo "$QX" || echo "$QA"
}

# The subtrees of FUNC in uftrace data, for task TID: the program's own
# functions only (libc's differ between a static guest and the native
# build, and so do the lines uftrace adds for calls left open).
subtree() { # DIR TID FUNC
	uftrace replay -d "$1" --tid "$2" -F "$3" 2>/dev/null | grep -F '|' |
		sed -E 's/^[^|]*\| //' | grep -E '\b[pce]_(tree|a|b|leaf)\b'
}

# The tids of uftrace data's tasks, by uftrace info.
tasks() { # DIR
	uftrace info -d "$1" 2>/dev/null | sed -nE 's/^# task list +: //p' | tr ',' '\n' |
		sed -E 's/^ *([0-9]+)\(.*/\1/'
}

# The pids of the processes the tool wrote a perf map for at their exit (-v).
exited_with_map() { # STDERR-FILE
	sed -nE 's/^qemu-jitbpf: pid ([0-9]+) \(exit\): wrote .*/\1/p' "$1" | sort -u
}

# The most frequent leaf of root COMM-PID in a folded profile.
profile_leaf() { # FOLDED PID
	awk -v pid="$2" '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";")
		if (f[1] ~ "-" pid "$") c[f[k]] += n }
		END { for (l in c) print c[l], l }' "$1" | sort -rn | awk 'NR == 1 { print $2 }'
}

# Read the summary's process line: PROCS FORKED MAPS NAMELESS.
process_counts() { # STDERR-FILE
	sed -nE 's/^qemu-jitbpf: ([0-9]+) QEMU processes \(([0-9]+) forked\), ([0-9]+) perf maps, .* ([0-9]+) without a handshake$/\1 \2 \3 \4/p' "$1"
}

check_uftrace_tree() { # ARCH EXEC?
	local a=$1 exec=${2:-} parent child nparent nchild t
	parent=$(sed -nE 's/^SESS .* pid=([0-9]+) .*/\1/p' "$D/u/task.txt" | head -n 1)
	child=$(sed -nE 's/^FORK .* pid=([0-9]+) ppid=.*/\1/p' "$D/u/task.txt")
	echo "# $a: parent $parent, child $child; task.txt:" >&3
	sed 's/^/#   /' "$D/u/task.txt" >&3
	[ -n "$parent" ] && [ "$(wc -w <<<"$child")" = 1 ] || fail "no fork in $(cat "$D/u/task.txt")"
	nparent=$(sed -nE 's/^SESS .* pid=([0-9]+) .*/\1/p' "$BATS_FILE_TMPDIR/native/task.txt" | head -n 1)
	nchild=$(sed -nE 's/^FORK .* pid=([0-9]+) ppid=.*/\1/p' "$BATS_FILE_TMPDIR/native/task.txt")
	# Each task's calls, nested as native uftrace record has them.
	for t in "p_tree $parent $nparent" "c_tree $child $nchild"; do
		set -- $t
		run subtree "$D/u" "$2" "$1"
		[ "${#lines[@]}" -ge 8 ] || fail "$a: task $2 has no $1: $output"
		assert_output "$(subtree "$BATS_FILE_TMPDIR/native" "$3" "$1")"
	done
	if [ -n "$exec" ]; then
		# The program the child execs: a new session of the same data.
		[ "$(grep -c "^SESS .* pid=$child " "$D/u/task.txt")" = 1 ] || fail "no session for the exec"
		run subtree "$D/u" "$child" e_tree
		[ "${#lines[@]}" -ge 8 ] || fail "$a: no e_tree after the exec: $output"
		assert_output "$(subtree "$BATS_FILE_TMPDIR/native" "$nchild" e_tree)"
	fi
	# uftrace info and report --task list both tasks.
	run tasks "$D/u"
	assert_line "$parent"
	assert_line "$child"
	run uftrace report -d "$D/u" --task
	assert_success
	assert_line --regexp " $parent +[0-9]+ +forktree"
	assert_line --regexp " $child +[0-9]+ +(forktree|exectree)"
}

@test "launched forking guests: each task's calls as native uftrace record has them (x86_64; aarch64 with an exec)" {
	local a exec
	binfmt_register "$QA"
	for a in x86_64 aarch64; do
		exec=
		[ $a = x86_64 ] || exec=1
		rm -rf "$D/u"
		run "$QEMU_JITBPF" --uftrace="$D/u" -- "$(qemu_for $a)" "$(guest $a forktree)" -n 2 \
			${exec:+-e "$(guest $a exectree)"}
		echo "$output" | sed "s/^/# $a: /" >&3
		assert_success
		# The program the child execs counts as one more.
		assert_line --regexp "^qemu-jitbpf: $((${exec:-0} + 2)) QEMU processes \(1 forked\), 0 perf maps, 0 jitdumps, 1 uftrace, 0 without a handshake$"
		assert_line --regexp '^qemu-jitbpf: .* 0 events lost$'
		assert_line --regexp '^child [0-9a-f]+$'
		[ -z "$exec" ] || assert_line --regexp '^exec [0-9a-f]+$'
		check_uftrace_tree $a $exec
	done
}

@test "launched forking guests: parent and child each their perf map, jitdump and profile root" {
	local a parent child
	for a in x86_64 aarch64; do
		rm -f "$D"/jit-*.dump
		start_bg "$QEMU_JITBPF" -v --perfmap --jitdump -o "$D" --profile="$D/p.$a.folded" -- \
			"$(qemu_for $a)" "$(guest $a forktree)" -n 8000000
		wait_bg_err 'probes attached' 10
		perf record -q -a -e cpu-clock -k 1 -o "$D/perf.$a" -- sleep 2 >/dev/null 2>&1
		wait_bg 120
		[ "$BG_STATUS" = 0 ] || fail "$a: $(cat "$D/bg.err")"
		read -r procs forked maps nameless < <(process_counts "$D/bg.err")
		[ "$procs $forked $maps $nameless" = "2 1 2 0" ] || fail "$a: $(cat "$D/bg.err")"
		parent=$(sed -nE 's/^qemu-jitbpf: perf map: \/tmp\/perf-([0-9]+)\.map$/\1/p' "$D/bg.err")
		child=$(exited_with_map "$D/bg.err" | grep -vx "$parent")
		echo "# $a: parent $parent, child $child" >&3
		grep -q ' p_leaf$' "/tmp/perf-$parent.map" || fail "$a: no p_leaf in the parent's map"
		grep -q ' c_leaf$' "/tmp/perf-$child.map" || fail "$a: no c_leaf in the child's map"
		run profile_leaf "$D/p.$a.folded" "$parent"
		assert_output p_leaf
		run profile_leaf "$D/p.$a.folded" "$child"
		assert_output c_leaf
		# The child's own jitdump, through perf inject.
		[ -s "$D/jit-$child.dump" ] || fail "$a: no jitdump of the child: $(ls "$D")"
		perf_inject "$D/perf.$a" "$D/perf.jit.$a"
		n=$(perf script -i "$D/perf.jit.$a" --pid "$child" -F ip,sym,dso 2>/dev/null |
			awk '$NF ~ /jitted-[0-9]+-[0-9]+\.so\)$/ { print $2 }' | sort | uniq -c |
			sort -rn | awk 'NR == 1 { print $2 }')
		[ "$n" = c_leaf ] || fail "$a: the child's hottest in its jitdump: $n"
		rm -f "/tmp/perf-$parent.map" "/tmp/perf-$child.map"
	done
}

@test "-p attached before the fork: the child gets a perf map naming its functions; nothing stays raised" {
	local a pid child s
	for a in x86_64 aarch64; do
		rm -f "$D/go"
		"$(qemu_for $a)" "$(guest $a forktree)" -w "$D/go" -n 40000000 >"$D/out.$a" &
		pid=$!
		PIDS+=("$pid")
		sleep 0.5
		start_bg "$QEMU_JITBPF" -v -p "$pid" --perfmap -d 4
		wait_bg_err 'handshake after' 10
		touch "$D/go"
		sleep 1.5
		child=$(pgrep -P "$pid" | head -n 1)
		[ -n "$child" ] || fail "$a: no child"
		wait_bg 30
		[ "$BG_STATUS" = 0 ] || fail "$a: $(cat "$D/bg.err")"
		read -r procs forked maps nameless < <(process_counts "$D/bg.err")
		[ "$procs $forked $maps $nameless" = "2 1 2 0" ] || fail "$a: $(cat "$D/bg.err")"
		grep -q ' c_leaf$' "/tmp/perf-$child.map" || fail "$a: no c_leaf in the child's map"
		grep -q ' c_tree$' "/tmp/perf-$child.map" || fail "$a: no c_tree in the child's map"
		# The tool has gone: nothing of it stays enabled in either.
		for p in "$pid" "$child"; do
			s=$(semaphores "$p")
			[ -z "$s" ] || fail "$a: pid $p still has semaphores raised: $s"
		done
		kill "$pid" "$child"
		rm -f "/tmp/perf-$pid.map" "/tmp/perf-$child.map"
	done
}

@test "-p on a QEMU forking hundreds of short children a second: none lost, those forked during the attach not counted as lost, none waiting after" {
	local pid n c1 c2
	"$QX" "$(guest x86_64 forkrain)" "$D/stop" >"$D/out" &
	pid=$!
	PIDS+=("$pid")
	sleep 0.5
	# Several attaches: each one's window, while the probes go in, has
	# children of its own (one fork every few ms), and so, one time in
	# a few, has each one's detach.
	for n in 1 2 3 4 5 6 7 8; do
		run "$QEMU_JITBPF" -v -p "$pid" --perfmap -d 0.4
		# (Hundreds of perf maps: none is left for a later test's pid.)
		sed -nE 's/.*: wrote (\/tmp\/perf-[0-9]+\.map)$/\1/p' <<<"$output" | xargs -r rm -f
		echo "$output" | grep -E 'forked while|warning|QEMU processes' | sed "s/^/# $n: /" >&3
		assert_success
		refute_output --partial 'warning:'
		read -r procs forked maps nameless < <(process_counts <(echo "$output"))
		[ "$nameless" = 0 ] && [ "$forked" -ge 3 ] || fail "$n: $procs processes, $forked forked, $nameless without a handshake"
		# No child forked as we detached waits for us on its own: a
		# child lives a few ms, and the tree goes on at once.
		c1=$(pgrep -P "$pid") || true
		sleep 0.4
		c2=$(pgrep -P "$pid") || true
		[ -z "$c1" ] || [ "$c1" != "$c2" ] || fail "$n: child $c1 of $pid still there 0.4 s after the run"
	done
	touch "$D/stop"
	wait "$pid"
	grep -qE '^[0-9]+ children$' "$D/out" || fail "forkrain: $(cat "$D/out")"
}

# The foreign shell's commands, each a QEMU forked and exec'd through
# binfmt_misc: hot runs long enough to be sampled, busybox true does not.
SCRIPT='for i in 1 2 3; do "$HOT" 20000 >/dev/null; "$BB" true; done'

# Every command of the script run by the tool: a complete perf map, its
# root in the profile, its task in the uftrace data.  UNNAMED: how many
# may have had no handshake (a command forked in the last moments of -d).
check_commands() { # STDERR-FILE EXPECTED-HOT [UNNAMED]
	local hot=0 pid err=$1
	read -r procs forked maps nameless < <(process_counts "$err")
	echo "# $procs QEMU processes, $forked forked, $maps perf maps, $nameless without" >&3
	[ "$nameless" -le "${3:-0}" ] && [ "$maps" = "$((procs - nameless))" ] ||
		fail "$maps maps of $procs processes, $nameless without a handshake"
	[ "$forked" -ge "$(($2 * 2))" ] || fail "$forked forked, not $(($2 * 2))"
	run tasks "$D/u"
	for pid in $(exited_with_map "$err"); do
		grep -vqE '^[0-9a-f]+ [0-9a-f]+ .+$' "/tmp/perf-$pid.map" && fail "pid $pid: bad line"
		if grep -q ' hot_main$' "/tmp/perf-$pid.map"; then
			hot=$((hot + 1))
			# A command of ~140 ms has ~14 samples: some in its start.
			grep -qE "^hot-$pid;.*;hot_main( |;)" "$D/p.folded" ||
				fail "pid $pid: no hot_main under a hot-$pid root in the profile"
			assert_line "$pid"
			[ "$(uftrace report -d "$D/u" --tid "$pid" -s call 2>/dev/null |
				awk '$NF == "hot_main" { print $(NF-1) }')" = 20000 ] ||
				fail "pid $pid: hot_main calls not 20000"
		fi
		rm -f "/tmp/perf-$pid.map"
	done
	echo "# $hot commands ran hot, each named in its map, profile and uftrace task" >&3
	[ "$hot" -ge "$2" ] || fail "$hot hot commands, not $2"
}

@test "a foreign busybox script launched under qemu-aarch64: every command its perf map, root and task" {
	[ -x "$BB" ] || fail "$BB missing (make guests)"
	binfmt_register "$QA"
	export HOT BB
	HOT=$(guest aarch64 hot)
	echo "$SCRIPT" >"$D/script.sh"
	run "$QEMU_JITBPF" -v --perfmap --profile="$D/p.folded" \
		--uftrace="$D/u" -- "$QA" "$BB" sh "$D/script.sh"
	echo "$output" | grep -v ': pid [0-9]*: ' | sed 's/^/# /' >&3
	assert_success
	echo "$output" >"$D/err"
	check_commands "$D/err" 3
}

@test "-p on a foreign busybox shell while it loops: every command after the attach is followed" {
	[ -x "$BB" ] || fail "$BB missing (make guests)"
	binfmt_register "$QA"
	HOT=$(guest aarch64 hot) BB=$BB "$QA" "$BB" sh -c \
		"while [ ! -e '$D/stop' ]; do \"\$HOT\" 20000 >/dev/null; \"\$BB\" true; done" &
	PIDS+=($!)
	sleep 1
	run "$QEMU_JITBPF" -v -p "${PIDS[0]}" --perfmap --profile="$D/p.folded" \
		--uftrace="$D/u" -d 5
	echo "$output" | grep -v ': pid [0-9]*: ' | sed 's/^/# /' >&3
	assert_success
	echo "$output" >"$D/err"
	# -d ends while the loop runs: the command forked just before can be
	# without a handshake, and the summary counts it.
	check_commands "$D/err" 2 1
}

@test "a short QEMU that make runs 50 times: every run has its perf map, report row, uftrace task and coverage, and the tool exits 0" {
	local fib pids pid
	# Each QEMU is exec'd by make's shell, attached after its exec, and
	# ends before its watcher's first poll: its handshake comes at its
	# exit, and what it reported before is read then.
	fib=$(guest aarch64 fib)
	{
		printf 'all:\n'
		for pid in $(seq 50); do printf '\t%s %s 3 >/dev/null\n' "$QA" "$fib"; done
	} >"$D/Makefile"
	run "$QEMU_JITBPF" --perfmap --coverage="$D/cov.info" --report="$D/r.json" \
		--uftrace="$D/u" -- make -s -C "$D"
	assert_success
	refute_output --partial "before its handshake"
	pids=$(python3 -c "import json, sys; print(' '.join(str(p['pid']) for p in json.load(open(sys.argv[1]))['processes'] if p['program'] == 'fib'))" "$D/r.json")
	[ "$(wc -w <<<"$pids")" = 50 ] || fail "$(wc -w <<<"$pids") report rows of fib, not 50"
	for pid in $pids; do
		grep -q ' fib$' "/tmp/perf-$pid.map" || fail "pid $pid: no fib in its perf map"
		rm -f "/tmp/perf-$pid.map"
		# fib(3) calls fib 5 times.
		[ "$(uftrace report -d "$D/u" --tid "$pid" -s call 2>/dev/null |
			awk '$NF == "fib" { print $(NF-1) }')" = 5 ] || fail "pid $pid: fib not called 5 times"
	done
	# Every run in one tracefile, where fib ran.
	grep -qx 'FNDA:[1-9][0-9]*,fib' "$D/cov.info" || fail "fib not run: $(grep FNDA "$D/cov.info")"
}

@test "valgrind: no memory error and no leak following a forking guest, every writer" {
	no_valgrind_under_asan
	run valgrind -q --suppressions="$TOP/tests/valgrind.supp" --error-exitcode=99 \
		--leak-check=full --errors-for-leak-kinds=definite,possible \
		"$QEMU_JITBPF" --perfmap --jitdump -o "$D" --uftrace="$D/u" --profile="$D/p.folded" \
		--coverage="$D/c.info" --coverage="$D/c.xml" --coverage="$D/c.drcov" -- \
		"$QX" "$(guest x86_64 forktree)" -n 2000
	[ "$status" -ne 99 ] || fail "valgrind: $output"
	assert_success
	# (The child lives for milliseconds: under valgrind its marker may be
	# read after it has gone, and cannot be checked then.)
	assert_line --regexp '^qemu-jitbpf: 2 QEMU processes \(1 forked\), 2 perf maps, [12] jitdumps, 1 uftrace, 0 without a handshake$'
	grep -q '^SF:.*/forktree\.c$' "$D/c.info" && grep -q 'filename="forktree.c"' "$D/c.xml" ||
		fail "no coverage of forktree.c"
	drcovs=("$D"/c.*.drcov)
	[ "${#drcovs[@]}" = 2 ] || fail "drcov: ${drcovs[*]}"
	for m in $(sed -nE 's/^SESS .* pid=([0-9]+) .*|^FORK .* pid=([0-9]+) .*/\1\2/p' "$D/u/task.txt"); do
		rm -f "/tmp/perf-$m.map"
	done
}
