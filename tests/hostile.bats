#!/usr/bin/env bats
# Guests that give a profiler a hard time (tests/guests/hostile.c,
# many-syms.sh, elf-damage.py), with the tool attached for everything it
# writes: perf map, uftrace, profile at 999 Hz by frame pointers and by
# CFI.  The tool keeps running and exits 0, its memory stays bounded,
# QEMU's output is what it is without the tool, and what could not be
# named is said once, not once per sample.

load helpers

setup() {
	[ -x "$QEMU_JITBPF" ] || fail "make tool first"
	D=$BATS_TEST_TMPDIR
	cd "$D"
}

teardown() {
	stop_bg
	binfmt_unregister
}

# Run the tool on GUEST ARGS... under qemu-ARCH with every output, call
# graph CG; checks exit status, output, memory and warnings.  EXPECTED:
# the guest's output without the tool.  Sets $folded.
attached() { # ARCH CG EXPECTED GUEST ARGS...
	local arch=$1 cg=$2 expected=$3 rss warnings
	shift 3
	rm -rf "$D/u" "$D/p.folded"
	run /usr/bin/time -f "rss %M" -o "$D/rss" "$QEMU_JITBPF" --perfmap --uftrace="$D/u" \
		--profile="$D/p.folded" -F 999 --call-graph="$cg" -o "$D" -- \
		"$(qemu_bin 10.2.2 "$arch")" "$@"
	assert_success
	assert_line "$expected"
	rss=$(awk '$1 == "rss" { print $2 }' "$D/rss")
	warnings=$(grep -c 'warning' <<<"$output" || true)
	echo "# $arch $cg $(basename "$1") ${*:2}: ${rss} KB, $warnings warnings" >&3
	[ "$rss" -lt $((1024 * 1024)) ] || fail "the tool grew to $rss KB"
	[ "$warnings" -le 3 ] || fail "warnings for each sample? $output"
	[ -s "$D/p.folded" ] || fail "no profile"
	folded=$(cat "$D/p.folded")
}

# Samples of the folded profile whose leaf is FUNC, and all samples.
leaf_share() { # FUNC
	awk -v f="$1" '{ n = $NF; t += n; k = split($1, s, ";"); if (s[k] == f) l += n }
		END { printf "%d %d\n", l, t }' <<<"$folded"
}

@test "frame pointers in a loop, into unmapped memory, a stack at the top of the address space" {
	local arch mode cg expected l t depth
	for arch in x86_64 aarch64; do
		for mode in fploop fpwild sptop; do
			expected=$("$(qemu_bin 10.2.2 "$arch")" "$(guest "$arch" hostile)" "$mode" 700)
			for cg in fp dwarf; do
				attached "$arch" "$cg" "$expected" "$(guest "$arch" hostile)" "$mode" 700
				read -r l t < <(leaf_share bad_frames)
				[ "$l" -gt $((t / 2)) ] || fail "$arch $mode $cg: bad_frames in $l of $t samples"
				# However the chain goes, a stack ends.
				depth=$(awk '{ print split($1, s, ";") }' <<<"$folded" | sort -n | tail -n 1)
				[ "$depth" -le 140 ] || fail "$arch $mode $cg: a stack of $depth frames"
			done
		done
	done
}

@test "2000 threads at once" {
	local expected
	expected=$("$(qemu_bin 10.2.2 x86_64)" "$(guest x86_64 hostile)" threads 2000)
	attached x86_64 fp "$expected" "$(guest x86_64 hostile)" threads 2000
	run uftrace info -d "$D/u"
	assert_success
	assert_output --regexp 'number of tasks *: *2001'
	run uftrace report -d "$D/u" -s call -F worker
	assert_success
	assert_output --regexp '2000 +worker'
}

@test "a guest with a million function symbols" {
	local expected l t map
	expected=$("$(qemu_bin 10.2.2 x86_64)" "$(guest x86_64 many-syms)" 1000)
	attached x86_64 fp "$expected" "$(guest x86_64 many-syms)" 1000
	read -r l t < <(leaf_share spin)
	[ "$l" -gt $((t / 2)) ] || fail "spin in $l of $t samples"
	map=$(sed -n 's/^qemu-jitbpf: perf map: //p' <<<"$output")
	grep -qE '^[0-9a-f]+ [0-9a-f]+ f[0-9]+$' "$map" || fail "no fN in the perf map $map"
}

@test "a guest whose .symtab, .strtab or section headers are broken or cut off" {
	local mode expected
	for mode in symtab strtab tail; do
		python3 "$TOP/tests/guests/elf-damage.py" "$mode" "$(guest x86_64 hostile)" "$D/h-$mode"
		expected=$("$(qemu_bin 10.2.2 x86_64)" "$D/h-$mode" fploop 500)
		attached x86_64 dwarf "$expected" "$D/h-$mode" fploop 500
		# Said once, with the reason.
		[ "$(grep -c "warning: pid [0-9]*: $D/h-$mode: its" <<<"$output")" = 1 ] ||
			fail "$mode: $output"
	done
}

@test "a guest ELF cut short while QEMU runs it, then attached to" {
	local q size
	q=$(qemu_bin 10.2.2 x86_64)
	cp "$(guest x86_64 hostile)" "$D/h"
	python3 "$TOP/tests/guests/elf-damage.py" tail "$D/h" "$D/h-tail"
	size=$(stat -c %s "$D/h-tail")
	start_bg "$q" "$D/h" fploop 3000
	sleep 0.3
	truncate -s "$size" "$D/h"
	run "$QEMU_JITBPF" -p "$BG_PID" -d 1 --perfmap --profile="$D/p.folded" -F 999 -o "$D"
	assert_success
	wait_pid "$BG_PID" 30 "QEMU"
	[ "$WAIT_STATUS" = 0 ] || fail "QEMU exited $WAIT_STATUS: $(cat "$D/bg.err")"
	grep -q '^fploop 3000 ' "$D/bg.out" || fail "QEMU's output: $(cat "$D/bg.out")"
	[ -s "$D/p.folded" ] || fail "no profile: $output"
	assert_line --regexp "warning: pid $BG_PID: $D/h: its section headers lie outside the file"
}

@test "a guest that execs itself 300 times" {
	local n=${HOSTILE_EXECS:-300}
	binfmt_register "$(qemu_bin 10.2.2 aarch64)"
	attached aarch64 fp "exec 0 b504f32d" "$(guest aarch64 hostile)" exec "$n"
	assert_line --regexp "^qemu-jitbpf: $((n + 1)) QEMU processes \(0 forked\), $((n + 1)) perf maps, 0 jitdumps, 1 uftrace, 0 without a handshake$"
	run uftrace info -d "$D/u"
	assert_success
}
