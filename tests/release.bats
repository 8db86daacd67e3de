#!/usr/bin/env bats
# A release: make dist's tarball holds what git tracks and its version, and
# builds and passes tests from its own directory, where there is no git.

load helpers

setup() {
	D=$BATS_TEST_TMPDIR
	# A clone: make dist refuses uncommitted changes, and a tarball is made
	# of what is committed.
	git clone -q "$TOP" "$D/src"
}

@test "make dist: the files git tracks and .tarball-version, the same bytes twice; a dirty tree is refused" {
	local v tgz
	v=$("$D/src/scripts/version.sh")
	run make -C "$D/src" --no-print-directory dist
	assert_success
	tgz=$D/src/build/qemu-jitbpf-$v.tar.gz
	assert_output "$tgz"
	[ "$(tar -xzOf "$tgz" "qemu-jitbpf-$v/.tarball-version")" = "$v" ] || fail ".tarball-version"
	diff <(tar -tzf "$tgz" | grep -v '/$' | sed "s|^qemu-jitbpf-$v/||" | sort) \
		<( (git -C "$D/src" ls-files && echo .tarball-version) | sort) ||
		fail "the tarball's files are not git's"
	cp "$tgz" "$D/first.tar.gz"
	make -C "$D/src" --no-print-directory dist >/dev/null
	cmp "$tgz" "$D/first.tar.gz" || fail "two tarballs of one commit differ"
	echo "# changed" >>"$D/src/README.md"
	run make -C "$D/src" --no-print-directory dist
	assert_failure
	assert_output --partial "dist: uncommitted changes"
}

@test "the tarball builds, says its version, and its demo's test passes from its own directory" {
	local v
	v=$("$D/src/scripts/version.sh")
	make -C "$D/src" --no-print-directory dist >/dev/null
	tar -xzf "$D/src/build/qemu-jitbpf-$v.tar.gz" -C "$D"
	cd "$D/qemu-jitbpf-$v"
	[ ! -e .git ] || fail "a .git in the tarball"
	[ "$(scripts/version.sh)" = "$v" ] || fail "version in the tarball: $(scripts/version.sh)"
	# QEMU from the build cache, as the checkout's.
	make --no-print-directory qemu tool build/guests/x86_64/hot >"$D/build.log" 2>&1 ||
		fail "build: $(tail -n 20 "$D/build.log")"
	run build/bin/qemu-jitbpf --version
	assert_output "qemu-jitbpf $v"
	# (A suite of its own: none of this one's variables, nor bats' own
	# libexec first in PATH.)
	run env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="$HOME" \
		QEMU_JITBPF_CACHE="$QEMU_JITBPF_CACHE" tests/run.sh tests/demo.bats
	assert_success
	assert_line --regexp '^[1-9][0-9]* passed, 0 failed'
}
