#!/usr/bin/env bats
# make deb: the packages as Debian's own tools judge them (lintian), then
# installed on this machine with apt, used, and purged: nothing of ours may
# stay (binfmt_misc entry, user, file).

load helpers

V=10.2.2
PKGS="qemu-jitbpf qemu-jitbpf-user-static"

setup() {
	D=$BATS_TEST_TMPDIR
	cd "$D"
}

teardown() {
	stop_bg
	# Never left installed.
	DEBIAN_FRONTEND=noninteractive apt-get purge -y -q $PKGS >/dev/null 2>&1 || true
	"$TOP/scripts/binfmt.sh" unregister qj-other-aarch64
}

debs() {
	ls "$BUILD"/deb/qemu-jitbpf_*.deb "$BUILD"/deb/qemu-jitbpf-user-static_*.deb
}

@test "make deb: lintian accepts both packages, without an error or a warning" {
	run make -C "$TOP" --no-print-directory deb
	assert_success
	[ "$(debs | wc -l)" = 2 ] || fail "$(ls "$BUILD/deb")"
	# Both are the version the tool says (scripts/version.sh).
	for f in $(debs); do
		[ "$(dpkg-deb -f "$f" Version)" = "$("$TOP/scripts/version.sh")" ] ||
			fail "$f: version $(dpkg-deb -f "$f" Version)"
	done
	run lintian --fail-on error,warning $(debs)
	echo "$output" | sed 's/^/# lintian: /' >&3
	assert_success
	# The emulators' package takes the place of Debian's qemu-user-static
	# (both provide, and conflict with, qemu-user-binfmt).
	run dpkg-deb -f "$(debs | grep user-static)" Conflicts Provides
	assert_output "Conflicts: qemu-user-binfmt
Provides: qemu-user-binfmt"
}

@test "the packages installed with apt: foreign executables run under our emulators and the installed tool, as the service's user, profiles them; a format another entry runs is left to it; purged, nothing of ours is left" {
	local f caps c u
	[ "$(debs | wc -l)" = 2 ] || make -C "$TOP" --no-print-directory deb >/dev/null
	! dpkg -s $PKGS >/dev/null 2>&1 || fail "already installed"
	[ -e /proc/sys/fs/binfmt_misc/register ] || skip "binfmt_misc is not mounted"
	# aarch64 executables already run by another entry: ours steps aside.
	"$TOP/scripts/binfmt.sh" register qj-other-aarch64 "$(qemu_bin $V aarch64)" aarch64 F
	(for f in $(debs); do dpkg-deb -c "$f"; done) | awk '{ print substr($6, 2) }' |
		grep -v '/$' >"$D/files"
	run env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(debs)
	echo "$output" | grep -E 'qemu-jitbpf|Setting up' | sed 's/^/# apt: /' >&3
	assert_success
	assert_output --partial "qemu-jitbpf-user-static: aarch64 executables are run by binfmt_misc entry qj-other-aarch64"
	[ ! -e /proc/sys/fs/binfmt_misc/qemu-jitbpf-aarch64 ] || fail "registered over another entry"
	for a in arm ppc64le riscv64 s390x; do
		f=/proc/sys/fs/binfmt_misc/qemu-jitbpf-$a
		grep -qx enabled "$f" || fail "$a: $(cat "$f" 2>&1)"
		grep -qx "interpreter /usr/libexec/qemu-jitbpf/qemu-$a-static" "$f" || fail "$a: $(cat "$f")"
		grep -q '^flags: .*F' "$f" || fail "$a: $(cat "$f")"
	done
	getent passwd qemu-jitbpf >/dev/null || fail "no user qemu-jitbpf"
	[ -f /etc/qemu-jitbpf.conf ] && [ -x /usr/bin/qemu-jitbpf ]
	/usr/bin/qemu-jitbpf --version
	man -w qemu-jitbpf >/dev/null
	# The installed tool, as the unit starts it (its user, its capabilities
	# and no others), watching the installed emulators; a riscv64
	# executable started directly, through binfmt_misc.
	caps=
	for c in $(sed -n 's/^AmbientCapabilities=//p' /lib/systemd/system/qemu-jitbpf.service); do
		c=${c#CAP_}
		caps="$caps,+${c,,}"
	done
	[ -n "$caps" ] || fail "no capabilities in the unit"
	mkdir -p "$D/state"
	chown qemu-jitbpf: "$D/state"
	f=$D
	while [ "$f" != /tmp ] && [ "$f" != / ]; do
		chmod o+x "$f"
		f=$(dirname "$f")
	done
	start_bg setpriv --reuid=qemu-jitbpf --regid=qemu-jitbpf --clear-groups --no-new-privs \
		--inh-caps=-all"$caps" --ambient-caps=-all"$caps" --bounding-set=-all"$caps" -- \
		/usr/bin/qemu-jitbpf -a -v --perfmap --profile="$D/state/p.folded" -d 12
	wait_bg_err 'attached to .* binaries' 10
	cp "$(guest riscv64 hot)" "$D/hot"
	run "$D/hot" 30000
	assert_success
	assert_output --regexp '^hot 30000 '
	wait_bg 30
	[ "$BG_STATUS" = 0 ] || fail "qemu-jitbpf: $BG_STATUS: $(cat "$D/bg.err")"
	grep -q ';hot_main' "$D/state/p.folded" || fail "$(cat "$D/state/p.folded") $(tail "$D/bg.err")"
	u=$(sed -nE 's/.*pid ([0-9]+) \(exit\): wrote .*/\1/p' "$D/bg.err" | head -n 1)
	[ -n "$u" ] && grep -q ' hot_main$' "/tmp/perf-$u.map" || fail "$(cat "$D/bg.err")"
	rm -f "/tmp/perf-$u.map"
	# Purged: no entry, user, group or file of ours; the other entry stays.
	run env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q $PKGS
	assert_success
	! ls /proc/sys/fs/binfmt_misc | grep -q '^qemu-jitbpf' || fail "$(ls /proc/sys/fs/binfmt_misc)"
	grep -qx enabled /proc/sys/fs/binfmt_misc/qj-other-aarch64
	! getent passwd qemu-jitbpf || fail "the user stayed"
	! getent group qemu-jitbpf || fail "the group stayed"
	while read -r f; do
		[ ! -e "/$f" ] && [ ! -L "/$f" ] || fail "/$f stayed"
	done <"$D/files"
	for f in /etc/qemu-jitbpf.conf /var/lib/qemu-jitbpf /var/lib/binfmts/qemu-jitbpf-arm; do
		[ ! -e "$f" ] || fail "$f stayed"
	done
}
