#!/usr/bin/env bats
# What only some guest architectures have: Arm's two instruction sets and
# its APCS frames, and on every foreign architecture a program nobody
# here built (Debian's busybox-static, stripped).  The matrix
# (tests/matrix) runs everything else on each architecture.

load helpers

V=10.2.2

setup() {
	[ -x "$QEMU_JITBPF" ] || fail "make tool first"
	D=$BATS_TEST_TMPDIR
	cd "$D"
}

teardown() {
	stop_bg
}

@test "arm: Thumb-2 code's calls and returns counted as native uftrace counts them" {
	require_qemu "$V" arm
	uftrace record -d native "$BUILD/guests/native/calls-pg" count 300 >/dev/null
	run "$QEMU_JITBPF" --uftrace="$D/q" -- "$(qemu_bin "$V" arm)" "$(guest arm calls-thumb)" count 300
	assert_success
	assert_line --regexp '^calls 300 -?[0-9]+$'
	# Thumb code it is: function symbols have bit 0 set.
	nm "$(guest arm calls-thumb)" | grep -qE '^[0-9a-f]*[13579bdf] [tT] cg_leaf$' ||
		fail "cg_leaf is not Thumb code"
	expected=$(uftrace_counts native)
	actual=$(uftrace_counts "$D/q")
	echo "# $(echo $actual)" >&3
	[ -n "$expected" ] && [ "$actual" = "$expected" ] ||
		fail "counts differ: expected $(echo $expected), got $(echo $actual)"
}

@test "arm: APCS frames (-mapcs-frame) give the known call tree by frame pointers" {
	require_qemu "$V" arm
	run "$QEMU_JITBPF" --profile="$D/p.folded" -F 999 -- \
		"$(qemu_bin "$V" arm)" "$(guest arm tree-apcs)" 150000
	assert_success
	pid=$(head -n1 "$D/p.folded" | sed -E 's/^[^;]*-([0-9]+);.*/\1/')
	check_tree "$D/p.folded" "$pid" arm
}

# Lines of a perf map (the prologue aside), and how many are busybox's.
map_in_busybox() { # MAP
	awk '$3 != "qemu-tcg-prologue" { n++; if ($3 ~ /^busybox\+0x/) b++ } END { print n, b + 0 }' "$1"
}

# Debian's busybox-static keeps no symbol; its unwind tables say where
# functions start (named busybox+0xSTART), the rest is named by address.
@test "busybox-static of each architecture, a shell loop: samples and perf map named in busybox" {
	for a in aarch64 riscv64 arm ppc64le s390x; do
		require_qemu "$V" "$a"
		bb=$D/$a/busybox
		mkdir -p "$D/$a"
		cp "$(guest "$a" busybox)" "$bb"
		run "$QEMU_JITBPF" --perfmap --profile="$D/$a/p.folded" -F 999 -- \
			"$(qemu_bin "$V" "$a")" "$bb" sh -c \
			'i=0; while [ $i -lt 40000 ]; do i=$((i + 1)); done; echo $i'
		assert_success
		assert_line 40000
		# The guest leaf: the last frame without a _[q] or _[k] mark.
		read -r total named fns < <(awk '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";")
			leaf = ""; for (i = 2; i <= k; i++) if (f[i] !~ /_\[[qk]\]$/) leaf = f[i]
			total += n; if (leaf ~ /^busybox\+0x[0-9a-f]+$/) { named += n; fn[leaf] = 1 } }
			END { print total, named + 0, length(fn) }' "$D/$a/p.folded")
		map=$(perfmap_of "$output")
		mv "$map" "$D/$a/"
		map=$D/$a/${map##*/}
		read -r lines inbb < <(map_in_busybox "$map")
		echo "# $a: $named of $total samples in $fns places of busybox; perf map $inbb of $lines" >&3
		[ "$total" -ge 200 ] || fail "$a: only $total samples"
		[ $((named * 100)) -ge $((total * 90)) ] ||
			fail "$a: $named of $total samples named; the tool said: $(tail -n 6 <<<"$output")
the hottest stacks without a busybox leaf: $(awk '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
	k = split(s, f, ";"); leaf = ""; for (i = 2; i <= k; i++) if (f[i] !~ /_\[[qk]\]$/) leaf = f[i]
	if (leaf !~ /^busybox\+0x/) print n "\t" s }' "$D/$a/p.folded" | sort -nr | head -n 3)"
		[ $((inbb * 100)) -ge $((lines * 90)) ] || fail "$a: $inbb of $lines map lines named"
	done
}

@test "the static emulators of every architecture: a busybox loop launched under each is named" {
	for a in riscv64 arm ppc64le s390x; do
		q=$BUILD/qemu-$V-static/bin/qemu-$a-static
		[ -x "$q" ] || fail "$q is not built (make qemu)"
		mkdir -p "$D/$a"
		cp "$(guest "$a" busybox)" "$D/$a/busybox"
		run "$QEMU_JITBPF" --perfmap -- "$q" "$D/$a/busybox" sh -c \
			'i=0; while [ $i -lt 5000 ]; do i=$((i + 1)); done; echo $i'
		assert_success
		assert_line 5000
		map=$(perfmap_of "$output")
		read -r lines inbb < <(map_in_busybox "$map")
		rm -f "$map"
		echo "# $a static: perf map $inbb of $lines named in busybox" >&3
		[ "$lines" -ge 500 ] && [ $((inbb * 100)) -ge $((lines * 90)) ] ||
			fail "$a: $inbb of $lines map lines named"
	done
}
