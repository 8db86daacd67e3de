#!/usr/bin/env bats
# make demo, a newcomer's first command: tools/demo.sh on what is built.

load helpers

@test "the demo exits 0 and names the guest's hot function through the perf map and the jitdump" {
	export DEMO_DIR=$BATS_TEST_TMPDIR/demo
	run "$TOOLS/demo.sh"
	assert_success
	assert_line --regexp '^demo: OK: .*; files in '"$DEMO_DIR"'$'
	# The hottest symbol of each report, read from the files it kept.
	head -n 1 "$DEMO_DIR/report-perfmap.txt" | grep -E '\[JIT\] tid [0-9]+ +\[\.\] hot_main$' ||
		fail "perf map report: $(head -n 3 "$DEMO_DIR/report-perfmap.txt")"
	head -n 1 "$DEMO_DIR/report-jitdump.txt" | grep -E 'jitted-[0-9]+-[0-9]+\.so +\[\.\] hot_main$' ||
		fail "jitdump report: $(head -n 3 "$DEMO_DIR/report-jitdump.txt")"
	pid=$(sed -nE 's|^qemu-jitbpf: perf map: /tmp/perf-([0-9]+)\.map$|\1|p' <<<"$output")
	[ -n "$pid" ] && rm -f "/tmp/perf-$pid.map"
}

@test "the demo stops with a message and non-zero exit when a step fails" {
	# A tool that cannot attach: the demo must not carry on.
	mkdir -p "$BATS_TEST_TMPDIR/top/tools" "$BATS_TEST_TMPDIR/top/build/bin"
	cp "$TOOLS/demo.sh" "$BATS_TEST_TMPDIR/top/tools/"
	ln -s "$BUILD/qemu-10.2.2" "$BATS_TEST_TMPDIR/top/build/qemu-10.2.2"
	ln -s "$BUILD/guests" "$BATS_TEST_TMPDIR/top/build/guests"
	printf '#!/bin/sh\necho "qemu-jitbpf: cannot attach" >&2\nexit 1\n' \
		>"$BATS_TEST_TMPDIR/top/build/bin/qemu-jitbpf"
	chmod +x "$BATS_TEST_TMPDIR/top/build/bin/qemu-jitbpf"
	run "$BATS_TEST_TMPDIR/top/tools/demo.sh"
	assert_failure
	assert_output --partial "qemu-jitbpf: cannot attach"
	assert_line "demo: FAILED: qemu-jitbpf exited with status 1 before it attached"
}
