#!/usr/bin/env bats
# --push: each interval's profile to Grafana Pyroscope's ingest API. No
# Pyroscope server can be installed here: tests/pyroscope-receiver.py,
# started on 127.0.0.1, checks each request as Pyroscope's ingest handler
# parses it, and keeps what it took.

load helpers

V=10.2.2

setup() {
	require_qemu "$V" x86_64
	D=$BATS_TEST_TMPDIR
	QX=$(qemu_bin "$V" x86_64)
	PIDS=()
	RCV_PID=
	PORT=$((20000 + RANDOM % 20000))
	mkdir -p "$D/rcv"
	export HOME=${HOME:-/root} GOCACHE=$D/go
}

teardown() {
	touch "$D/stop" 2>/dev/null || true
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	stop_receiver
	stop_bg
}

start_receiver() { # [AUTHORIZATION]
	python3 "$TOP/tests/pyroscope-receiver.py" "$PORT" "$D/rcv" "$@" 2>>"$D/rcv.err" &
	RCV_PID=$!
	for _ in $(seq 50); do
		(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return
		sleep 0.1
	done
	fail "the receiver did not start: $(cat "$D/rcv.err")"
}

stop_receiver() {
	[ -n "$RCV_PID" ] || return 0
	kill "$RCV_PID" 2>/dev/null || true
	wait "$RCV_PID" 2>/dev/null || true
	RCV_PID=
}

# A QEMU that runs until $D/stop.
start_guest() {
	rm -f "$D/stop"
	"$QX" "$(guest x86_64 hot)" -u "$D/stop" >/dev/null 2>&1 &
	PIDS+=($!)
}

# The intervals the receiver took, in order: "FROM UNTIL" lines, each once,
# each starting where the one before ended.
check_in_order() {
	local prev="" from until
	[ -s "$D/rcv/log" ] || fail "nothing arrived"
	while read -r from until _; do
		[ -z "$prev" ] || [ "$from" = "$prev" ] || fail "interval from $from after one until $prev: $(cat "$D/rcv/log")"
		[ "$until" -gt "$from" ] || fail "interval $from-$until"
		prev=$until
	done <"$D/rcv/log"
}

# Samples in pprof FILE.
pprof_samples() {
	go tool pprof -sample_index=samples -top "$1" 2>/dev/null | sed -nE 's/.* of ([0-9]+) total.*/\1/p'
}

@test "--push: every interval arrives once, in order, as Pyroscope's ingest parses it, with its labels" {
	local sum=0 n f total
	echo "Bearer s3cret" >"$D/token"
	chmod 600 "$D/token"
	start_receiver "Bearer s3cret"
	start_guest
	run "$QEMU_JITBPF" -a --qemu "$QX" --push="http://127.0.0.1:$PORT/" --push-tenant=team-7 \
		--push-auth="$D/token" --push-spool="$D/spool" --interval=1 -d 4.5
	assert_success
	echo "$output" | grep push | sed 's/^/# /' >&3
	assert_line --regexp "^qemu-jitbpf: push: [4-6] intervals sent to http://127.0.0.1:$PORT, 0 waiting in $D/spool, 0 dropped \(spool full\), 0 refused$"
	[ ! -s "$D/rcv/refused" ] || fail "refused: $(cat "$D/rcv/refused")"
	check_in_order
	# The name's labels and the tenant.
	awk '{ print $3, $4 }' "$D/rcv/log" | sort -u >"$D/names"
	[ "$(cat "$D/names")" = "qemu-jitbpf{host=$(hostname)} team-7" ] || fail "$(cat "$D/names")"
	# Each a pprof go tool pprof reads; the samples add up to the run's.
	for f in "$D"/rcv/*.pb.gz; do
		n=$(pprof_samples "$f")
		[ -n "$n" ] || fail "$f: go tool pprof cannot read it"
		sum=$((sum + n))
	done
	total=$(sed -nE 's/^qemu-jitbpf: ([0-9]+) samples at 99 Hz, 0 samples lost$/\1/p' <<<"$output")
	[ "$sum" = "$total" ] || fail "pushed $sum samples, the run took $total"
	# Labels a fleet filters by.
	go tool pprof -tags "$(ls "$D"/rcv/*.pb.gz | head -n 2 | tail -n 1)" >"$D/tags" 2>&1
	for t in 'arch:' 'x86_64' 'qemu:' 'qemu-x86_64' 'comm:' 'pid:' 'cgroup:'; do
		grep -q "$t" "$D/tags" || fail "no $t label: $(cat "$D/tags")"
	done
}

@test "--push: a server down, then back, then down and back: every interval arrives once, in order" {
	start_guest
	start_bg "$QEMU_JITBPF" -a --qemu "$QX" --push="http://127.0.0.1:$PORT" \
		--push-spool="$D/spool" --interval=1 -d 9.5
	sleep 2.5
	start_receiver
	sleep 2
	stop_receiver
	sleep 2
	start_receiver
	wait_bg 30
	[ "$BG_STATUS" = 0 ] || fail "$(cat "$D/bg.err")"
	sed 's/^/# /' "$D/bg.err" >&3
	grep -q 'push: cannot send to' "$D/bg.err" || fail "the outage was not said"
	grep -q 'takes profiles again' "$D/bg.err" || fail "the return was not said"
	grep -qE 'push: (9|10|11) intervals sent to .*, 0 waiting in .*, 0 dropped' "$D/bg.err" ||
		fail "$(grep push "$D/bg.err")"
	check_in_order
}

@test "--push: a full spool drops the oldest, counted; the next run sends what was kept first" {
	start_guest
	run "$QEMU_JITBPF" -a --qemu "$QX" --push="http://127.0.0.1:$PORT" \
		--push-spool="$D/spool" --push-spool-max=2 --interval=1 -d 4.5
	assert_success
	assert_line --regexp '^qemu-jitbpf: push: 0 intervals sent to .*, 2 waiting in .*, [2-4] dropped \(spool full\), 0 refused$'
	assert_line --partial 'push: the spool holds 2 intervals: dropped'
	ls "$D/spool" >"$D/kept"
	[ "$(wc -l <"$D/kept")" = 2 ] || fail "$(cat "$D/kept")"
	start_receiver
	run "$QEMU_JITBPF" -a --qemu "$QX" --push="http://127.0.0.1:$PORT" \
		--push-spool="$D/spool" --interval=1 -d 1.5
	assert_success
	assert_line --regexp '^qemu-jitbpf: push: [3-4] intervals sent to .*, 0 waiting'
	# The two kept ones came first.
	[ "$(awk 'NR <= 2 { printf "%012d-%012d.pb.gz\n", $1, $2 }' "$D/rcv/log")" = "$(cat "$D/kept")" ] ||
		fail "$(cat "$D/rcv/log")"
}

@test "--push: bad input gets a one-line error" {
	run "$QEMU_JITBPF" -a --push=http://127.0.0.1:1
	assert_failure
	assert_output --partial "give --interval"
	run "$QEMU_JITBPF" -a --push=ftp://host --interval=10 --qemu "$QX"
	assert_failure
	assert_output --partial "not an http:// or https:// URL"
	echo "Bearer x" >"$D/token"
	chmod 644 "$D/token"
	run "$QEMU_JITBPF" -a --push=http://127.0.0.1:1 --interval=10 --push-auth="$D/token" --qemu "$QX"
	assert_failure
	assert_output --partial "only its owner can read (chmod 600)"
	run "$QEMU_JITBPF" -a --push-tenant=x --qemu "$QX"
	assert_failure
	assert_output --partial "go with --push"
	run "$QEMU_JITBPF" -a --push=http://127.0.0.1:1 --interval=10 --push-app='a{b}' --qemu "$QX"
	assert_failure
	assert_output --partial "invalid application name"
}
