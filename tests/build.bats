#!/usr/bin/env bats
# The build: patch series style, cached QEMU builds, dependencies.

load helpers

# QEMU's checkpatch.pl CP passes PATCH.  New files are covered by
# MAINTAINERS patterns that checkpatch does not look at; nothing else may
# warn.
checkpatch_clean() { # CP PATCH
	run perl "$1" --no-tree "$2"
	assert_success
	assert_output --partial "total: 0 errors"
	if ! grep -q "total: 0 errors, 0 warnings" <<<"$output"; then
		assert_output --partial "total: 0 errors, 1 warnings"
		assert_output --partial "Does MAINTAINERS need updating?"
	fi
}

@test "every patch of both series passes QEMU's checkpatch.pl" {
	for v in 10.2.2 7.2; do
		cp=$BUILD/qemu-$v/checkpatch.pl
		[ -f "$cp" ] || fail "$cp missing: make qemu QEMU_VERSION=$v"
		for p in "$TOP"/probes/qemu-$v/*.patch; do
			checkpatch_clean "$cp" "$p"
		done
	done
}

@test "the upstream series passes checkpatch.pl, applies to 10.2.2, and documents its events" {
	local cp=$BUILD/qemu-10.2.2/checkpatch.pl n=0 e
	[ -f "$cp" ] || fail "$cp missing: make qemu"
	rm -rf "$BATS_TEST_TMPDIR/src"
	[ -f "$BUILD/qemu-10.2.2-stock/source" ] || fail "make qemu-stock first"
	dpkg-source -q -x "$(cat "$BUILD/qemu-10.2.2-stock/source")" "$BATS_TEST_TMPDIR/src" >/dev/null 2>&1 ||
		fail "cannot unpack Debian's 10.2.2 source"
	for p in "$TOP"/probes/upstream/[0-9]*.patch; do
		case $p in */0000-cover-letter.patch) continue ;; esac
		n=$((n + 1))
		checkpatch_clean "$cp" "$p"
		run patch -s -p1 -d "$BATS_TEST_TMPDIR/src" -i "$p"
		assert_success
	done
	[ "$n" -ge 3 ] || fail "$n patches"
	grep -q '^Subject: \[PATCH 0/' "$TOP/probes/upstream/0000-cover-letter.patch"
	# Every event the series adds is in the page it adds to docs/devel.
	for e in $(cat "$TOP"/probes/upstream/[0-9]*.patch | sed -nE 's/^\+([a-z_]+)\(.*\) ".*/\1/p'); do
		grep -q "^\`\`$e(" "$BATS_TEST_TMPDIR/src/docs/devel/tcg-profiling.rst" || fail "$e is not documented"
	done
}

@test "the series are one logical change per patch, each signed off" {
	for v in qemu-10.2.2 qemu-7.2 upstream; do
		for p in "$TOP"/probes/$v/*.patch; do
			case $p in */0000-cover-letter.patch) continue ;; esac
			run grep -c '^Signed-off-by: ' "$p"
			assert_output 1
			run grep -c '^Subject: \[PATCH' "$p"
			assert_output 1
		done
	done
}

@test "a second 'make qemu' does nothing" {
	for v in 10.2.2 7.2; do
		b=$BUILD/qemu-$v/bin/qemu-x86_64
		before=$(stat -c %Y.%i "$b")
		run make -C "$TOP" --no-print-directory qemu QEMU_VERSION=$v
		assert_success
		assert_output --partial "is up to date"
		[ "$(stat -c %Y.%i "$b")" = "$before" ]
	done
}

@test "the build rejects an unknown QEMU version with one line" {
	run "$TOP/scripts/qemu-build.sh" 9.9
	assert_failure
	assert_output "qemu-build: error: unknown QEMU version '9.9' (10.2.2 or 7.2)"
}

@test "QEMU_SRC must be a QEMU tree carrying the probes" {
	run make -C "$TOP" --no-print-directory qemu QEMU_SRC="$BATS_TEST_TMPDIR"
	assert_failure
	assert_output --partial "is not a QEMU source tree"
	mkdir -p "$BATS_TEST_TMPDIR/q/accel/tcg"
	printf '#!/bin/sh\n' >"$BATS_TEST_TMPDIR/q/configure"
	chmod +x "$BATS_TEST_TMPDIR/q/configure"
	: >"$BATS_TEST_TMPDIR/q/accel/tcg/trace-events"
	run make -C "$TOP" --no-print-directory qemu QEMU_SRC="$BATS_TEST_TMPDIR/q"
	assert_failure
	assert_output --partial "lacks the qemu-jitbpf probes"
}

@test "make deps is idempotent" {
	run "$TOP/scripts/deps.sh"
	assert_success
	assert_output "deps: all packages present"
}

@test "C sources follow the checked-in clang-format style" {
	# One clang-format for all: it names each file and line that differs.
	run clang-format --style=file:"$TOP/.clang-format" --dry-run -Werror \
		"$TOP"/userspace/*.[ch] "$TOP"/userspace/*/*.[ch] "$TOP"/bpf/*.[ch] "$TOP"/fuzz/*.[ch] \
		"$TOP"/fuzz/seeds/*.c "$TOP"/oci/*/*.c
	assert_success
	assert_output ""
}

# userspace/ is grouped by layer, lowest first: util, naming, writers and
# profiler and coverage (side by side), report and stacks and push (side by
# side, on the profiler), engine, cli, main.c (docs/design/README.md).
layer() { # FOLDER
	case $1 in
	util) echo 0 ;; naming) echo 1 ;; writers | profiler | coverage) echo 2 ;;
	report | stacks | push) echo 3 ;; engine) echo 4 ;; cli) echo 5 ;; main) echo 6 ;; *) echo 9 ;;
	esac
}

@test "userspace layers: no file includes a higher layer or a sibling" {
	local f from inc to bad=
	for f in "$TOP"/userspace/*/*.[ch] "$TOP"/userspace/main.c; do
		from=$(basename "$(dirname "$f")")
		[ "$f" != "$TOP/userspace/main.c" ] || from=main
		[ "$(layer "$from")" != 9 ] || fail "$f: in no layer"
		for inc in $(sed -nE 's/^#include "([a-z]+)\/.*/\1/p' "$f"); do
			to=$(layer "$inc")
			if [ "$to" -gt "$(layer "$from")" ] ||
				{ [ "$to" = "$(layer "$from")" ] && [ "$inc" != "$from" ]; }; then
				bad="$bad ${f#$TOP/} includes $inc/;"
			fi
		done
	done
	[ -z "$bad" ] || fail "$bad"
}

@test "the layer map of docs/design/README.md names every source file of userspace/" {
	local f missing=
	for f in "$TOP"/userspace/*/*.c; do
		grep -qF "\`$(basename "$f")\`" "$TOP/docs/design/README.md" ||
			missing="$missing ${f#"$TOP"/}"
	done
	[ -z "$missing" ] || fail "not in the layer map of docs/design/README.md:$missing"
}

@test "main() only parses: at most 120 lines; no userspace file above 700 but tables a script writes" {
	local n f
	n=$(awk '/^int main\(/ { s = NR } s && /^}/ { print NR - s + 1; exit }' "$TOP/userspace/main.c")
	echo "# main(): $n lines" >&3
	[ -n "$n" ] && [ "$n" -le 120 ] || fail "main() has $n lines"
	for f in "$TOP"/userspace/*/*.[ch] "$TOP"/userspace/main.c; do
		sed -n 2p "$f" | grep -q '^/\* Written by scripts/' && continue
		n=$(wc -l <"$f")
		[ "$n" -le 700 ] || fail "${f#$TOP/} has $n lines"
	done
}

@test "the system call names checked in are those the kernel headers of the cross compilers give" {
	(cd "$TOP" && scripts/syscall-table.sh "$BATS_TEST_TMPDIR/table.h")
	cmp "$BATS_TEST_TMPDIR/table.h" "$TOP/userspace/naming/syscall-table.h" ||
		fail "run scripts/syscall-table.sh"
}
