#!/usr/bin/env bats
# Least privilege: the service's unit as make install writes it (systemd
# accepts it, and rates its exposure), and the suite's main scenarios run
# in its sandbox as far as a test can make it without systemd as PID 1
# (as_service), QEMU running as root or in a container; without any one
# of its capabilities, the tool names what it lacks.

load helpers

V=10.2.2

setup() {
	require_qemu "$V" x86_64
	D=$BATS_TEST_TMPDIR
	QX=$(qemu_bin "$V" x86_64)
	HOT=$(guest x86_64 hot)
	PIDS=()
	install_service
	# The service has no CAP_DAC_OVERRIDE: it reaches its files (the
	# configuration below $D) as any user may.
	local d=$D
	while [ "$d" != /tmp ] && [ "$d" != / ]; do
		chmod o+x "$d"
		d=$(dirname "$d")
	done
	# Where the service's user writes (it owns it, as StateDirectory= does).
	OUT=$D/state
	mkdir -p "$OUT"
	chown "$SVC_USER:" "$OUT"
	# Its runtime directory (RuntimeDirectory=, kept across restarts).
	RUN=$D/run
	mkdir -p "$RUN"
	chown "$SVC_USER:" "$RUN"
	chmod 700 "$RUN"
}

teardown() {
	touch "$D/stop" 2>/dev/null || true
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	stop_bg
	touch "$BUILD/ct-priv/stop" 2>/dev/null || true
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

# setpriv as systemd would start the unit: its user, its capabilities
# (and those in $EXTRA, as a drop-in adds them), less those named in
# $WITHOUT (CAP_X ...), no new privileges; in PRIV.
svc_priv() {
	local c caps=""
	for c in $SVC_CAPS ${EXTRA:-}; do
		[[ " ${WITHOUT:-} " == *" $c "* ]] && continue
		c=${c#CAP_}
		caps="$caps,+${c,,}"
	done
	PRIV=(setpriv --reuid="$SVC_USER" --regid="$SVC_USER" --clear-groups --no-new-privs
		--inh-caps=-all"$caps" --ambient-caps=-all"$caps" --bounding-set=-all"$caps" --)
}

# The mounts the unit asks for, made in a mount namespace of its own
# (PrivateMounts=): /tmp and the runtime directory writable
# (ReadWritePaths=, RuntimeDirectory=, here $RUN), everything else read-
# only (ProtectSystem=strict), /sys and /proc/sys too
# (ProtectKernelTunables=), /home and /root empty (ProtectHome=yes; the
# checkout stays where it lies below them, as installed files would lie
# elsewhere).
SANDBOX_MOUNTS='
	set -e
	mount --bind /tmp /tmp
	mkdir -p /run/qemu-jitbpf
	mount --bind "$SB_RUN" /run/qemu-jitbpf
	top=$(mktemp -d /tmp/sandbox-top.XXXXXX)
	mount --bind "$SB_TOP" "$top"
	for h in /home /root; do
		[ -d "$h" ] || continue
		mount -t tmpfs -o mode=0755 tmpfs "$h"
		case $SB_TOP in "$h"/*) mkdir -p "$SB_TOP" && mount --bind "$top" "$SB_TOP" ;; esac
		mount -o remount,ro "$h"
	done
	umount "$top" && rmdir "$top"
	findmnt -rn -o TARGET | while read -r m; do
		case $m in /proc | /proc/* | /sys | /sys/* | /dev | /dev/* | /tmp | /run/qemu-jitbpf) continue ;; esac
		mount -o remount,bind,ro "$m" 2>/dev/null || true
	done
	mount --bind /sys /sys && mount -o remount,bind,ro /sys
	mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys
	exec "$@"'

# Run COMMAND as systemd would run the unit's: its mounts, a network of
# its own (PrivateNetwork=), its system call filter, address families and
# umask (tests/service-seccomp.py), its user and capabilities.
as_service() {
	svc_priv
	exec unshare --mount --net --propagation private -- env SB_RUN="$RUN" SB_TOP="$TOP" \
		/bin/sh -c "$SANDBOX_MOUNTS" sh "$TOP/tests/service-seccomp.py" "$UNIT" -- "${PRIV[@]}" "$@"
}

@test "the unit: systemd-analyze verify accepts it; least privilege, as its own user" {
	run env MANPATH="$D/usr/share/man" systemd-analyze verify "$UNIT"
	assert_success
	assert_output ''
	[ "$SVC_USER" != root ] || fail "the service runs as root"
	grep -qx 'NoNewPrivileges=yes' "$UNIT" || fail "no NoNewPrivileges"
	[ "$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT")" = "$SVC_CAPS" ] || fail "bounding set"
	[[ $SVC_EXEC == "$D/usr/bin/qemu-jitbpf --config=$D/usr/etc/qemu-jitbpf.conf" ]] || fail "$SVC_EXEC"
	# CAP_SYS_ADMIN is not among them, nor CAP_DAC_OVERRIDE (--jitdump's,
	# which the default configuration does not use).
	[[ $SVC_CAPS != *SYS_ADMIN* ]] && [[ $SVC_CAPS != *DAC_OVERRIDE* ]] || fail "$SVC_CAPS"
	! grep -qx 'jitdump' "$D/usr/etc/qemu-jitbpf.conf" || fail "the configuration writes jitdumps"
	for k in ProtectKernelTunables=yes ProtectHome=yes PrivateNetwork=yes StateDirectoryMode=0750 \
		RuntimeDirectory=qemu-jitbpf RestartPreventExitStatus=2 LimitMEMLOCK=infinity UMask=0027; do
		grep -qx "$k" "$UNIT" || fail "no $k"
	done
	grep -q '^SystemCallFilter=@system-service' "$UNIT" || fail "no system call filter"
	# systemd's own rating, as `systemd-analyze security` gives it for the
	# unit alone, and with both drop-ins (network, jitdumps).
	run systemd-analyze security --offline=yes "$UNIT"
	x=$(sed -nE 's/.*Overall exposure level for qemu-jitbpf.service: ([0-9.]+).*/\1/p' <<<"$output")
	mkdir -p "$UNIT.d"
	cp "$D/usr/share/doc/qemu-jitbpf/service.d/"*.conf "$UNIT.d/"
	run env MANPATH="$D/usr/share/man" systemd-analyze verify "$UNIT"
	assert_output ''
	run systemd-analyze security --offline=yes "$UNIT"
	y=$(sed -nE 's/.*Overall exposure level for qemu-jitbpf.service: ([0-9.]+).*/\1/p' <<<"$output")
	rm -r "$UNIT.d"
	echo "# exposure: $x; with push.conf and jitdump.conf: $y" >&3
	awk -v x="$x" 'BEGIN { exit !(x != "" && x <= 2.5) }' || fail "exposure $x"
	# A usage error exits 2, which the unit does not restart.
	run "$D/usr/bin/qemu-jitbpf" -a --interval=x
	[ "$status" = 2 ] || fail "exit $status: $output"
	echo "bogus line = " >"$D/bad.conf"
	run "$D/usr/bin/qemu-jitbpf" --config="$D/bad.conf"
	[ "$status" = 2 ] || fail "exit $status: $output"
}

@test "as the service: the kernel cache in its runtime directory is its own, trusted at its next start" {
	local before after
	rm -f "$D/stop"
	"$QX" "$HOT" -u "$D/stop" >/dev/null 2>&1 &
	PIDS+=($!)
	sleep 0.3
	run as_service "$QEMU_JITBPF" -p "${PIDS[0]}" --profile="$OUT/p.folded" -d 0.5
	assert_success
	ls -l "$RUN" | sed 's/^/# /' >&3
	[ -n "$(ls "$RUN")" ] || fail "nothing cached in the runtime directory"
	[ -z "$(find "$RUN" -type f ! -user "$SVC_USER")" ] || fail "$(ls -l "$RUN")"
	before=$(stat -c '%i %Y.%y' "$RUN"/*)
	run as_service "$QEMU_JITBPF" -p "${PIDS[0]}" --profile="$OUT/p.folded" -d 0.5
	assert_success
	after=$(stat -c '%i %Y.%y' "$RUN"/*)
	[ "$before" = "$after" ] || fail "written again: $before / $after"
	rm -f "/tmp/perf-${PIDS[0]}.map"
}

@test "as the service's user: -p on root's QEMU, perf map (root's), jitdump, profile" {
	rm -f "$D/stop"
	(cd "$D" && exec "$QX" "$HOT" -u "$D/stop") >/dev/null 2>&1 &
	PIDS+=($!)
	sleep 0.5
	# --jitdump: with the capability the drop-in jitdump.conf adds.
	EXTRA=CAP_DAC_OVERRIDE run as_service "$QEMU_JITBPF" -p "${PIDS[0]}" --perfmap --jitdump \
		--profile="$OUT/p.folded" -d 2
	echo "$output" | sed 's/^/# /' >&3
	assert_success
	[ "$(stat -c %U "/tmp/perf-${PIDS[0]}.map")" = root ] || fail "the map is not QEMU's user's"
	grep -q ' hot_main$' "/tmp/perf-${PIDS[0]}.map" || fail "no hot_main in the map"
	grep -qa hot_main "$D/jit-${PIDS[0]}.dump" || fail "no hot_main in the jitdump"
	grep -qE 'hot_main [0-9]+$' "$OUT/p.folded" || fail "no hot_main in the profile"
	rm -f "/tmp/perf-${PIDS[0]}.map"
}

# The user and capabilities alone, outside the unit's sandbox.
as_user() {
	svc_priv
	"${PRIV[@]}" "$@"
}

# The service runs -a; it launches nothing, and could not launch a QEMU:
# its MemoryDenyWriteExecute= is QEMU's too, and a JIT needs both.
@test "as the service's user, outside its unit: a launched tree traced for uftrace; the command gets no capability" {
	local out
	run as_service "$QEMU_JITBPF" -- "$QX" "$(guest x86_64 hot)" 10
	assert_failure
	assert_output --partial "mprotect failed: Operation not permitted"
	run as_user "$QEMU_JITBPF" --uftrace="$OUT/u" -- "$QX" "$(guest x86_64 forktree)" -n 2
	assert_success
	out=$(uftrace report -d "$OUT/u" -s call 2>&1)
	grep -qE ' p_tree$' <<<"$out" && grep -qE ' c_tree$' <<<"$out" || fail "$out"
	run as_user "$QEMU_JITBPF" -- sh -c 'grep ^Cap /proc/self/status'
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
	# shellcheck disable=SC2086
	start_bg as_service $SVC_EXEC -v
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
