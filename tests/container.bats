#!/usr/bin/env bats
# QEMUs in containers: a mount and PID namespace made with unshare, with a
# private tmpfs over the program's folder and over /tmp, and on the host a
# different program (the decoy: hot.c with decoy_alpha and decoy_beta) at
# the path where the container has hot.  Everything must be named from the
# container's files, and nothing the container plants may lead the tool
# astray.

load helpers

V=10.2.2

setup() {
	require_qemu "$V" x86_64
	D=$BATS_TEST_TMPDIR
	QX=$(qemu_bin "$V" x86_64)
	QS=$BUILD/qemu-$V-static/bin/qemu-x86_64-static
	HOT=$(guest x86_64 hot)
	# Outside /tmp, which the container covers.
	CT=$BUILD/ct/$BATS_TEST_NUMBER
	rm -rf "$CT"
	mkdir -p "$CT/app" "$CT/ctl"
	cp "$(guest x86_64 decoy)" "$CT/app/prog"
	CT_PID=
}

teardown() {
	touch "$CT/ctl/stop" 2>/dev/null || true
	stop_bg
	if [ -n "$CT_PID" ]; then
		kill "$CT_PID" 2>/dev/null || true
		wait "$CT_PID" 2>/dev/null || true
	fi
	rm -rf "$CT" "/tmp/perf-${QP:-x}.map"
	[ -z "${HOST_DEBUG:-}" ] || rm -f "$HOST_DEBUG"
}

# Start QEMU in a container running PROGRAM (copied to $CT/app/prog there)
# with ARGS, from the container's /tmp; SETUP is shell run inside first.
# QEMU's host pid in QP, its pid inside is 1.
ct_start() { # QEMU PROGRAM SETUP ARGS...
	local q=$1 prog=$2 setup=$3 _
	shift 3
	rm -f "$CT/ctl/stop"
	unshare --mount --pid --fork --mount-proc --propagation private sh -c "
		mount -t tmpfs tmpfs '$CT/app' && cp '$prog' '$CT/app/prog' &&
		mount -t tmpfs tmpfs /tmp && cd /tmp && $setup
		exec '$q' '$CT/app/prog' \"\$@\"" sh "$@" >"$D/ct.out" 2>"$D/ct.err" &
	CT_PID=$!
	for _ in $(seq 100); do
		QP=$(pgrep -P "$CT_PID" || true)
		[ -n "$QP" ] && [ "$(readlink "/proc/$QP/exe")" = "$(readlink -f "$q")" ] && return
		sleep 0.1
	done
	fail "QEMU did not start in the container: $(cat "$D/ct.err")"
}

ct_stop() {
	touch "$CT/ctl/stop"
	wait_pid "$CT_PID" 20 "the container"
	CT_PID=
}

# Run a command in the container's mount namespace.
ct_exec() {
	nsenter -t "$QP" -m -- "$@"
}

# Attach to the container's QEMU with OPTIONS, let it run SECONDS (perf
# recording it into $D/perf.data), stop the tool as Ctrl-C does.
attach_late() { # SECONDS OPTIONS...
	local secs=$1
	shift
	start_bg "$QEMU_JITBPF" -p "$QP" -v "$@"
	wait_bg_err 'handshake after' 15
	perf_record "$D/perf.data" "$secs" -p "$QP"
	kill -INT "$BG_PID"
	wait_bg 30
	[ "$BG_STATUS" = 0 ] || fail "qemu-jitbpf failed ($BG_STATUS): $(cat "$D/bg.err")"
}

no_decoy() { # FILE...
	! grep -l 'decoy_' "$@" || fail "the host's decoy names in $*"
}

# What perf reports of the JIT samples of PERF_DATA, after perf inject -j
# when JITDUMP: the container's functions only.
check_perf() { # PERF_DATA
	check_attribution "$1" hot_main
	jit_samples "$1" >"$D/samples.txt"
	no_decoy "$D/samples.txt"
}

@test "-p late into a container: perf map (host and container), perf report and perf inject -j name the container's program, never the host's" {
	ct_start "$QX" "$HOT" "" -u "$CT/ctl/stop"
	sleep 1
	attach_late 3 --perfmap --jitdump
	# Both perf maps: the host's, and the container's own /tmp/perf-1.map,
	# which perf reads first while the process lives.
	grep -q ' hot_main$' "/tmp/perf-$QP.map"
	no_decoy "/tmp/perf-$QP.map"
	ct_exec cat /tmp/perf-1.map >"$D/ct.map"
	grep -q ' hot_main$' "$D/ct.map"
	no_decoy "$D/ct.map"
	# perf 6.1 takes the jitdump while the process lives: the marker is
	# the container's /tmp/jit-1.dump.
	ct_exec test -s /tmp/jit-1.dump || fail "the container's jit-1.dump is empty"
	check_perf "$D/perf.data"
	perf_inject "$D/perf.data" "$D/perf.jit.data"
	check_perf "$D/perf.jit.data"
	ct_stop
}

@test "-a before a containerized QEMU: perf map, --profile and --uftrace name the container's program" {
	start_bg "$QEMU_JITBPF" -a -v --qemu "$QX" --perfmap --profile="$D/p.folded" \
		--uftrace="$D/uft"
	wait_bg_err 'attached to .* binaries' 10
	ct_start "$QX" "$HOT" "" -u "$CT/ctl/stop"
	sleep 3
	ct_stop
	kill -INT "$BG_PID"
	wait_bg 60
	[ "$BG_STATUS" = 0 ] || fail "qemu-jitbpf -a failed ($BG_STATUS): $(cat "$D/bg.err")"
	grep -q ' hot_main$' "/tmp/perf-$QP.map"
	no_decoy "/tmp/perf-$QP.map"
	grep -q 'hot_main' "$D/p.folded"
	no_decoy "$D/p.folded"
	run uftrace report -d "$D/uft/$QP" --no-pager -s call
	assert_success
	echo "$output" | head -5 | sed 's/^/#   /' >&3
	assert_output --partial hot_main
	[[ $output != *decoy_* ]] || fail "uftrace names the decoy"
}

@test "a guest program replaced after QEMU loaded it: named from the file QEMU mapped" {
	ct_start "$QX" "$HOT" "" -u "$CT/ctl/stop"
	# The container puts the decoy at the program's path, by rename.
	cp "$(guest x86_64 decoy)" "$CT/ctl/decoy"
	ct_exec sh -c "cp '$CT/ctl/decoy' '$CT/app/prog.new' && mv '$CT/app/prog.new' '$CT/app/prog'"
	attach_late 2 --perfmap
	grep -q ' hot_main$' "/tmp/perf-$QP.map"
	no_decoy "/tmp/perf-$QP.map"
	ct_stop
}

# A stripped hot whose debug file is the container's business: the tool
# looks it up by build-id in the container's /usr/lib/debug.  Whatever the
# container puts there (PLANT: shell run inside, $DBG the path) must not
# block the tool, crash it, or lead it to the host's file at that path.
debug_case() { # NAME PLANT
	local id dir
	id=$(readelf -n "$HOT" | sed -n 's/.*Build ID: //p')
	DBG=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
	dir=${DBG%/*}
	ct_start "$QX" "$CT/ctl/hot.stripped" \
		"mount -t tmpfs tmpfs /usr/lib/debug && mkdir -p '$dir' && DBG='$DBG' && $2 &&" \
		-u "$CT/ctl/stop"
	start_bg timeout 30 "$QEMU_JITBPF" -p "$QP" -v --perfmap
	wait_bg_err 'handshake after' 15 || fail "$1: no handshake"
	sleep 0.5
	kill -INT "$BG_PID"
	wait_bg 30
	[ "$BG_STATUS" = 0 ] || fail "$1: qemu-jitbpf failed ($BG_STATUS): $(cat "$D/bg.err")"
	[ -s "/tmp/perf-$QP.map" ] || fail "$1: no perf map"
	no_decoy "/tmp/perf-$QP.map"
	ct_stop
}

@test "debug files by build-id come from the container; a FIFO, a device, a huge or truncated file there is survived" {
	objcopy --only-keep-debug "$HOT" "$CT/ctl/hot.debug"
	strip -s -o "$CT/ctl/hot.stripped" "$HOT"
	# On the host, at the same path, the decoy's symbols.
	id=$(readelf -n "$HOT" | sed -n 's/.*Build ID: //p')
	HOST_DEBUG=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
	[ ! -e "$HOST_DEBUG" ] || skip "$HOST_DEBUG exists on this host"
	mkdir -p "${HOST_DEBUG%/*}"
	objcopy --only-keep-debug "$(guest x86_64 decoy)" "$HOST_DEBUG"

	debug_case "the container's debug file" "cp '$CT/ctl/hot.debug' \"\$DBG\""
	grep -q ' hot_main$' "/tmp/perf-$QP.map" || fail "hot_main not named from the container's debug file"

	debug_case "a FIFO" "mkfifo \"\$DBG\""
	debug_case "a device" "mknod \"\$DBG\" c 1 3"
	debug_case "a 4 GiB file" "truncate -s 4G \"\$DBG\""
	grep -q 'over 1 GiB' "$D/bg.err" || fail "no warning for the 4 GiB file: $(cat "$D/bg.err")"
	debug_case "a truncated debug file" "head -c 4000 '$CT/ctl/hot.debug' >\"\$DBG\""
}
