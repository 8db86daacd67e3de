#!/usr/bin/env bats
# Source lines in the jitdump, the lines perf annotate shows beside a
# guest's code, checked instruction by instruction against elfutils'
# eu-addr2line (tests/jitdump-lines.py).  The tool reads DWARF 5 line
# tables itself (userspace/naming/lines.c) and leaves older ones to libdw.

load helpers

V=10.2.2

setup() {
	[ -x "$QEMU_JITBPF" ] || fail "make tool first"
	command -v eu-addr2line >/dev/null || fail "no eu-addr2line (make deps installs elfutils)"
	D=$BATS_TEST_TMPDIR
	cd "$D"
}

# Run COMMAND under the tool; check the lines of ELF's functions (named in
# SYMFILE).  At least MIN instructions must be checked.
check_lines() { # ELF SYMFILE MIN COMMAND...
	local elf=$1 sym=$2 min=$3 map n
	shift 3
	run "$QEMU_JITBPF" --perfmap-insn --jitdump -o "$D" -- "$@"
	assert_success
	map=$(perfmap_of "$output")
	[ -s "$map" ] || fail "no perf map: $output"
	run "$TOP/tests/jitdump-lines.py" "$D"/jit-*.dump "$map" "$elf" "$sym"
	rm -f "$map"
	echo "# $output" >&3
	assert_success
	assert_output --regexp '^[0-9]+ checked, 0 differ$'
	n=${output%% *}
	[ "$n" -ge "$min" ] || fail "only $n instructions checked"
}

@test "x86_64 guest, DWARF 5 in the file: the jitdump's lines are eu-addr2line's" {
	require_qemu "$V" x86_64
	g=$(guest x86_64 calls)
	check_lines "$g" "$g" 50 "$(qemu_bin "$V" x86_64)" "$g"
}

@test "aarch64 guest, DWARF 5 in the file: the jitdump's lines are eu-addr2line's" {
	require_qemu "$V" aarch64
	g=$(guest aarch64 calls)
	check_lines "$g" "$g" 50 "$(qemu_bin "$V" aarch64)" "$g"
}

@test "arm guest, DWARF 3 line tables (read by libdw): the jitdump's lines are eu-addr2line's" {
	require_qemu "$V" arm
	g=$(guest arm calls)
	readelf --debug-dump=rawline "$g" | grep -q 'DWARF Version: *3' || fail "not DWARF 3"
	check_lines "$g" "$g" 50 "$(qemu_bin "$V" arm)" "$g"
}

@test "python3's libc, lines from libc6-dbg's compressed debug file: eu-addr2line's" {
	require_qemu "$V" x86_64
	libc=/lib/x86_64-linux-gnu/libc.so.6
	id=$(readelf -n "$libc" | sed -n 's/.*Build ID: //p')
	dbg=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
	[ -f "$dbg" ] || fail "no $dbg (make deps installs libc6-dbg)"
	readelf -SW "$dbg" | grep -E ' \.debug_line +PROGBITS .* C ' >/dev/null ||
		fail "libc's .debug_line is not compressed"
	check_lines "$libc" "$dbg" 2000 "$(qemu_bin "$V" x86_64)" /usr/bin/python3 -c pass
}
