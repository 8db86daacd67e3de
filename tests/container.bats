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
		# QEMU is the container's init: all of it goes with it.
		kill -9 "${QP:-$CT_PID}" 2>/dev/null || true
		kill "$CT_PID" 2>/dev/null || true
		wait "$CT_PID" 2>/dev/null || true
	fi
	rm -rf "$CT" "/tmp/perf-${QP:-x}.map"
	[ -z "${HOST_DEBUG:-}" ] || rm -f "$HOST_DEBUG"
	binfmt_unregister
	[ -z "${OURS:-}" ] || "$TOP/scripts/binfmt.sh" uninstall >/dev/null
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
		$(private_tmp) && cd /tmp && $setup
		exec '$q' '$CT/app/prog' \"\$@\"" sh "$@" >"$D/ct.out" 2>"$D/ct.err" &
	CT_PID=$!
	ct_init "$q" "QEMU"
}

# Wait until the container's init (CT_PID's child) runs QEMU: its host pid
# in QP.
ct_init() { # QEMU WHAT
	for _ in $(seq 100); do
		QP=$(pgrep -P "$CT_PID" || true)
		[ -n "$QP" ] && [ "$(readlink "/proc/$QP/exe")" = "$(readlink -f "$1")" ] && return
		sleep 0.1
	done
	fail "$2 did not start in the container: $(cat "$D/ct.err")"
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

@test "-p late into a container, dynamic and static QEMU: perf map (host and container), perf report and perf inject -j name the container's program, never the host's" {
	[ -x "$QS" ] || fail "$QS is not built (make qemu)"
	for q in "$QX" "$QS"; do
		ct_start "$q" "$HOT" "" -u "$CT/ctl/stop"
		sleep 1
		attach_late 3 --perfmap --jitdump
		# Both perf maps: the host's, and the container's own
		# /tmp/perf-1.map, which perf reads first while the process lives.
		grep -q ' hot_main$' "/tmp/perf-$QP.map" || fail "${q##*/}: no hot_main"
		no_decoy "/tmp/perf-$QP.map"
		ct_exec cat /tmp/perf-1.map >"$D/ct.map"
		grep -q ' hot_main$' "$D/ct.map" || fail "${q##*/}: no hot_main in the container's map"
		no_decoy "$D/ct.map"
		# perf 6.1 takes the jitdump while the process lives: the marker
		# is the container's /tmp/jit-1.dump.
		ct_exec test -s /tmp/jit-1.dump || fail "${q##*/}: the container's jit-1.dump is empty"
		check_perf "$D/perf.data"
		perf_inject "$D/perf.data" "$D/perf.jit.data"
		check_perf "$D/perf.jit.data"
		ct_stop
		rm -f "/tmp/perf-$QP.map"
	done
}

@test "-a before a containerized QEMU: perf map, --profile and --uftrace name the container's program; its /tmp gone, no map of its pid lands in the host's" {
	# Pid 1 of the host never has a map of ours.
	rm -f /tmp/perf-1.map
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
	# Its exit seen, the container's /tmp tmpfs had gone with it: its
	# perf-1.map is not written through to the directory beneath.
	[ ! -e /tmp/perf-1.map ] || fail "the container's perf-1.map was written to the host's /tmp"
	grep -q "pid $QP: its /tmp went with its mount namespace" "$D/bg.err"
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

@test "links planted at the container's perf map and jitdump marker: replaced or refused with a warning, never followed" {
	echo precious >"$CT/ctl/victim"
	ct_start "$QX" "$HOT" "ln -s '$CT/ctl/victim' /tmp/perf-1.map &&" -u "$CT/ctl/stop"
	attach_late 1 --perfmap --jitdump
	[ "$(cat "$CT/ctl/victim")" = precious ] || fail "written through the perf map's link"
	ct_exec test -f /tmp/perf-1.map -a ! -L /tmp/perf-1.map || fail "the link is still there"
	ct_exec grep -q ' hot_main$' /tmp/perf-1.map
	ct_exec test -s /tmp/jit-1.dump
	# The marker QEMU mapped moves away; a link to the victim takes its name.
	ct_exec sh -c "mv /tmp/jit-1.dump /tmp/old.dump && ln -s '$CT/ctl/victim' /tmp/jit-1.dump"
	rm -f "/tmp/perf-$QP.map"
	attach_late 1 --perfmap --jitdump
	[ "$(cat "$CT/ctl/victim")" = precious ] || fail "written through the marker's link"
	grep -q "^qemu-jitbpf: warning: pid $QP: jitdump marker /tmp/jit-1.dump is not the file QEMU mapped; no jitdump$" "$D/bg.err" ||
		fail "no warning: $(cat "$D/bg.err")"
	grep -q ' hot_main$' "/tmp/perf-$QP.map" || fail "no perf map beside the refused jitdump"
	ct_stop
}

# QEMU makes its marker in its working directory: from "/" it reports
# "//jit-PID.dump", and the kernel names the mapping "/jit-PID.dump" (or,
# in a chroot, by the host's path to it).  ATTACH-PID's marker must be
# written, and DUMP (the host's path to it) hold records.
marker_case() { # WHAT PID DUMP
	start_bg "$QEMU_JITBPF" -p "$2" -v --jitdump
	wait_bg_err 'handshake after' 15
	sleep 0.5
	kill -INT "$BG_PID"
	wait_bg 30
	[ "$BG_STATUS" = 0 ] || fail "$1: qemu-jitbpf failed ($BG_STATUS): $(cat "$D/bg.err")"
	! grep -q 'jitdump marker' "$D/bg.err" || fail "$1: $(grep 'jitdump marker' "$D/bg.err")"
	[ "$(stat -c %s "$3")" -gt 1000 ] || fail "$1: $3 holds no records: $(cat "$D/bg.err")"
}

@test "-p --jitdump on a QEMU whose working directory is /: on the host, and in a chroot'ed aarch64 container through binfmt F" {
	(cd / && exec "$QX" "$HOT" -u "$CT/ctl/stop") >/dev/null 2>&1 &
	QP=$!
	sleep 1
	marker_case host "$QP" "/jit-$QP.dump"
	rm -f "/jit-$QP.dump"
	touch "$CT/ctl/stop"
	wait_pid "$QP" 20 "QEMU"
	QP=
	arm_root
	arm_start "cd / && exec $CT/app/prog -u $CT/ctl/stop"
	sleep 1
	marker_case chroot "$QP" "$R/jit-1.dump"
	touch "$R$CT/ctl/stop"
	wait_pid "$CT_PID" 20 "the container"
	CT_PID=
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

	# Each refused with one line: NAME|PLANT|WARNING (on fd 7: what the
	# cases run must not read them).
	n=0
	while IFS='|' read -r -u 7 name plant warning; do
		debug_case "$name" "$plant"
		grep -q "warning: pid $QP: $DBG: $warning" "$D/bg.err" ||
			fail "no warning for $name: $(cat "$D/bg.err")"
		n=$((n + 1))
	done 7<<EOF
a FIFO|mkfifo "\$DBG"|not a regular file, not read$
a device|mknod "\$DBG" c 1 3|not a regular file, not read$
a 4 GiB file|truncate -s 4G "\$DBG"|over 1 GiB
a truncated debug file|head -c 4000 '$CT/ctl/hot.debug' >"\$DBG"|not a whole ELF file, no symbols read$
EOF
	[ "$n" = 4 ] || fail "$n cases ran, not 4"
}

@test "a container's source lines come from its debug file, never from the host's file at that path" {
	local id dir dbg
	objcopy --only-keep-debug "$HOT" "$CT/ctl/hot.debug"
	strip -s -o "$CT/ctl/hot.stripped" "$HOT"
	id=$(readelf -n "$HOT" | sed -n 's/.*Build ID: //p')
	dbg=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
	HOST_DEBUG=$dbg
	[ ! -e "$HOST_DEBUG" ] || skip "$HOST_DEBUG exists on this host"
	mkdir -p "${HOST_DEBUG%/*}"
	# On the host, at the same path: the decoy's symbols, and the line
	# table of another program (calls.c).
	objcopy --dump-section .debug_line="$D/line" --dump-section .debug_line_str="$D/line_str" \
		"$(guest x86_64 calls)" "$D/calls.tmp"
	objcopy --only-keep-debug "$(guest x86_64 decoy)" "$D/decoy.debug"
	objcopy --update-section .debug_line="$D/line" --update-section .debug_line_str="$D/line_str" \
		"$D/decoy.debug" "$HOST_DEBUG"
	readelf --debug-dump=line "$HOST_DEBUG" | grep -q 'calls\.c' || fail "no calls.c lines planted"
	dir=${dbg%/*}
	ct_start "$QX" "$CT/ctl/hot.stripped" \
		"mount -t tmpfs tmpfs /usr/lib/debug && mkdir -p '$dir' && cp '$CT/ctl/hot.debug' '$dbg' &&" \
		-u "$CT/ctl/stop"
	sleep 0.5
	attach_late 1 --perfmap --jitdump
	grep -q ' hot_main$' "/tmp/perf-$QP.map" || fail "hot_main not named from the container's debug file"
	ct_exec cat /tmp/jit-1.dump >"$D/jit.dump"
	ct_stop
	"$TOP/tests/jitdump-lines.py" --files "$D/jit.dump" >"$D/files"
	sort -u "$D/files" | sed 's/^/# /' >&3
	grep -q 'hot\.c$' "$D/files" || fail "no line of hot.c in the jitdump"
	! grep -q 'calls\.c$' "$D/files" || fail "lines from the host's debug file"
}

# An aarch64 container: its own root ($R, entered with unshare --root) with
# Debian's arm64 busybox-static and the aarch64 hot at $CT/app/prog (on the
# host, that path holds the decoy), every program run by the static
# qemu-aarch64 that binfmt_misc registered with flags OPF.
arm_root() {
	QSA=$BUILD/qemu-$V-static/bin/qemu-aarch64-static
	[ -x "$QSA" ] || fail "$QSA is not built (make qemu)"
	BB=$(guest aarch64 busybox)
	[ -x "$BB" ] || fail "$BB missing (make guests)"
	R=$CT/root
	mkdir -p "$R/bin" "$R/tmp" "$R/proc" "$R$CT/app" "$R$CT/ctl"
	cp "$BB" "$R/bin/busybox"
	ln -s busybox "$R/bin/sh"
	cp "$(guest aarch64 hot)" "$R$CT/app/prog"
	cp "$(guest aarch64 decoy)" "$CT/app/prog"
	binfmt_register "$QSA" OPF
}

# Run SCRIPT with the container's busybox sh; the shell's host pid in QP.
arm_start() { # SCRIPT
	echo "$1" >"$R/script.sh"
	unshare --mount --pid --fork --propagation private sh -c "
		$(private_tmp "$R" "$CT") && mount -t proc proc '$R/proc' &&
		exec chroot '$R' /bin/sh /script.sh" >"$D/ct.out" 2>"$D/ct.err" &
	CT_PID=$!
	ct_init "$QSA" "the shell"
}

# Each command of the container with a perf map (from -v's lines): complete,
# the hot ones named from the container's hot; HOT of them at least.
check_arm_maps() { # STDERR-FILE HOT
	local pid hot=0 n=0
	for pid in $(sed -nE 's/.*pid ([0-9]+) \((exit|exec)\): wrote .*/\1/p' "$1" | sort -u); do
		n=$((n + 1))
		[ -s "/tmp/perf-$pid.map" ] || fail "pid $pid: empty perf map"
		grep -vqE '^[0-9a-f]+ [0-9a-f]+ .+$' "/tmp/perf-$pid.map" && fail "pid $pid: bad line"
		no_decoy "/tmp/perf-$pid.map"
		if grep -q ' hot_main$' "/tmp/perf-$pid.map"; then
			hot=$((hot + 1))
			grep -qE "^prog-$pid;.*hot_main( |;)" "$D/p.folded" ||
				fail "pid $pid: no hot_main under its root in the profile"
		fi
		rm -f "/tmp/perf-$pid.map"
	done
	echo "# $n commands with a perf map, $hot named hot" >&3
	[ "$n" -gt 0 ] || fail "no command with a perf map"
	[ "$hot" -ge "$2" ] || fail "$hot hot commands, not $2"
	no_decoy "$D/p.folded"
}

@test "an aarch64 container run by the binfmt-registered static emulator: -a before, each command of its script named" {
	arm_root
	start_bg "$QEMU_JITBPF" -a -v --qemu "$QSA" --perfmap --profile="$D/p.folded"
	wait_bg_err 'attached to .* binaries' 10
	arm_start "for i in 1 2 3; do $CT/app/prog 20000 >/tmp/out; /bin/busybox true; done"
	wait_pid "$CT_PID" 60 "the container"
	CT_PID=
	kill -INT "$BG_PID"
	wait_bg 60
	[ "$BG_STATUS" = 0 ] || fail "qemu-jitbpf -a failed ($BG_STATUS): $(cat "$D/bg.err")"
	check_arm_maps "$D/bg.err" 3
}

@test "-a --stacks and --off-cpu on an aarch64 container through binfmt_misc: its shell waiting for its child, a sleep, a running program" {
	arm_root
	# (A shell gives a command it runs in the background /dev/null.)
	mkdir -p "$R/dev"
	mknod "$R/dev/null" c 1 3
	arm_start "$CT/app/prog 2000000000 >/tmp/out & /bin/busybox sleep 60; wait"
	for _ in $(seq 100); do
		[ "$(pgrep -c -f "$(basename "$QSA")")" -ge 3 ] && break
		sleep 0.1
	done
	sleep 1
	run "$QEMU_JITBPF" -a --qemu "$QSA" --stacks="$D/s.json"
	assert_success
	run /usr/bin/python3 -c "
import json, sys
for p in json.load(open(sys.argv[1]))['processes']:
    for t in p['threads']:
        f = [x['function'] for x in t['frames']]
        print(t.get('sampled') or t.get('syscall', {}).get('name'), f[0] if f else '')" "$D/s.json"
	echo "$output" | sed 's/^/# /' >&3
	assert_line --regexp '^wait4 '
	assert_line --regexp '^clock_nanosleep '
	# (Sampled where it runs: in QEMU's lookup or another helper, or in the
	# host kernel, as often as in its own code; its leaf is the guest's.)
	assert_line --regexp '^running (guest code|in QEMU.*|in the host kernel|a helper.*) (hot_main|hot_side|main)$'
	run "$QEMU_JITBPF" -a --qemu "$QSA" -d 2 --off-cpu --profile="$D/w.folded"
	assert_success
	grep -q '\[off-CPU: clock_nanosleep\]' "$D/w.folded" || fail "$(cut -c1-200 "$D/w.folded")"
	grep -q '\[off-CPU: wait4\]' "$D/w.folded" || fail "$(cut -c1-200 "$D/w.folded")"
	grep -qE ';hot_(main|side)' "$D/w.folded" || fail "$(cut -c1-200 "$D/w.folded")"
}

@test "--report and --timeline with -a on an aarch64 container through binfmt_misc: each command a row with its command line, under the container's shell" {
	arm_root
	start_bg "$QEMU_JITBPF" -a -v --qemu "$QSA" -F 499 --report="$D/r.json" --timeline="$D/t.json"
	wait_bg_err 'attached to .* binaries' 10
	arm_start "for i in 1 2 3; do $CT/app/prog 20000 >/tmp/out; /bin/busybox true; done"
	wait_pid "$CT_PID" 60 "the container"
	CT_PID=
	kill -INT "$BG_PID"
	wait_bg 60
	[ "$BG_STATUS" = 0 ] || fail "qemu-jitbpf -a failed ($BG_STATUS): $(cat "$D/bg.err")"
	# Three runs of the container's prog, each with its CPU and samples,
	# its parent the container's shell (by its pid on the host).
	/usr/bin/python3 - "$D/r.json" "$CT/app/prog 20000" "$QP" <<-'EOF'
		import json, sys
		r = json.load(open(sys.argv[1]))
		rows = [p for p in r['processes'] if p['command'].endswith(sys.argv[2])]
		assert len(rows) == 3, [p['command'] for p in r['processes']]
		for p in rows:
		    assert p['cpu_ns'] > 0 and p['samples'] > 0, p
		    assert int(sys.argv[3]) in p['parents'] or p['ppid'] == int(sys.argv[3]), p
		assert any(p['pid'] == int(sys.argv[3]) and p['command'].endswith('/script.sh')
		           for p in r['processes']), [p['command'] for p in r['processes']]
	EOF
	run /usr/bin/python3 "$BATS_TEST_DIRNAME/trace-check.py" "$D/t.json"
	assert_success
	[ "$(grep -c "^[0-9]* [0-9]* parent " <<<"$output")" -ge 3 ] || fail "$output"
}

@test "an aarch64 container: -p late on its shell while it loops, each later command named" {
	arm_root
	arm_start "while [ ! -e $CT/ctl/stop ]; do $CT/app/prog 20000 >/tmp/out; /bin/busybox true; done"
	sleep 1
	run "$QEMU_JITBPF" -v -p "$QP" --perfmap --profile="$D/p.folded" -d 5
	echo "$output" | grep -v ': pid [0-9]*: ' | sed 's/^/# /' >&3
	assert_success
	echo "$output" >"$D/err"
	touch "$R$CT/ctl/stop"
	check_arm_maps "$D/err" 2
}

@test "make binfmt-install registers the static emulators as Debian does, refuses a format another entry claims, and uninstall leaves nothing of ours" {
	binfmt_mount
	B=/proc/sys/fs/binfmt_misc
	host=$(uname -m)
	foreign=aarch64
	[ "$host" != aarch64 ] || foreign=x86_64
	# Not mounted: one line.
	run env BINFMT_MISC="$D" "$TOP/scripts/binfmt.sh" install
	[ "$status" = 1 ] && [ "${#lines[@]}" = 1 ] || fail "$output"
	assert_output --partial "binfmt_misc is not mounted at $D"
	# Another entry claims the format: refused, and named.
	"$TOP/scripts/binfmt.sh" register "$BINFMT_NAME" "$(qemu_bin "$V" "$foreign")" "$foreign" F
	run make -s -C "$TOP" binfmt-install
	[ "$status" != 0 ] || fail "installed over $BINFMT_NAME: $output"
	assert_output --partial "already run by binfmt_misc entry $BINFMT_NAME ($(qemu_bin "$V" "$foreign"))"
	[ ! -e "$B/qemu-jitbpf-$foreign" ] || fail "registered all the same"
	binfmt_unregister
	OURS=1
	run make -s -C "$TOP" binfmt-install
	assert_success
	echo "$output" | sed 's/^/#   /' >&3
	e=$B/qemu-jitbpf-$foreign
	[ -e "$e" ] || fail "no $e"
	grep -qx enabled "$e"
	grep -qx "interpreter $BUILD/qemu-$V-static/bin/qemu-$foreign-static" "$e" || fail "$(cat "$e")"
	grep -qx 'flags: POF' "$e" || fail "flags: $(cat "$e")"
	[ ! -e "$B/qemu-jitbpf-$host" ] || fail "the host's own architecture was registered"
	# A foreign program runs with it.
	run "$(guest "$foreign" hot)" 10
	assert_success
	assert_output --regexp '^hot 10 '
	run make -s -C "$TOP" binfmt-uninstall
	assert_success
	[ -z "$(ls "$B" | grep '^qemu-jitbpf-')" ] || fail "left: $(ls "$B")"
}

@test "an aarch64 container's links lead nowhere outside its root: a debug file linked to the host's is not read" {
	arm_root
	aarch64-linux-gnu-strip -s -o "$R$CT/app/prog" "$(guest aarch64 hot)"
	id=$(readelf -n "$(guest aarch64 hot)" | sed -n 's/.*Build ID: //p')
	dir=$R/usr/lib/debug/.build-id/${id:0:2}
	mkdir -p "$dir"
	# On the host, the decoy's symbols; in the container, links to them,
	# absolute and climbing out with "..".
	aarch64-linux-gnu-objcopy --only-keep-debug "$(guest aarch64 decoy)" "$CT/ctl/decoy.debug"
	ln -s "$CT/ctl/decoy.debug" "$dir/${id:2}.debug"
	arm_start "while [ ! -e $CT/ctl/stop ]; do $CT/app/prog 20000 >/tmp/out; done"
	sleep 1
	run "$QEMU_JITBPF" -v -p "$QP" --perfmap --profile="$D/p.folded" -d 3
	assert_success
	echo "$output" >"$D/err"
	check_arm_maps "$D/err" 0
	rm "$dir/${id:2}.debug"
	ln -s "../../../../../../../../../../../../..$CT/ctl/decoy.debug" "$dir/${id:2}.debug"
	run "$QEMU_JITBPF" -v -p "$QP" --perfmap --profile="$D/p.folded" -d 3
	assert_success
	echo "$output" >"$D/err"
	check_arm_maps "$D/err" 0
	touch "$R$CT/ctl/stop"
}

@test "an emulator registered from another mount namespace, its path naming nothing here: known by device and inode (-a, -p)" {
	QSA=$BUILD/qemu-$V-static/bin/qemu-aarch64-static
	[ -x "$QSA" ] || fail "$QSA is not built (make qemu)"
	binfmt_mount
	# As a container runtime does: the emulator at a path of its own
	# namespace, opened by binfmt_misc (F) at registration.
	mkdir -p "$CT/emu"
	unshare --mount --propagation private sh -c "
		mount -t tmpfs tmpfs '$CT/emu' && touch '$CT/emu/qemu-aarch64' &&
		mount --bind '$QSA' '$CT/emu/qemu-aarch64' &&
		'$TOP/scripts/binfmt.sh' register '$BINFMT_NAME' '$CT/emu/qemu-aarch64' aarch64 OPF"
	AH=$(guest aarch64 hot)
	"$AH" -u "$CT/ctl/stop" >/dev/null &
	QP=$!
	PIDS=("$QP")
	sleep 0.5
	exe=$(readlink "/proc/$QP/exe")
	echo "# /proc/$QP/exe: $exe" >&3
	[ "$(stat -Lc %d:%i "/proc/$QP/exe")" != "$(stat -c %d:%i "$exe")" ] ||
		fail "$exe names the emulator here"
	# -p: attached through /proc/PID/exe.
	attach_late 1 --perfmap
	grep -q ' hot_main$' "/tmp/perf-$QP.map" || fail "-p: no hot_main"
	rm -f "/tmp/perf-$QP.map"
	# -a, naming the emulator by a path of ours: the same file.
	start_bg "$QEMU_JITBPF" -a -v --qemu "$QSA" --perfmap -d 2
	wait_bg 30
	[ "$BG_STATUS" = 0 ] || fail "-a failed: $(cat "$D/bg.err")"
	grep -q ' hot_main$' "/tmp/perf-$QP.map" || fail "-a: no hot_main: $(cat "$D/bg.err")"
	touch "$CT/ctl/stop"
	wait "$QP"
}

@test "launched into a container (qemu-jitbpf -- unshare ... QEMU, dynamic and static): named from the container; the command's exit status" {
	[ -x "$QS" ] || fail "$QS is not built (make qemu)"
	# (A QEMU that a wrapper starts runs until its handshake, up to 0.1 s
	# for a compute-bound guest: its samples of that time are unnamed.
	# The run is long enough for them to stay under a tenth.)
	for q in "$QX" "$QS"; do
		run perf record -q -e cpu-clock -k 1 -o "$D/perf.data" -- \
			"$QEMU_JITBPF" -v --perfmap --profile="$D/p.folded" -- \
			unshare --mount --pid --fork --mount-proc --propagation private sh -c "
			mount -t tmpfs tmpfs '$CT/app' && cp '$HOT' '$CT/app/prog' &&
			$(private_tmp) && cd /tmp && '$q' '$CT/app/prog' 300000; exit 3"
		[ "$status" = 3 ] || fail "${q##*/}: exit status $status, not the command's 3: $output"
		assert_line --regexp '^qemu-jitbpf: 1 QEMU processes .* 1 perf maps, .* 0 without a handshake$'
		QP=$(sed -nE 's/.*pid ([0-9]+) \(exit\): wrote .*/\1/p' <<<"$output")
		grep -q ' hot_main$' "/tmp/perf-$QP.map" || fail "${q##*/}: no hot_main"
		no_decoy "/tmp/perf-$QP.map"
		check_perf "$D/perf.data"
		grep -q "^qemu-x86_64[-a-z]*-$QP;.*hot_main" "$D/p.folded" || fail "${q##*/}: no hot_main in the profile"
		no_decoy "$D/p.folded"
		rm -f "/tmp/perf-$QP.map"
	done
}

@test "launched into a container with --jitdump -d: perf inject -j, while the container runs, names its program" {
	start_bg "$QEMU_JITBPF" -v --perfmap --jitdump -d 4 -- \
		unshare --mount --pid --fork --mount-proc --propagation private sh -c "
		mount -t tmpfs tmpfs '$CT/app' && cp '$HOT' '$CT/app/prog' &&
		$(private_tmp) && cd /tmp && exec '$QX' '$CT/app/prog' -u '$CT/ctl/stop'"
	wait_bg_err 'handshake after' 15
	QP=$(sed -nE "s/.*pid ([0-9]+): exec'd .*/\1/p" "$D/bg.err" | head -n 1)
	[ -n "$QP" ] || fail "no QEMU exec'd: $(cat "$D/bg.err")"
	perf_record "$D/perf.data" 2 -p "$QP"
	wait_bg 30
	[ "$BG_STATUS" = 0 ] || fail "qemu-jitbpf failed ($BG_STATUS): $(cat "$D/bg.err")"
	kill -0 "$QP" || fail "QEMU did not outlive -d"
	nsenter -t "$QP" -m test -s /tmp/jit-1.dump || fail "the container's jit-1.dump is empty"
	perf_inject "$D/perf.data" "$D/perf.jit.data"
	check_perf "$D/perf.jit.data"
	touch "$CT/ctl/stop"
	for _ in $(seq 100); do
		kill -0 "$QP" 2>/dev/null || return 0
		sleep 0.1
	done
	fail "QEMU did not stop"
}

@test "an aarch64 container's program replaced after it started: named from the file QEMU mapped, its path seen from the container's root" {
	arm_root
	arm_start "exec $CT/app/prog -u $CT/ctl/stop"
	sleep 0.5 # (the shell has exec'd it)
	cp "$(guest aarch64 decoy)" "$R$CT/app/prog.new"
	mv "$R$CT/app/prog.new" "$R$CT/app/prog"
	attach_late 1 --perfmap
	grep -q ' hot_main$' "/tmp/perf-$QP.map" || fail "no hot_main"
	no_decoy "/tmp/perf-$QP.map"
	touch "$R$CT/ctl/stop"
}

@test "the tool itself in a container's pid namespace (a CI job in docker): launched, -p and -a number QEMUs as the container does; -a there sees no QEMU of the host" {
	# A QEMU of the host's, of the same binary: invisible from inside.
	"$QX" "$HOT" -u "$CT/ctl/stop" >/dev/null 2>&1 &
	local host_qp=$!
	mkdir -p "$CT/out"
	cat >"$CT/job.sh" <<JOB
set -e
$(private_tmp) && cd /tmp
out='$CT/out'
# Launched.
'$QEMU_JITBPF' -v --perfmap --coverage=c.info --profile="\$out/launched.folded" -- \\
	'$QX' '$HOT' 300000 >/dev/null 2>"\$out/launched.err"
cp /tmp/perf-*.map "\$out/launched.map" && rm /tmp/perf-*.map && cp c.info "\$out/"
# -p, late.
'$QX' '$HOT' -u '$CT/ctl/stop-p' >/dev/null & qp=\$!
sleep 0.5
'$QEMU_JITBPF' -v -p \$qp --perfmap --uftrace="\$out/uft" -d 2 2>"\$out/p.err"
echo \$qp >"\$out/p.pid"
touch '$CT/ctl/stop-p' && wait \$qp
cp /tmp/perf-\$qp.map "\$out/p.map" && rm /tmp/perf-*.map
# -a, then a QEMU starts.
'$QEMU_JITBPF' -v -a --qemu '$QX' --perfmap -d 4 2>"\$out/a.err" & tp=\$!
for i in \$(seq 100); do grep -q 'attached to' "\$out/a.err" && break; sleep 0.1; done
'$QX' '$HOT' 300000 >/dev/null & qp=\$!
echo \$qp >"\$out/a.pid"
wait \$qp && wait \$tp
ls /tmp/perf-*.map >"\$out/a.maps"
cp /tmp/perf-\$qp.map "\$out/a.map"
JOB
	run unshare --mount --pid --fork --mount-proc --propagation private sh "$CT/job.sh"
	touch "$CT/ctl/stop"
	wait "$host_qp" || true
	[ "$status" = 0 ] || fail "the job failed ($status): $output $(cat "$CT"/out/*.err)"
	local o=$CT/out
	grep -Eq '^qemu-jitbpf: 1 QEMU processes .* 1 perf maps, .* 0 without a handshake$' "$o/launched.err" ||
		fail "launched: $(cat "$o/launched.err")"
	grep -q ' hot_main$' "$o/launched.map" || fail "launched: no hot_main"
	grep -Eq '^FNDA:[1-9][0-9]*,hot_main$' "$o/c.info" || fail "launched: hot_main not covered"
	grep -q 'handshake after' "$o/p.err" || fail "-p: no handshake: $(cat "$o/p.err")"
	grep -q ' hot_main$' "$o/p.map" || fail "-p: no hot_main"
	grep -q "^qemu-x86_64-[0-9]*;.*hot_main" "$o/launched.folded" || fail "launched: no hot_main sampled"
	run uftrace report -d "$o/uft" --no-pager -s call
	assert_success
	assert_output --partial hot_main
	# The container numbers its processes from 1: the pids the tool
	# reports are the container's, the host's QEMU is not among them.
	[ "$(cat "$o/p.pid")" -lt 100 ] || fail "-p: pid $(cat "$o/p.pid") is not the container's"
	grep -Eq '^qemu-jitbpf: 1 QEMU processes ' "$o/a.err" || fail "-a: $(cat "$o/a.err")"
	[ "$(cat "$o/a.maps")" = "/tmp/perf-$(cat "$o/a.pid").map" ] || fail "-a: maps $(cat "$o/a.maps")"
	grep -q ' hot_main$' "$o/a.map" || fail "-a: no hot_main"
	! grep -q "pid $host_qp\b" "$o/a.err" || fail "-a: the host's QEMU $host_qp seen"
}

@test "--stacks of a containerized QEMU, with -p and with -a: each guest thread by the container's thread ids, blocked where it is; --off-cpu, where they wait" {
	local hang=$(guest x86_64 hang) line_ab line_ba
	line_ab=$(grep -n "hang-ab blocks here" "$TOP/tests/guests/hang.c" | cut -d: -f1)
	line_ba=$(grep -n "hang-ba blocks here" "$TOP/tests/guests/hang.c" | cut -d: -f1)
	ct_start "$QX" "$hang" "" deadlock
	wait_for_file_line "$D/ct.out" "ready hang-ba"
	wait_for_file_line "$D/ct.out" "ready hang-ab"
	sleep 0.5
	for mode in "-p $QP" "-a"; do
		# shellcheck disable=SC2086
		run "$QEMU_JITBPF" $mode --stacks="$D/s.json"
		assert_success
		run "$TOP/tests/stacks-check.py" "$D/s.json" "$D/ct.out" "$hang" \
			hang-ab=futex/futex/lock_ab:"$line_ab" hang-ba=futex/futex/lock_ba:"$line_ba"
		[ "$status" = 0 ] || fail "$mode: $output $(cat "$D/s.json")"
		# The container numbers its threads from 1, QEMU first.
		/usr/bin/python3 -c "import json, sys; p = json.load(open(sys.argv[1]))['processes'][0]; t = p['threads']; sys.exit(not (p['pid'] == int(sys.argv[2]) and sorted(x['tid'] for x in t)[0] == 1 and all(x['tid'] != x['host_tid'] for x in t)))" \
			"$D/s.json" "$QP" || fail "$mode: thread ids: $(cat "$D/s.json")"
	done
	# --off-cpu: both threads' waits, read by the container's ids too.
	run "$QEMU_JITBPF" -p "$QP" -d 1.5 --off-cpu --profile="$D/w.folded"
	assert_success
	grep -qE ';lock_ab;.*\[off-CPU: futex\]' "$D/w.folded" || fail "$(cat "$D/w.folded")"
	grep -qE ';lock_ba;.*\[off-CPU: futex\]' "$D/w.folded" || fail "$(cat "$D/w.folded")"
}
