#!/usr/bin/env bats
# Least privilege: the service's unit as make install writes it (systemd
# accepts it), and the suite's main scenarios run as its user with only
# its capabilities, QEMU running as root or in a container; without any
# one of them, the tool names what it lacks.

load helpers

V=10.2.2

setup() {
	require_qemu "$V" x86_64
	D=$BATS_TEST_TMPDIR
	QX=$(qemu_bin "$V" x86_64)
	HOT=$(guest x86_64 hot)
	PIDS=()
	install_service
	# Where the service's user writes (it owns it, as StateDirectory= does).
	OUT=$D/state
	mkdir -p "$OUT"
	chown "$SVC_USER:" "$OUT"
}

teardown() {
	touch "$D/stop" 2>/dev/null || true
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	stop_bg
	[ -z "${CT_PID:-}" ] || { kill -9 "$CT_PID" 2>/dev/null; wait "$CT_PID" 2>/dev/null; } || true
}

# make install into $D (its user is created on this machine, as on a
# host); the unit's user, capabilities and command line.
install_service() {
	make -C "$TOP" --no-print-directory install PREFIX="$D/usr" >/dev/null 2>&1 ||
		fail "make install failed"
	UNIT=$D/usr/lib/systemd/system/qemu-jitbpf.service
	SVC_USER=$(sed -n 's/^User=//p' "$UNIT")
	SVC_CAPS=$(sed -n 's/^AmbientCapabilities=//p' "$UNIT")
	SVC_EXEC=$(sed -n 's/^ExecStart=//p' "$UNIT")
	[ -n "$SVC_USER" ] && [ -n "$SVC_CAPS" ] && [ -n "$SVC_EXEC" ] || fail "$(cat "$UNIT")"
	id "$SVC_USER" >/dev/null || fail "make install did not create the user $SVC_USER"
}

# setpriv as systemd would start the unit: its user, its capabilities,
# less those named in $WITHOUT (CAP_X ...); in PRIV.
svc_priv() {
	local c caps=""
	for c in $SVC_CAPS; do
		[[ " ${WITHOUT:-} " == *" $c "* ]] && continue
		c=${c#CAP_}
		caps="$caps,+${c,,}"
	done
	PRIV=(setpriv --reuid="$SVC_USER" --regid="$SVC_USER" --clear-groups
		--inh-caps=-all"$caps" --ambient-caps=-all"$caps" --bounding-set=-all"$caps" --)
}

as_service() {
	svc_priv
	"${PRIV[@]}" "$@"
}

@test "the unit: systemd-analyze verify accepts it; least privilege, as its own user" {
	run env MANPATH="$D/usr/share/man" systemd-analyze verify "$UNIT"
	assert_success
	assert_output ''
	[ "$SVC_USER" != root ] || fail "the service runs as root"
	grep -qx 'NoNewPrivileges=yes' "$UNIT" || fail "no NoNewPrivileges"
	[ "$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT")" = "$SVC_CAPS" ] || fail "bounding set"
	[[ $SVC_EXEC == "$D/usr/bin/qemu-jitbpf --config=$D/usr/etc/qemu-jitbpf.conf" ]] || fail "$SVC_EXEC"
	# CAP_SYS_ADMIN is not among them.
	[[ $SVC_CAPS != *SYS_ADMIN* ]] || fail "$SVC_CAPS"
}

@test "as the service's user: -p on root's QEMU, perf map (root's), jitdump, profile" {
	rm -f "$D/stop"
	(cd "$D" && exec "$QX" "$HOT" -u "$D/stop") >/dev/null 2>&1 &
	PIDS+=($!)
	sleep 0.5
	run as_service "$QEMU_JITBPF" -p "${PIDS[0]}" --perfmap --jitdump --profile="$OUT/p.folded" -d 2
	echo "$output" | sed 's/^/# /' >&3
	assert_success
	[ "$(stat -c %U "/tmp/perf-${PIDS[0]}.map")" = root ] || fail "the map is not QEMU's user's"
	grep -q ' hot_main$' "/tmp/perf-${PIDS[0]}.map" || fail "no hot_main in the map"
	grep -qa hot_main "$D/jit-${PIDS[0]}.dump" || fail "no hot_main in the jitdump"
	grep -qE 'hot_main [0-9]+$' "$OUT/p.folded" || fail "no hot_main in the profile"
	rm -f "/tmp/perf-${PIDS[0]}.map"
}

@test "as the service's user: a launched tree traced for uftrace; the command gets no capability" {
	local out
	run as_service "$QEMU_JITBPF" --uftrace="$OUT/u" -- "$QX" "$(guest x86_64 forktree)" -n 2
	assert_success
	out=$(uftrace report -d "$OUT/u" -s call 2>&1)
	grep -qE ' p_tree$' <<<"$out" && grep -qE ' c_tree$' <<<"$out" || fail "$out"
	run as_service "$QEMU_JITBPF" -- sh -c 'grep ^Cap /proc/self/status'
	assert_line 'CapEff:	0000000000000000'
	assert_line 'CapAmb:	0000000000000000'
}

@test "as the service's user: its command line, -a with a QEMU from before and one after, maps removed, SIGTERM exits 0" {
	local before after conf=$D/usr/etc/qemu-jitbpf.conf
	# The configuration as installed, but for the emulator and where files go.
	sed -i -e "s|^#qemu = .*|qemu = $QX|" -e "s|^profile = .*|profile = $OUT/host.folded|" \
		-e "s|^keep-exited = .*|keep-exited = 1s|" "$conf"
	rm -f "$D/stop"
	"$QX" "$HOT" -u "$D/stop" >/dev/null 2>&1 &
	before=$!
	PIDS+=($before)
	sleep 0.5
	svc_priv
	# shellcheck disable=SC2086
	start_bg "${PRIV[@]}" $SVC_EXEC -v
	wait_bg_err 'attached to .* binaries' 10
	"$QX" "$HOT" 3000 >/dev/null &
	after=$!
	wait $after
	wait_for_file "/tmp/perf-$after.map" 5
	[ "$(stat -c %U "/tmp/perf-$after.map")" = root ] || fail "not QEMU's user's map"
	# Kept 1 s, then removed: root's file in /tmp, by the service's user.
	sleep 3
	[ -e "/tmp/perf-$after.map" ] && fail "the exited QEMU's map stayed"
	kill -TERM "$BG_PID"
	wait_bg 30
	sed 's/^/# /' "$D/bg.err" | grep -v 'pid [0-9]*: ' >&3
	[ "$BG_STATUS" = 0 ] || fail "exit $BG_STATUS: $(cat "$D/bg.err")"
	grep -q ' hot_main$' "/tmp/perf-$before.map" || fail "no map of the QEMU that still runs"
	grep -qE 'hot_main [0-9]+$' "$OUT"/host.*.folded || fail "no interval profile: $(ls "$OUT")"
	grep -q ' 1 files of exited processes removed' "$D/bg.err" || fail "$(cat "$D/bg.err")"
	rm -f "/tmp/perf-$before.map"
}

@test "as the service's user: a QEMU in a container is named from its files, both perf maps written" {
	local qp ct=$BUILD/ct-priv
	rm -rf "$ct" && mkdir -p "$ct/app"
	unshare --mount --pid --fork --mount-proc --propagation private sh -c "
		mount -t tmpfs tmpfs '$ct/app' && cp '$HOT' '$ct/app/prog' &&
		$(private_tmp) && cd /tmp && exec '$QX' '$ct/app/prog' -u '$ct/stop'" \
		>/dev/null 2>&1 &
	CT_PID=$!
	for _ in $(seq 50); do
		qp=$(pgrep -P "$CT_PID" || true)
		[ -n "$qp" ] && [ "$(readlink "/proc/$qp/exe")" = "$(readlink -f "$QX")" ] && break
		sleep 0.1
	done
	[ -n "$qp" ] || fail "the container did not start"
	run as_service "$QEMU_JITBPF" -p "$qp" --perfmap -d 1.5
	assert_success
	grep -q ' hot_main$' "/tmp/perf-$qp.map" || fail "no hot_main in the host's map"
	nsenter -t "$qp" -m -- grep -q ' hot_main$' /tmp/perf-1.map || fail "no map in the container"
	touch "$ct/stop"
	wait "$CT_PID" || true
	CT_PID=
	rm -rf "$ct" "/tmp/perf-$qp.map"
}

@test "without any one of the unit's capabilities, the tool names it" {
	local c
	rm -f "$D/stop"
	"$QX" "$HOT" -u "$D/stop" >/dev/null 2>&1 &
	PIDS+=($!)
	sleep 0.3
	for c in $SVC_CAPS; do
		WITHOUT=$c run as_service "$QEMU_JITBPF" -p "${PIDS[0]}" --perfmap --jitdump \
			--keep-exited=1h -d 0.5
		echo "# without $c: $output" >&3
		assert_failure
		assert_output --regexp "^qemu-jitbpf: missing capability $c: needed "
	done
}
