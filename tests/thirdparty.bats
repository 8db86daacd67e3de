#!/usr/bin/env bats
# Debian's busybox-static: a third-party x86_64 guest nobody here built.

load helpers

BUSYBOX=/bin/busybox

setup() {
	[ -x "$BUSYBOX" ] || fail "busybox-static is not installed (make deps)"
}

@test "busybox under both QEMUs: images, TB loads and unchanged output" {
	for v in 10.2.2 7.2; do
		require_qemu "$v" x86_64
		q=$(qemu_bin "$v" x86_64)
		script=$BATS_TEST_TMPDIR/script.sh
		echo 'echo $((6 * 7)); seq 3 | wc -l' >"$script"
		expected=$("$q" "$BUSYBOX" sh "$script")
		[ "$expected" = "$(printf '42\n3')" ]
		run jit_events -s -c "$q $BUSYBOX sh $script"
		assert_success
		assert_line 42
		assert_line 3
		assert_line --regexp "^[0-9]+ image path=$(readlink -f $BUSYBOX) "
		tbs=$(awk '/^@tbs:/ { print $2 }' <<<"$output")
		[ "${tbs:-0}" -gt 500 ] || fail "$v: only ${tbs:-0} TBs"
	done
}
