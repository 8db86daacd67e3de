#!/usr/bin/env bats
# --push: each interval's profile to a fleet store.  No Pyroscope or Parca
# server can run here: tests/receivers/pyroscope.py and parca.py, started
# on 127.0.0.1, decide as the servers' own code decides (each names the
# upstream files and commit it was ported from), and keep what they took.

load helpers

V=10.2.2

setup() {
	require_qemu "$V" x86_64
	D=$BATS_TEST_TMPDIR
	QX=$(qemu_bin "$V" x86_64)
	PIDS=()
	RCV_PID=
	PORT=$((20000 + RANDOM % 20000))
	URL=http://127.0.0.1:$PORT
	SEND=("python3" "$TOP/tests/receivers/send.py")
	export HOME=${HOME:-/root} GOCACHE=$D/go
}

teardown() {
	touch "$D/stop" 2>/dev/null || true
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	stop_receiver
	stop_bg
}

start_receiver() { # pyroscope|parca [AUTHORIZATION]
	local what=$1
	shift
	rm -rf "$D/rcv"
	mkdir -p "$D/rcv"
	python3 "$TOP/tests/receivers/$what.py" "$PORT" "$D/rcv" "$@" 2>>"$D/rcv.err" &
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

# The profiles the receiver took, in order: each interval's time once
# (its parts share it), never going back.
check_in_order() {
	local prev=0 t n
	[ -s "$D/rcv/log" ] || fail "nothing arrived"
	n=$(awk '{ print $1 }' "$D/rcv/log" | uniq | sort | uniq -d | wc -l)
	[ "$n" = 0 ] || fail "an interval's parts apart: $(cat "$D/rcv/log")"
	while read -r t _; do
		[ "$t" -ge "$prev" ] || fail "time $t after $prev: $(cat "$D/rcv/log")"
		prev=$t
	done <"$D/rcv/log"
}

# Samples in pprof FILE.
pprof_samples() {
	go tool pprof -sample_index=samples -top "$1" 2>/dev/null | sed -nE 's/.* of ([0-9]+) total.*/\1/p'
}

# The run's samples in OUTPUT equal what the receiver took.
check_all_samples() { # OUTPUT
	local sum=0 n f total
	for f in "$D"/rcv/*.pb.gz; do
		n=$(pprof_samples "$f")
		[ -n "$n" ] || fail "$f: go tool pprof cannot read it"
		sum=$((sum + n))
	done
	total=$(sed -nE 's/^qemu-jitbpf: ([0-9]+) samples at 99 Hz, 0 samples lost$/\1/p' <<<"$1")
	[ "$sum" = "$total" ] || fail "pushed $sum samples, the run took $total"
}

@test "--push to Pyroscope's connect API and /ingest, and to Parca: every interval once, in order, its series labelled as a fleet filters, never by process or container" {
	local api tok cg
	echo "Bearer s3cret" >"$D/token"
	chmod 600 "$D/token"
	# As systemd's LoadCredential= passes it: a file in CREDENTIALS_DIRECTORY.
	mkdir -p "$D/creds"
	cp "$D/token" "$D/creds/push-auth"
	chmod 400 "$D/creds/push-auth"
	start_guest
	cg=$(sed -n 's/^0:://p' "/proc/${PIDS[0]}/cgroup")
	for api in pyroscope pyroscope-ingest parca; do
		tok=()
		if [ "$api" = parca ]; then
			start_receiver parca
		else
			start_receiver pyroscope "Bearer s3cret"
			tok=(--push-tenant=team-7 --push-auth="$D/token")
			[ "$api" = pyroscope-ingest ] || tok=(--push-tenant=team-7 --push-auth=push-auth)
		fi
		run env CREDENTIALS_DIRECTORY="$D/creds" "$QEMU_JITBPF" -a --qemu "$QX" --push="$URL/" --push-api=$api "${tok[@]}" \
			--push-spool="$D/spool" --interval=1 -d 3.5
		assert_success
		echo "$output" | grep push | sed "s/^/# $api: /" >&3
		assert_line --regexp "^qemu-jitbpf: push: [3-5] parts sent to $URL, 0 waiting in $D/spool, 0 dropped \(spool full\), 0 too old, 0 refused$"
		[ ! -s "$D/rcv/refused" ] || fail "$api refused: $(cat "$D/rcv/refused")"
		check_in_order
		check_all_samples "$output"
		case $api in
		parca)
			# Parca keeps no sample labels: each part's are its
			# series'.
			awk '{ print $6 }' "$D/rcv/log" | sort -u >"$D/series"
			echo "# $api series: $(cat "$D/series")" >&3
			[ "$(grep -Evc "^__name__=process_cpu,arch=x86_64,comm=[^,]*(,command=[^,]*)?,job=qemu-jitbpf,node=$(hostname),qemu=qemu-x86_64$" "$D/series")" = 0 ] ||
				fail "$api: $(cat "$D/series")"
			;;
		*)
			awk '{ print $5 }' "$D/rcv/log" | sort -u >"$D/tenants"
			[ "$(cat "$D/tenants")" = team-7 ] || fail "$api: tenants $(cat "$D/tenants")"
			# The series Pyroscope makes: the service, the host and
			# the string labels of the samples; no pid, no cgroup.
			awk '{ print $2 }' "$D/rcv/series" | sort -u >"$D/series"
			echo "# $api series: $(cat "$D/series")" >&3
			for t in __name__=process_cpu service_name=qemu-jitbpf "host=$(hostname)" \
				arch=x86_64 qemu=qemu-x86_64 comm= command=; do
				grep -q "$t" "$D/series" || fail "$api: no $t in $(cat "$D/series")"
			done
			! grep -qE 'cgroup=|pid=|tid=' "$D/series" || fail "$api: $(cat "$D/series")"
			;;
		esac
		# In the samples: pid and tid (numbers); the cgroup, the root
		# frame above each process.
		go tool pprof -tags "$(ls "$D"/rcv/*.pb.gz | tail -n 1)" >"$D/tags" 2>&1
		for t in 'arch:' 'qemu:' 'comm:' 'command:' 'pid:'; do
			grep -q "$t" "$D/tags" || fail "$api: no $t label: $(cat "$D/tags")"
		done
		! grep -q 'cgroup:' "$D/tags" || fail "$api: a cgroup label"
		if [ -n "$cg" ]; then
			go tool pprof -traces "$(ls "$D"/rcv/*.pb.gz | tail -n 1)" 2>/dev/null |
				awk -v c="$cg" '{ sub(/^ +/, "") } $0 == c { f = 1 } END { exit !f }' ||
				fail "$api: no root frame $cg"
		fi
		stop_receiver
	done
}

@test "--push: a server down, then back, then down and back: every interval arrives once, in order" {
	start_guest
	start_bg "$QEMU_JITBPF" -a --qemu "$QX" --push="$URL" \
		--push-spool="$D/spool" --interval=1 -d 9.5
	sleep 2.5
	start_receiver pyroscope
	sleep 2
	stop_receiver
	sleep 2
	mv "$D/rcv" "$D/rcv1"
	start_receiver pyroscope
	wait_bg 30
	[ "$BG_STATUS" = 0 ] || fail "$(cat "$D/bg.err")"
	sed 's/^/# /' "$D/bg.err" >&3
	grep -q 'push: cannot send to' "$D/bg.err" || fail "the outage was not said"
	grep -q 'takes profiles again' "$D/bg.err" || fail "the return was not said"
	grep -qE 'push: (9|10|11) parts sent to .*, 0 waiting in .*, 0 dropped' "$D/bg.err" ||
		fail "$(grep push "$D/bg.err")"
	cat "$D/rcv1/log" "$D/rcv/log" >"$D/all"
	mv "$D/all" "$D/rcv/log"
	check_in_order
}

@test "--push: a full spool drops the oldest, counted; the next run sends what was kept first" {
	start_guest
	run "$QEMU_JITBPF" -a --qemu "$QX" --push="$URL" \
		--push-spool="$D/spool" --push-spool-max=2 --interval=1 -d 4.5
	assert_success
	assert_line --regexp '^qemu-jitbpf: push: 0 parts sent to .*, 2 waiting in .*, [2-4] dropped \(spool full\), 0 too old, 0 refused$'
	assert_line --partial 'push: the spool holds 2 parts: dropped'
	ls "$D/spool" >"$D/kept"
	[ "$(wc -l <"$D/kept")" = 2 ] || fail "$(cat "$D/kept")"
	start_receiver pyroscope
	run "$QEMU_JITBPF" -a --qemu "$QX" --push="$URL" \
		--push-spool="$D/spool" --interval=1 -d 1.5
	assert_success
	assert_line --regexp '^qemu-jitbpf: push: [3-4] parts sent to .*, 0 waiting'
	# The two kept ones came first: their times are their names' FROM.
	[ "$(awk 'NR <= 2 { print int($1 / 1e9) }' "$D/rcv/log")" = "$(sed -E 's/^0*([0-9]+)-.*/\1/' "$D/kept")" ] ||
		fail "$(cat "$D/rcv/log") / $(cat "$D/kept")"
}

@test "the stand-ins answer as Pyroscope and Parca answer: the right requests taken, the wrong ones refused with the servers' codes" {
	"${SEND[@]}" profile >"$D/p.pb.gz"
	"${SEND[@]}" profile --age 5400 >"$D/old.pb.gz"
	"${SEND[@]}" profile --samples 16001 >"$D/many.pb.gz"
	"${SEND[@]}" profile --bytes 3000000 >"$D/big.pb.gz"
	start_receiver pyroscope
	run "${SEND[@]}" connect "$URL" "$D/p.pb.gz"
	assert_output "200 "
	run "${SEND[@]}" ingest "$URL" "$D/p.pb.gz"
	assert_output "200 "
	# The request the earlier push sent: format=pprof with a multipart body.
	run "${SEND[@]}" ingest "$URL" "$D/p.pb.gz" --multipart
	assert_output --regexp '^422 \{"code": "unknown", "message": "proto: wrong wireType'
	run "${SEND[@]}" ingest "$URL" "$D/p.pb.gz" --multipart --no-format
	assert_output "200 "
	run "${SEND[@]}" ingest "$URL" "$D/p.pb.gz" --name "my app"
	assert_output --regexp "^400 .*invalid service name: my app: character is not allowed: ' '"
	run "${SEND[@]}" connect "$URL" "$D/p.pb.gz" --no-name
	assert_output --regexp '^400 \{"code": "invalid_argument", .*invalid metric name'
	run "${SEND[@]}" connect "$URL" "$D/old.pb.gz"
	assert_output --regexp '^400 \{"code": "invalid_argument", .*outside of ingestion window'
	run "${SEND[@]}" ingest "$URL" "$D/old.pb.gz"
	assert_output --regexp '^422 .*outside of ingestion window'
	run "${SEND[@]}" connect "$URL" "$D/many.pb.gz"
	assert_output --regexp '^400 .*16001 samples, max 16000'
	run "${SEND[@]}" connect "$URL" "$D/big.pb.gz"
	assert_output --regexp '^429 \{"code": "resource_exhausted", .*push rate limit'
	echo garbage >"$D/bad.pb.gz"
	run "${SEND[@]}" connect "$URL" "$D/bad.pb.gz"
	assert_output --regexp '^500 \{"code": "unknown"'
	stop_receiver
	start_receiver parca
	run "${SEND[@]}" parca "$URL" "$D/p.pb.gz"
	assert_output "200 grpc-status 0 "
	run "${SEND[@]}" parca "$URL" "$D/old.pb.gz"
	assert_output "200 grpc-status 0 "
	run "${SEND[@]}" parca "$URL" "$D/p.pb.gz" --no-name
	assert_output "200 grpc-status 3 missing __name__ label"
	run "${SEND[@]}" parca "$URL" "$D/p.pb.gz" --label =1
	assert_output "200 grpc-status 3 invalid label name: "
	run "${SEND[@]}" parca "$URL" "$D/p.pb.gz" --raw
	assert_output --regexp '^200 grpc-status 2 decompressing profile'
}

# A spooled part, as the tool names them, of a profile AGE seconds old.
spool_old() { # AGE
	local t=$(($(date +%s) - $1))
	mkdir -p "$D/spool"
	"${SEND[@]}" profile --age "$1" >"$D/spool/$(printf '%012d-%012d-000.pb.gz' "$t" $((t + 60)))"
}

@test "--push: what the server calls invalid is dropped with its words, what is older than it takes never sent, a busy server's Retry-After honoured" {
	start_guest
	# 90 minutes old: Pyroscope refuses it (reject-older-than 1h) when
	# the tool is told the server takes 2 h.
	start_receiver pyroscope
	spool_old 5400
	run "$QEMU_JITBPF" -a --qemu "$QX" --push="$URL" --push-spool="$D/spool" \
		--push-max-age=2h --interval=1 -d 1.5
	assert_success
	assert_line --regexp "^qemu-jitbpf: warning: push: $URL refused [0-9-]+\.pb\.gz \(HTTP 400 invalid_argument: profile with labels .* is outside of ingestion window .*\); dropped \(1 so far\)$"
	assert_line --regexp '^qemu-jitbpf: push: [1-3] parts sent to .*, 0 waiting in .*, 0 dropped \(spool full\), 0 too old, 1 refused$'
	# By default it goes before it is sent.
	rm -rf "$D/rcv"/*
	spool_old 5400
	run "$QEMU_JITBPF" -a --qemu "$QX" --push="$URL" --push-spool="$D/spool" --interval=1 -d 1.5
	assert_success
	assert_line --partial "push: dropped 1 intervals' parts older than 3600s, which $URL would refuse"
	assert_line --regexp '^qemu-jitbpf: push: [1-3] parts sent to .*, 0 dropped \(spool full\), 1 too old, 0 refused$'
	[ ! -s "$D/rcv/refused" ] || fail "sent: $(cat "$D/rcv/refused")"
	stop_receiver
	# A gateway that answers 429 with Retry-After: 3 to the first request.
	BUSY=1:3 start_receiver pyroscope
	run "$QEMU_JITBPF" -a --qemu "$QX" --push="$URL" --push-spool="$D/spool" --interval=1 -d 1.5
	assert_success
	assert_line --regexp '^qemu-jitbpf: push: [1-3] parts sent to .*, 0 waiting'
	read -r t1 s1 <<<"$(sed -n 1p "$D/rcv/arrivals")"
	read -r t2 s2 <<<"$(sed -n 2p "$D/rcv/arrivals")"
	[ "$s1" = 429 ] && [ "$s2" = 200 ] || fail "$(cat "$D/rcv/arrivals")"
	awk -v a="$t1" -v b="$t2" 'BEGIN { exit !(b - a >= 2.9) }' ||
		fail "tried again after $t1 -> $t2, not 3 s"
}

@test "--push: an interval of more stacks than the server takes goes in parts, each taken" {
	start_guest
	MAX_SAMPLES=4 start_receiver pyroscope
	run "$QEMU_JITBPF" -a --qemu "$QX" --push="$URL" --push-spool="$D/spool" \
		--push-max-samples=4 --interval=1 -d 2.5
	assert_success
	echo "$output" | grep push | sed 's/^/# /' >&3
	assert_line --regexp '^qemu-jitbpf: push: [0-9]+ parts sent to .*, 0 waiting in .*, 0 refused$'
	[ ! -s "$D/rcv/refused" ] || fail "refused: $(cat "$D/rcv/refused")"
	awk '$3 > 4 { exit 1 }' "$D/rcv/log" || fail "a part of more than 4: $(cat "$D/rcv/log")"
	[ "$(awk '{ print $1 }' "$D/rcv/log" | uniq -d | wc -l)" -gt 0 ] || fail "no interval in parts"
	check_in_order
	check_all_samples "$output"
	# Without parts, the server refuses such an interval whole.
	rm -rf "$D/rcv"/* "$D/spool"
	run "$QEMU_JITBPF" -a --qemu "$QX" --push="$URL" --push-spool="$D/spool" \
		--push-max-samples=1000 --interval=1 -d 1.5
	assert_success
	assert_line --regexp "refused .* \(HTTP 400 invalid_argument: profile has [0-9]+ samples, max 4\); dropped"
}

@test "--push --off-cpu: wall-clock profiles, filed as wall by Pyroscope (both APIs) and Parca, off_cpu time in them" {
	local api f slept=
	# (It runs until killed at the end, however long the three runs take.)
	"$QX" "$(guest x86_64 waits)" 600 >/dev/null 2>&1 &
	PIDS+=($!)
	# Until it sleeps in its loop: a QEMU that starts slowly (cold caches,
	# a busy host) would leave the first run's intervals without a wait.
	for _ in $(seq 200); do
		grep -q nanosleep "/proc/${PIDS[0]}/wchan" 2>/dev/null && slept=1 && break
		sleep 0.05
	done
	[ -n "$slept" ] || fail "the guest never slept"
	for api in pyroscope pyroscope-ingest parca; do
		start_receiver "${api%-ingest}"
		run "$QEMU_JITBPF" -a --qemu "$QX" --off-cpu --push="$URL" --push-api=$api \
			--push-spool="$D/spool" --interval=1 -d 2.5
		assert_success
		assert_line --regexp "^qemu-jitbpf: push: [2-4] parts sent to $URL, 0 waiting in $D/spool, 0 dropped \(spool full\), 0 too old, 0 refused$"
		[ ! -s "$D/rcv/refused" ] || fail "$api refused: $(cat "$D/rcv/refused")"
		if [ "$api" = parca ]; then
			awk '{ print $6 }' "$D/rcv/log" >"$D/series"
		else
			awk '{ print $2 }' "$D/rcv/series" >"$D/series"
		fi
		grep -q '__name__=wall' "$D/series" || fail "$api: $(sort -u "$D/series")"
		! grep -q '__name__=process_cpu' "$D/series" || fail "$api: $(sort -u "$D/series")"
		f=$(ls "$D"/rcv/*.pb.gz | tail -n 1)
		go tool pprof -sample_index=off_cpu -top "$f" 2>/dev/null | grep -q ' snooze$' ||
			fail "$api: no off-CPU time in snooze"
		stop_receiver
		rm -rf "$D/spool"
	done
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
	# Pyroscope's ValidateServiceName: letters, digits and _ . - / only.
	run "$QEMU_JITBPF" -a --push=http://127.0.0.1:1 --interval=10 --push-app='a{b}' --qemu "$QX"
	assert_failure
	assert_output --partial "invalid service name 'a{b}': '{' is not allowed"
	run "$QEMU_JITBPF" -a --push=http://127.0.0.1:1 --interval=10 --push-api=influx --qemu "$QX"
	assert_failure
	assert_output --partial "invalid API 'influx'"
	run "$QEMU_JITBPF" -a --push=http://127.0.0.1:1 --interval=10 --push-max-age=10s --qemu "$QX"
	assert_failure
	assert_output --partial "invalid age '10s'"
}
