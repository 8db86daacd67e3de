#!/usr/bin/env bats
# -a: every QEMU of the host, running before the tool or started after it,
# forked, short-lived; each with its own perf map, one profile.

load helpers

V=10.2.2

setup() {
	require_qemu "$V" x86_64
	require_qemu "$V" aarch64
	D=$BATS_TEST_TMPDIR
	QX=$(qemu_bin "$V" x86_64)
	QA=$(qemu_bin "$V" aarch64)
	PIDS=()
}

teardown() {
	binfmt_unregister
	touch "$D/stop" 2>/dev/null || true
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	stop_bg
}

# Run the forking guest for 3 s, perf recording the host meanwhile; its
# pids in FORK_PARENT and FORK_CHILD.
run_forker() { # QEMU ARCH PERF_DATA
	rm -f "$D/stop"
	"$1" "$(guest "$2" forker)" "$D/stop" >"$D/out.$2" 2>&1 &
	FORK_PARENT=$!
	PIDS+=("$FORK_PARENT")
	sleep 1
	FORK_CHILD=$(pgrep -P "$FORK_PARENT" | head -n 1)
	[ -n "$FORK_CHILD" ] || fail "$2: the guest did not fork"
	perf record -q -a -e cpu-clock -k 1 -o "$3" -- sleep 2 >/dev/null 2>&1
	touch "$D/stop"
	wait "$FORK_PARENT"
	grep -q '^child [0-9]' "$D/out.$2" || fail "$2: $(cat "$D/out.$2")"
}

# The hottest symbol of PID's JIT samples in PERF_DATA.
hottest() { # PERF_DATA PID
	perf script -i "$1" --pid "$2" -F ip,sym,dso 2>/dev/null |
		awk '$NF ~ /perf-[0-9]+\.map\)$/ { print $2 }' | sort | uniq -c | sort -rn |
		awk 'NR == 1 { print $2 }'
}

# The most frequent leaf of root COMM-PID in a folded profile.
profile_leaf() { # FOLDED PID
	awk -v pid="$2" '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";")
		if (f[1] ~ "-" pid "$") c[f[k]] += n }
		END { for (l in c) print c[l], l }' "$1" | sort -rn | awk 'NR == 1 { print $2 }'
}

@test "-a: two QEMUs from before and two started after each get their perf map and root" {
	local g pid
	start_bg_qemu() { "$@" >/dev/null 2>&1 & PIDS+=($!); }
	start_bg_qemu "$QX" "$(guest x86_64 hot)" -u "$D/stop"
	start_bg_qemu "$QA" "$(guest aarch64 hot)" -u "$D/stop"
	sleep 1
	start_all --perfmap --profile="$D/p.folded"
	start_bg_qemu "$QX" "$(guest x86_64 tree)" -u "$D/stop"
	start_bg_qemu "$QA" "$(guest aarch64 tree)" -u "$D/stop"
	sleep 1
	perf record -q -a -e cpu-clock -k 1 -o "$D/perf.data" -- sleep 3 >/dev/null 2>&1
	touch "$D/stop"
	for pid in "${PIDS[@]}"; do wait "$pid"; done
	stop_all
	assert_regex "$(cat "$D/bg.err")" '4 QEMU processes \(0 forked\), 4 perf maps, .* 0 without'
	for i in 0 1 2 3; do
		pid=${PIDS[$i]}
		g=hot_main
		[ "$i" -lt 2 ] || g=leaf_work
		[ -s "/tmp/perf-$pid.map" ] || fail "no perf map for pid $pid"
		run hottest "$D/perf.data" "$pid"
		echo "# pid $pid: perf's hottest $output, profile's $(profile_leaf "$D/p.folded" "$pid")" >&3
		assert_output "$g"
		run profile_leaf "$D/p.folded" "$pid"
		assert_output "$g"
		rm -f "/tmp/perf-$pid.map"
	done
}

@test "-a: QEMUs of riscv64, arm, ppc64le and s390x, from before and after, each its perf map and profile" {
	local a q pid arches=(riscv64 arm ppc64le s390x) qs=()
	start_bg_qemu() { "$@" >/dev/null 2>&1 & PIDS+=($!); }
	for a in "${arches[@]}"; do
		require_qemu "$V" "$a"
		qs+=(--qemu "$(qemu_bin "$V" "$a")")
	done
	start_bg_qemu "$(qemu_bin "$V" riscv64)" "$(guest riscv64 hot)" -u "$D/stop"
	start_bg_qemu "$(qemu_bin "$V" arm)" "$(guest arm hot)" -u "$D/stop"
	sleep 1
	start_bg "$QEMU_JITBPF" -a -v "${qs[@]}" --perfmap --profile="$D/p.folded"
	wait_bg_err 'attached to .* binaries' 10
	start_bg_qemu "$(qemu_bin "$V" ppc64le)" "$(guest ppc64le hot)" -u "$D/stop"
	start_bg_qemu "$(qemu_bin "$V" s390x)" "$(guest s390x hot)" -u "$D/stop"
	sleep 3
	touch "$D/stop"
	for pid in "${PIDS[@]}"; do wait "$pid"; done
	stop_all
	assert_regex "$(cat "$D/bg.err")" '4 QEMU processes \(0 forked\), 4 perf maps, .* 0 without'
	for pid in "${PIDS[@]}"; do
		grep -q ' hot_main$' "/tmp/perf-$pid.map" || fail "hot_main not in pid $pid's perf map"
		run profile_leaf "$D/p.folded" "$pid"
		echo "# pid $pid: the profile's hottest leaf $output" >&3
		assert_output hot_main
		rm -f "/tmp/perf-$pid.map"
	done
}

@test "-a: a forked guest's parent and child each name their own hot function" {
	local arch q parent child
	start_all --perfmap --profile="$D/p.folded"
	for arch in x86_64 aarch64; do
		q=$QX
		[ $arch = x86_64 ] || q=$QA
		run_forker "$q" "$arch" "$D/perf.$arch"
		parent=$FORK_PARENT child=$FORK_CHILD
		eval "P_$arch=$parent C_$arch=$child"
	done
	stop_all
	assert_regex "$(cat "$D/bg.err")" '4 QEMU processes \(2 forked\), 4 perf maps'
	for arch in x86_64 aarch64; do
		eval "parent=\$P_$arch child=\$C_$arch"
		run hottest "$D/perf.$arch" "$parent"
		assert_output parent_work
		run hottest "$D/perf.$arch" "$child"
		assert_output child_work
		run profile_leaf "$D/p.folded" "$parent"
		assert_output parent_work
		run profile_leaf "$D/p.folded" "$child"
		assert_output child_work
		rm -f "/tmp/perf-$parent.map" "/tmp/perf-$child.map"
	done
}

@test "-a --jitdump --uftrace: each process its jitdump (forks too) and uftrace data" {
	local parent child pid n
	start_all --jitdump --uftrace="$D/u"
	# QEMU makes the marker in its current directory.
	cd "$D"
	"$QX" "$(guest x86_64 hot)" 3000 >/dev/null
	"$QA" "$(guest aarch64 hot)" 2000 >/dev/null &
	PIDS+=($!)
	wait $!
	run_forker "$QX" x86_64 "$D/perf.data"
	parent=$FORK_PARENT child=$FORK_CHILD
	stop_all
	assert_regex "$(cat "$D/bg.err")" ' 4 QEMU processes \(1 forked\), 0 perf maps, 4 jitdumps, 4 uftrace, 0 without'
	# The jitdumps, through perf inject: parent and child each hot in
	# their own function (the child made its own marker).
	[ -s "$D/jit-$parent.dump" ] && [ -s "$D/jit-$child.dump" ] || fail "$(ls "$D")"
	perf_inject "$D/perf.data" "$D/perf.jit.data"
	for pid in "$parent:parent_work" "$child:child_work"; do
		n=$(perf script -i "$D/perf.jit.data" --pid "${pid%%:*}" -F ip,sym,dso 2>/dev/null |
			awk '$NF ~ /jitted-[0-9]+-[0-9]+\.so\)$/ { print $2 }' | sort | uniq -c |
			sort -rn | awk 'NR == 1 { print $2 }')
		echo "# pid ${pid%%:*}: hottest in the jitdump $n" >&3
		[ "$n" = "${pid#*:}" ] || fail "pid ${pid%%:*}: hottest $n"
	done
	# uftrace data per process, with exact call counts.
	n=$(for d in "$D"/u/*/; do uftrace report -d "$d" -s call 2>/dev/null |
		awk '$NF == "hot_main" { print $(NF-1) }'; done | sort -n | tr '\n' ' ')
	echo "# hot_main calls per uftrace directory: $n" >&3
	[ "$n" = "2000 3000 " ] || fail "hot_main calls: $n"
	[ -d "$D/u/$parent" ] && [ -d "$D/u/$child" ] || fail "$(ls "$D/u")"
	run uftrace report -d "$D/u/$child" -s call
	assert_line --regexp ' child_work$'
}

@test "-a: none of 40 short QEMU processes started one after another is missed" {
	local pids=() pid arch q
	start_all --perfmap
	for i in $(seq 40); do
		arch=x86_64 q=$QX
		[ $((i % 2)) = 0 ] || arch=aarch64 q=$QA
		"$q" "$(guest $arch hot)" 300 >/dev/null &
		pids+=($!)
		wait $!
	done
	sleep 0.5
	stop_all
	assert_regex "$(cat "$D/bg.err")" '40 QEMU processes \(0 forked\), 40 perf maps, .* 0 without'
	for pid in "${pids[@]}"; do
		[ -s "/tmp/perf-$pid.map" ] || fail "no perf map for pid $pid"
		grep -q ' hot_main$' "/tmp/perf-$pid.map" || fail "pid $pid: no hot_main in its map"
		rm -f "/tmp/perf-$pid.map"
	done
}

@test "-a: bad input gets a one-line error" {
	run timeout 20 "$QEMU_JITBPF" -a -p 1
	assert_failure
	assert_output --partial 'no -p PID'
	run timeout 20 "$QEMU_JITBPF" -a --top --qemu "$QX"
	assert_failure
	assert_output --partial 'use -p with them, not -a'
	run timeout 20 "$QEMU_JITBPF" -a --qemu /bin/true
	assert_failure
	assert_output --partial '/bin/true: not a QEMU with the qemu-jitbpf probes'
	# (Launched, too: the binaries a command may run.)
	run timeout 20 "$QEMU_JITBPF" --qemu /bin/true -- true
	assert_failure
	assert_output --partial '/bin/true: not a QEMU with the qemu-jitbpf probes'
}

@test "-a --interval: three intervals, three pprof files whose counts add up to the run's" {
	local f n sum=0 total files stamps
	start_bg_qemu() { "$@" >/dev/null 2>&1 & PIDS+=($!); }
	start_bg_qemu "$QX" "$(guest x86_64 hot)" -u "$D/stop"
	start_bg_qemu "$QA" "$(guest aarch64 tree)" -u "$D/stop"
	run "$QEMU_JITBPF" -a --qemu "$QX" --profile="$D/p.pb.gz" --interval=2 -d 5.5
	assert_success
	files=$(ls "$D"/p.*.pb.gz)
	echo "# $files" >&3
	[ "$(wc -l <<<"$files")" = 3 ] || fail "not 3 interval files: $files"
	# Named by the interval's start, UTC, 2 s apart.
	stamps=$(sed -E 's/.*p\.([0-9]{8}T[0-9]{6}Z)\.pb\.gz$/\1/' <<<"$files")
	[ "$(wc -l < <(grep -E '^[0-9]{8}T[0-9]{6}Z$' <<<"$stamps"))" = 3 ] || fail "$stamps"
	export HOME=${HOME:-/root} GOCACHE=$D/go
	for f in $files; do
		n=$(go tool pprof -sample_index=samples -top "$f" 2>/dev/null |
			sed -nE 's/.* of ([0-9]+) total.*/\1/p')
		echo "# $f: $n samples" >&3
		[ -n "$n" ] && [ "$n" -gt 50 ] || fail "$f: '$n' samples"
		sum=$((sum + n))
	done
	total=$(sed -nE 's/^qemu-jitbpf: ([0-9]+) samples at 99 Hz, 0 samples lost$/\1/p' <<<"$output")
	[ "$sum" = "$total" ] || fail "intervals hold $sum samples, the run $total"
}

@test "-a with binfmt_misc: a foreign busybox script's dozens of commands each get a valid perf map" {
	local bb pids pid hot=0 ended=0 maps procs forked nameless
	bb=$(guest aarch64 busybox)
	[ -x "$bb" ] || fail "$bb missing (make guests)"
	binfmt_register "$QA"
	start_all --perfmap
	# The aarch64 shell forks and execs each command: every one is a new
	# QEMU (binfmt_misc), a short one.
	"$bb" sh -c "for i in \$($bb seq 20); do $bb true; $(guest aarch64 hot) 300 >/dev/null; done" ||
		fail "the foreign script failed"
	sleep 0.5
	stop_all
	binfmt_unregister
	# The shell, and per command a forked child that execs the command
	# (and whatever else the shell forks): every one named.
	read -r procs forked maps nameless < <(sed -nE 's/^qemu-jitbpf: ([0-9]+) QEMU processes \(([0-9]+) forked\), ([0-9]+) perf maps, .* ([0-9]+) without a handshake.*/\1 \2 \3 \4/p' "$D/bg.err")
	echo "# $procs QEMU processes, $forked forked, $maps perf maps, $nameless without" >&3
	[ "$forked" -ge 40 ] && [ "$procs" -ge 81 ] || fail "$procs processes, $forked forked"
	[ "$maps" = "$procs" ] && [ "$nameless" = 0 ] || fail "$maps maps of $procs processes"
	pids=$(sed -nE 's/^qemu-jitbpf: pid ([0-9]+) \(exit\): wrote .*/\1/p' "$D/bg.err" | sort -u)
	for pid in $pids; do
		[ -s "/tmp/perf-$pid.map" ] || fail "no perf map for pid $pid"
		# Valid: every line ADDR SIZE NAME, in hex, as perf reads them.
		grep -vqE '^[0-9a-f]+ [0-9a-f]+ .+$' "/tmp/perf-$pid.map" && fail "pid $pid: bad line"
		grep -q ' hot_main$' "/tmp/perf-$pid.map" && hot=$((hot + 1))
		ended=$((ended + 1))
		rm -f "/tmp/perf-$pid.map"
	done
	echo "# $ended QEMU processes exited with a map, $hot ran hot" >&3
	[ "$ended" -ge 41 ] || fail "$ended processes exited with a map, not 41"
	[ "$hot" = 20 ] || fail "$hot maps name hot_main, not 20"
}
