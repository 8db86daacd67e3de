#!/usr/bin/env bats
# The fuzz targets (fuzz/*.c, make fuzz) in brief: each replays its
# checked-in seeds, then fuzzes for FUZZ_TIME seconds (3 here:
# the seeds are the regression test, make fuzz the search), under
# ASan and UBSan.  Anything they find fails the test and stays in the
# test's directory, named in the output.

load helpers

fuzz_target() { # TARGET
	[ -x "$BUILD/fuzz/bin/$1" ] || fail "$BUILD/fuzz/bin/$1 not built (make fuzzers)"
	run env FUZZ_BIN="$BUILD/fuzz/bin" FUZZ_TIME="${FUZZ_TIME:-3}" \
		"$TOP/fuzz/run.sh" "$BATS_TEST_TMPDIR" "$1"
	echo "# $output" | head -n 1 >&3
	assert_success
	assert_output --regexp "^$1: [0-9]+ runs in [0-9]+ s, cov: [0-9]+ ft: [0-9]+, corpus [0-9]+, 0 findings$"
}

@test "every fuzz target has a test here and seeds" {
	local t
	for t in "$TOP"/fuzz/*.c; do
		t=$(basename "$t" .c)
		grep -q "^@test \"fuzz $t:" "$BATS_TEST_FILENAME" || fail "no test for fuzz/$t.c"
		[ -n "$(ls "$TOP/fuzz/corpus/$t" 2>/dev/null)" ] || fail "no seeds in fuzz/corpus/$t"
	done
}

@test "fuzz symbol-map: System.map and kallsyms copies (--guest-symbols)" {
	fuzz_target symbol-map
}

@test "fuzz elf: a guest's ELF file loaded and asked for names, lines, frame rules" {
	fuzz_target elf
}

@test "fuzz lines: .debug_line sections of any content, asked for the lines of their addresses" {
	fuzz_target lines
}

@test "fuzz writers: perf map, jitdump, uftrace files of extreme names, sizes, addresses" {
	fuzz_target writers
}

@test "fuzz sets: what ran (a sparse bitmap), counts summed by key and the radix sorts, against the plainest code" {
	fuzz_target sets
}

@test "fuzz listcache: files of the listing cache, damaged any way, read or refused; a listing read is stored and read back the same" {
	fuzz_target listcache
}

@test "fuzz session: ring records of every type, any size, any order" {
	fuzz_target session
}

@test "fuzz unwind: frame pointers and CFI over any stack bytes and registers" {
	fuzz_target unwind
}

@test "fuzz report-md: --report=FILE.md of any rows, under any limit: within it, every row shown or counted" {
	fuzz_target report-md
}
