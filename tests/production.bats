#!/usr/bin/env bats
# A production host for weeks (-a as a service): files of exited processes
# and rotated profiles removed past their limits, the configuration file
# and its reload, the systemd unit.

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
	touch "$D/stop" 2>/dev/null || true
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	stop_bg
}

# The sum of a folded profile's counts.
folded_total() { # FILE
	awk '{ n += $NF } END { print n + 0 }' "$1"
}

@test "--keep-exited: 200 QEMUs come and go; their maps go on time, a living pid's map stays" {
	local i g q pid now t n=0 gone=0 sleeper child hx ha began left
	local -A ended
	# The child's program, no QEMU: it runs until the test (or teardown)
	# says stop.
	sleeper=$D/sleeper.sh
	printf '#!/bin/sh\nwhile [ ! -e "%s" ]; do sleep 0.1; done\n' "$D/stop" >"$sleeper"
	chmod +x "$sleeper"
	hx=$(guest x86_64 hot) ha=$(guest aarch64 hot)
	start_all --perfmap --profile="$D/p.folded" --keep-exited=2s
	# A QEMU whose forked child execs a program that is no QEMU: the
	# child's pid lives on with its map (written at the exec).
	"$QX" "$(guest x86_64 forktree)" -n 3 -e "$sleeper" >/dev/null 2>&1 &
	PIDS+=($!)
	for t in $(seq 50); do
		child=$(pgrep -P "${PIDS[0]}" | head -n 1)
		[ -n "$child" ] && [ -s "/tmp/perf-$child.map" ] && break
		sleep 0.1
	done
	[ -s "/tmp/perf-$child.map" ] || fail "no map of the child $child at its exec"
	t=$SECONDS
	for i in $(seq 200); do
		q=$QX g=$hx
		[ $((i % 2)) = 0 ] || q=$QA g=$ha
		began=${EPOCHREALTIME/./}
		"$q" "$g" 300 >/dev/null &
		pid=$!
		wait $pid
		ended[$pid]=${EPOCHREALTIME/./}
		# At least 45 ms a QEMU (their time under the tool here varies
		# from 25 to 75 ms): the checks below need the run to last.
		left=$((45000 - (ended[$pid] - began)))
		[ "$left" -le 0 ] || sleep "0.$(printf '%06d' "$left")"
		# Every 20: the maps of the processes that ended over 4 s ago
		# (2 s kept, a check a second, and slack) are gone.
		if [ $((i % 20)) = 0 ]; then
			now=${EPOCHREALTIME/./}
			for p in "${!ended[@]}"; do
				[ $((now - ended[$p])) -gt 4000000 ] || continue
				[ -e "/tmp/perf-$p.map" ] && fail "pid $p's map is there $(((now - ended[$p]) / 1000)) ms after its end"
				n=$((n + 1))
			done
		fi
	done
	echo "# $n checks of maps past their time" >&3
	# (Few checks: the loop was short; say whether the tool saw them.)
	[ "$n" -gt 100 ] || fail "only $n checks: the 200 QEMUs took $((SECONDS - t)) s; the tool \
$(kill -0 "$BG_PID" 2>/dev/null && echo runs || echo "is gone"), wrote $(grep -c '(exit): wrote' "$D/bg.err") maps: \
$(grep -v 'pid [0-9]*: ' "$D/bg.err" | tail -n 5)"
	# The last ones are still kept (once the tool has written the map: an
	# older process of that pid may have left one).
	wait_bg_err "pid $pid (exit): wrote /tmp/perf-$pid.map" 5
	grep -q ' hot_main$' "/tmp/perf-$pid.map" || fail "the last QEMU's map is not kept"
	kill -0 "$child" || fail "the child $child ended too early"
	[ -s "/tmp/perf-$child.map" ] || fail "the living child's map was removed"
	sleep 4
	for p in "${!ended[@]}"; do
		[ -e "/tmp/perf-$p.map" ] || gone=$((gone + 1))
	done
	[ "$gone" = 200 ] || fail "$gone of 200 maps removed"
	kill -0 "$child" || fail "the child $child ended too early"
	[ -s "/tmp/perf-$child.map" ] || fail "the living child's map was removed"
	touch "$D/stop"
	wait "${PIDS[0]}"
	sleep 3.5
	[ -e "/tmp/perf-$child.map" ] && fail "the child's map stayed after its end"
	[ -e "/tmp/perf-${PIDS[0]}.map" ] && fail "the parent's map stayed after its end"
	stop_all
	assert_regex "$(cat "$D/bg.err")" ' 20[2-9] files of exited processes removed, those of 0 kept'
	# Every sample is in the profile.
	n=$(sed -nE 's/^qemu-jitbpf: ([0-9]+) samples at 99 Hz, 0 samples lost$/\1/p' "$D/bg.err")
	[ -n "$n" ] && [ "$n" -gt 0 ] && [ "$(folded_total "$D/p.folded")" = "$n" ] ||
		fail "the profile holds $(folded_total "$D/p.folded") samples, the run $n"
}

@test "--keep-exited: a pid reused by a new QEMU gets a fresh map" {
	local hx tx old new t
	hx=$(guest x86_64 hot) tx=$(guest x86_64 tree)
	start_all --perfmap --keep-exited=1h
	"$QX" "$hx" 300 >/dev/null &
	old=$!
	wait $old
	# (Written by the tool: an older process of that pid may have left one.)
	wait_bg_err "pid $old (exit): wrote /tmp/perf-$old.map" 5
	grep -q ' hot_main$' "/tmp/perf-$old.map" || fail "no hot_main in the first map"
	# The next process gets pid OLD (the kernel hands out ns_last_pid + 1).
	for t in 1 2 3 4 5; do
		echo $((old - 1)) >/proc/sys/kernel/ns_last_pid
		"$QX" "$tx" -u "$D/stop" >/dev/null 2>&1 &
		new=$!
		PIDS+=($new)
		[ "$new" = "$old" ] && break
		touch "$D/stop"
		wait "$new" || true
		rm -f "$D/stop" "/tmp/perf-$new.map"
	done
	[ "$new" = "$old" ] || skip "pid $old was not handed out again"
	# Its predecessor's map is gone once the new QEMU is seen...
	for t in $(seq 50); do
		[ -e "/tmp/perf-$old.map" ] || break
		sleep 0.1
	done
	[ -e "/tmp/perf-$old.map" ] && fail "the old map of pid $old stayed while a new QEMU runs"
	sleep 1
	touch "$D/stop"
	wait "$new"
	# ... and its own comes at its end.
	wait_for_file "/tmp/perf-$new.map" 5
	grep -q ' leaf_work$' "/tmp/perf-$new.map" || fail "the new map is not the new QEMU's"
	grep -q ' hot_main$' "/tmp/perf-$new.map" && fail "the new map names the old QEMU's code"
	stop_all
	rm -f "/tmp/perf-$new.map"
}

@test "--keep-exited: jitdumps and -a's uftrace data of exited processes go too; -p keeps them" {
	local hx pid
	hx=$(guest x86_64 hot)
	start_all --jitdump --uftrace="$D/u" --keep-exited=1s
	cd "$D"
	"$QX" "$hx" 300 >/dev/null &
	pid=$!
	wait $pid
	wait_for_file "$D/u/$pid/info" 5
	[ -s "$D/jit-$pid.dump" ] || fail "no jitdump: $(ls "$D")"
	sleep 3
	[ -e "$D/jit-$pid.dump" ] && fail "the jitdump stayed"
	[ -e "$D/u/$pid" ] && fail "the uftrace data stayed: $(ls "$D/u/$pid")"
	[ -d "$D/u" ] || fail "the uftrace directory itself went"
	stop_all
	# Without -a nothing is removed unless asked.
	run "$QEMU_JITBPF" --perfmap -- "$QX" "$hx" 300
	assert_success
	pid=$(sed -nE 's|^qemu-jitbpf: perf map: /tmp/perf-([0-9]+)\.map$|\1|p' <<<"$output")
	sleep 1.5
	[ -s "/tmp/perf-$pid.map" ] || fail "a launched QEMU's map was removed"
	rm -f "/tmp/perf-$pid.map"
}

@test "--keep-profiles: at most COUNT interval files per profile, older runs' included" {
	local files
	# Three files of an earlier run, and one of someone else's name.
	for s in 20200101T000000Z 20200101T000100Z 20200101T000200Z; do
		echo old >"$D/p.$s.folded"
	done
	echo mine >"$D/p.notastamp.folded"
	"$QX" "$(guest x86_64 hot)" -u "$D/stop" >/dev/null 2>&1 &
	PIDS+=($!)
	run "$QEMU_JITBPF" -a --qemu "$QX" --profile="$D/p.folded" --interval=1 \
		--keep-profiles=2 -d 4.5
	assert_success
	files=$(cd "$D" && ls p.*.folded)
	echo "# $files" >&3
	[ "$(grep -c '^p\.[0-9]\{8\}T[0-9]\{6\}Z\.folded$' <<<"$files")" = 2 ] || fail "$files"
	grep -q '^p\.2020' <<<"$files" && fail "an old run's file stayed: $files"
	[ -s "$D/p.notastamp.folded" ] || fail "a file not ours was removed"
	# By age: a 2020 file is older than a day.
	echo old >"$D/q.20200101T000000Z.folded"
	run "$QEMU_JITBPF" -a --qemu "$QX" --profile="$D/q.folded" --interval=1 \
		--keep-profiles=1d -d 2.5
	assert_success
	[ -e "$D/q.20200101T000000Z.folded" ] && fail "a file older than a day stayed"
	[ "$(cd "$D" && ls q.*.folded | wc -l)" -ge 2 ] || fail "$(ls "$D")"
}

@test "bounded memory: 90 distinct programs come and go, the ELF cache keeps 64 idle, the coverage 16; a program rewritten at its inode is named anew" {
	local i pid line nread freed kept
	mkdir "$D/progs"
	for i in $(seq 90); do
		printf 'int prog%d_fn(int x) { return x * %d; }\nint main(void) { return prog%d_fn(1) == 0; }\n' \
			"$i" "$i" "$i" >"$D/progs/p$i.c"
	done
	(cd "$D/progs" && ls -- *.c | xargs -P "$(nproc)" -I{} sh -c 'gcc -O0 -g -o "${1%.c}" "$1"' sh {})
	start_all --perfmap --profile="$D/p.pb.gz" -F 999 --coverage="$D/cov.info"
	for i in $(seq 90); do
		"$QX" "$D/progs/p$i" || fail "p$i failed"
	done
	# configure's conftest: the same name, and the same inode, for another
	# program (cat keeps the inode; the size or time tells them apart).
	cp "$D/progs/p1" "$D/conftest"
	"$QX" "$D/conftest" &
	pid=$!
	wait $pid
	# (Once the tool has written it: an older process of the pid may have
	# left a map.)
	wait_bg_err "pid $pid (exit): wrote /tmp/perf-$pid.map" 5
	grep -q ' prog1_fn$' "/tmp/perf-$pid.map" || fail "$(cat "/tmp/perf-$pid.map")"
	cat "$D/progs/p2" >"$D/conftest"
	"$QX" "$D/conftest" &
	pid=$!
	wait $pid
	wait_bg_err "pid $pid (exit): wrote /tmp/perf-$pid.map" 5
	grep -q ' prog2_fn$' "/tmp/perf-$pid.map" || fail "named with the old file's symbols: $(cat "/tmp/perf-$pid.map")"
	! grep -q ' prog1_fn$' "/tmp/perf-$pid.map" || fail "named with the old file's symbols"
	stop_all
	# -a keeps the last maps: remove this test's, so that no later
	# process of a reused pid finds one.
	grep -o '/tmp/perf-[0-9]*\.map' "$D/bg.err" | sort -u | xargs -r rm -f
	# "ELF files: N read, M freed, K in memory (I idle)"
	line=$(grep -o 'ELF files: .*' "$D/bg.err") || fail "no ELF cache line: $(cat "$D/bg.err")"
	read -r nread freed kept < <(sed -E 's/ELF files: ([0-9]+) read, ([0-9]+) freed, ([0-9]+) in memory.*/\1 \2 \3/' <<<"$line")
	[ "$nread" -ge 91 ] || fail "$line"
	# 64 idle in the cache, 16 the coverage holds (COV_IDLE_FILES).
	[ "$kept" -le 80 ] || fail "more than 80 files kept with no process left: $line"
	[ "$freed" -eq $((nread - kept)) ] || fail "$line"
	# The coverage folded the programs that ran longest ago, and lost none.
	line=$(grep -o 'coverage: [0-9]* files folded.*' "$D/bg.err") || fail "nothing folded: $(cat "$D/bg.err")"
	[ "$(cut -d' ' -f2 <<<"$line")" -ge 70 ] || fail "$line"
	for i in $(seq 90); do
		grep -qx "FNDA:1,prog${i}_fn" "$D/cov.info" || fail "prog${i}_fn is not covered"
	done
	[ "$(grep -c "^SF:$D/progs/p[0-9]*\.c$" "$D/cov.info")" -eq 90 ] || fail "$(grep -c ^SF: "$D/cov.info") sources"
	# Written after the files of its processes were freed.
	go tool pprof -top -symbolize=none "$D/p.pb.gz" >"$D/top" 2>&1 || fail "$(cat "$D/top")"
	grep -qE '^ +[0-9]' "$D/top" || fail "no samples: $(cat "$D/top")"
}

@test "--keep-exited, --keep-profiles, --config: bad input gets a one-line error" {
	run timeout 20 "$QEMU_JITBPF" -a --keep-exited=10x
	assert_failure
	assert_output --partial "invalid limit '10x'"
	run timeout 20 "$QEMU_JITBPF" -a --keep-exited=0
	assert_failure
	assert_output --partial "invalid limit '0'"
	run timeout 20 "$QEMU_JITBPF" -a --profile=p.folded --keep-profiles=3
	assert_failure
	assert_output --partial '--keep-profiles goes with --interval'
	run timeout 20 "$QEMU_JITBPF" -a --profile=p.folded --interval=3600 --keep-profiles=30m
	assert_failure
	assert_output --partial 'an age under the --interval'
	run timeout 20 "$QEMU_JITBPF" --config="$D/none"
	assert_failure
	assert_output --partial "cannot read the configuration $D/none"
	printf 'all\n--perfmap\n' >"$D/bad.conf"
	run timeout 20 "$QEMU_JITBPF" --config="$D/bad.conf"
	assert_failure
	assert_output --partial "$D/bad.conf:2: '--perfmap' is not 'option' or 'option = value'"
	printf 'all\nno-such-option\n' >"$D/bad.conf"
	run timeout 20 "$QEMU_JITBPF" --config="$D/bad.conf"
	assert_failure
	assert_output --partial "unrecognized option '--no-such-option'"
	assert_output --partial "$D/bad.conf:2:"
	printf 'all\nconfig = %s\n' "$D/bad.conf" >"$D/bad.conf"
	run timeout 20 "$QEMU_JITBPF" --config="$D/bad.conf"
	assert_failure 2
	assert_output --partial "$D/bad.conf:2: unrecognized option '--config'"
}

@test "--config: the service's options from a file; SIGHUP re-reads it, SIGTERM completes and exits 0" {
	local pid
	cat >"$D/q.conf" <<-EOF
		# as the service has it
		all
		qemu = $QX
		perfmap
		keep-exited = 1h
	EOF
	start_bg "$QEMU_JITBPF" -v --config="$D/q.conf"
	wait_bg_err 'attached to .* binaries' 10
	"$QX" "$(guest x86_64 hot)" 300 >/dev/null &
	pid=$!
	wait $pid
	wait_for_file "/tmp/perf-$pid.map" 5
	rm -f "/tmp/perf-$pid.map"
	# A profile from now on.
	echo "profile = $D/p.folded" >>"$D/q.conf"
	kill -HUP "$BG_PID"
	wait_bg_err 'SIGHUP: files complete; starting again' 10
	for t in $(seq 100); do
		[ "$(grep -c 'attached to .* binaries' "$D/bg.err")" = 2 ] && break
		sleep 0.1
	done
	[ "$(grep -c 'attached to .* binaries' "$D/bg.err")" = 2 ] || fail "$(cat "$D/bg.err")"
	rm -f "$D/stop"
	"$QX" "$(guest x86_64 hot)" -u "$D/stop" >/dev/null &
	pid=$!
	sleep 1.5
	touch "$D/stop"
	wait $pid
	wait_for_file "/tmp/perf-$pid.map" 5
	rm -f "/tmp/perf-$pid.map"
	kill -TERM "$BG_PID"
	wait_bg 30
	[ "$BG_STATUS" = 0 ] || fail "SIGTERM: exit $BG_STATUS: $(cat "$D/bg.err")"
	grep -qE 'hot_main [0-9]+$' "$D/p.folded" || fail "no profile after the reload: $(cat "$D/bg.err")"
}
