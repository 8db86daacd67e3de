#!/usr/bin/env bats
# The emulator image's entrypoint (oci/binfmt/binfmt.c), a drop-in for the
# tonistiigi/binfmt image's as docker/setup-qemu-action runs it: flags,
# status JSON on stdout alone, entries named qemu-ARCH with flags CF (P
# with QEMU_PRESERVE_ARGV0), platforms found by running a program of each.
# Here its emulators are our static QEMUs, through QEMU_BINARY_PATH.

load helpers
bats_require_minimum_version 1.5.0

V=10.2.2
BIN=$BUILD/oci/binfmt
ENTRIES="qemu-aarch64 qemu-arm qemu-riscv64 qemu-ppc64le qemu-s390x"

# A Docker daemon of the tests' own (Debian's docker.io, its classic
# builder), its socket and data under the file's directory, when the
# images are built (make oci).
setup_file() {
	local k=$BATS_FILE_TMPDIR/docker
	[ -e "$BUILD/oci/qemu-jitbpf-binfmt.tar" ] && command -v dockerd >/dev/null || return 0
	mkdir -p "$k"
	dockerd --iptables=false --bridge=none --data-root "$k/root" --exec-root "$k/exec" \
		-H "unix://$k/docker.sock" --pidfile "$k/docker.pid" >"$k/dockerd.log" 2>&1 &
	for _ in $(seq 100); do
		/usr/bin/docker -H "unix://$k/docker.sock" info >/dev/null 2>&1 && return 0
		sleep 0.2
	done
}

teardown_file() {
	local k=$BATS_FILE_TMPDIR/docker
	[ -e "$k/docker.pid" ] || return 0
	kill "$(cat "$k/docker.pid")" 2>/dev/null || true
	for _ in $(seq 100); do
		[ -e "$k/docker.pid" ] || break
		sleep 0.1
	done
	umount -R "$k/root" 2>/dev/null || true
}

# docker with the tests' daemon; skipped with why where it cannot start.
dock() {
	/usr/bin/docker -H "unix://$BATS_FILE_TMPDIR/docker/docker.sock" "$@"
}

require_docker() {
	[ -e "$BUILD/oci/qemu-jitbpf-binfmt.tar" ] || fail "no images: make oci"
	command -v dockerd >/dev/null || fail "no dockerd: make deps"
	dock info >/dev/null 2>&1 ||
		skip "dockerd does not start here: $(tail -n 1 "$BATS_FILE_TMPDIR/docker/dockerd.log")"
}

# What --privileged gives, or, where the machine's bounding set lacks a
# capability (docker 20.10 asks for all it knows), all it has.
privileged() {
	if dock run --rm --privileged qemu-jitbpf/binfmt:latest --version >/dev/null 2>&1; then
		echo --privileged
	else
		echo "--cap-add ALL --cap-drop SYS_RESOURCE --security-opt seccomp=unconfined" \
			"--security-opt apparmor=unconfined --security-opt systempaths=unconfined"
	fi
}

setup() {
	[ -x "$BIN" ] || fail "$BIN missing: make $BUILD/oci/binfmt"
	binfmt_mount
	D=$BATS_TEST_TMPDIR
	M=/proc/sys/fs/binfmt_misc
	# Another qemu-ARCH entry of the host's would be taken for ours.
	for e in $ENTRIES; do
		[ ! -e "$M/$e" ] || skip "the host has a binfmt_misc entry $e of its own"
	done
	# The emulators as the image holds them: /usr/bin/qemu-ARCH.
	mkdir -p "$D/usr/bin"
	for a in aarch64 arm riscv64 ppc64le s390x; do
		ln -s "$BUILD/qemu-$V-static/bin/qemu-$a-static" "$D/usr/bin/qemu-$a"
		[ -e "$D/usr/bin/qemu-$a" ] || fail "no static qemu-$a: make qemu"
	done
	ls "$M" >"$D/before"
}

teardown() {
	stop_bg
	for e in $ENTRIES; do
		[ ! -e "$M/$e" ] || echo -1 >"$M/$e"
	done
}

# The status JSON of stdout, as setup-qemu-action's JSON.parse reads it.
status_field() { # JSON FIELD
	/usr/bin/python3 -c '
import json, sys
v = json.loads(sys.argv[1])[sys.argv[2]]
print("null" if v is None else " ".join(v))' "$1" "$2"
}

@test "binfmt entrypoint: the status alone on stdout, as JSON; --version and logs on stderr; Go's flags" {
	run --separate-stderr "$BIN"
	assert_success
	[ -z "$stderr" ] || fail "stderr: $stderr"
	sup=$(status_field "$output" supported)
	[[ $sup == "linux/amd64 "* ]] || fail "supported: $sup"
	# The host runs i386 programs itself; no emulator of ours is there.
	for p in linux/arm64 linux/riscv64; do
		[[ " $sup " != *" $p "* ]] || fail "$p supported before any install: $sup"
	done
	run --separate-stderr "$BIN" --version
	assert_success
	[ -z "$output" ] || fail "stdout: $output"
	[[ $stderr =~ ^binfmt/qemu-jitbpf-[0-9].*\ qemu/10\.2\.2$ ]] || fail "$stderr"
	# -x and --x, a value after = or next; a bad flag is Go's usage error.
	run --separate-stderr "$BIN" -version=true
	assert_success
	[[ $stderr == binfmt/* ]] || fail "$stderr"
	run --separate-stderr "$BIN" --bogus
	assert_failure 2
	[[ $stderr == "flag provided but not defined: -bogus"* ]] || fail "$stderr"
	run --separate-stderr "$BIN" --install
	assert_failure 2
	[[ $stderr == "flag needs an argument: -install"* ]] || fail "$stderr"
}

@test "binfmt entrypoint: --install arm64 registers qemu-aarch64 (flags CF, P with QEMU_PRESERVE_ARGV0), which runs arm64 programs; --uninstall leaves the host's entries as they were" {
	run --separate-stderr env QEMU_BINARY_PATH="$D/usr/bin" QEMU_PRESERVE_ARGV0=1 \
		"$BIN" --install linux/arm64
	assert_success
	[ "$stderr" = "installing: arm64 OK" ] || fail "stderr: $stderr"
	sup=$(status_field "$output" supported)
	emu=$(status_field "$output" emulators)
	[[ " $sup " == *" linux/arm64 "* ]] || fail "supported: $sup"
	[ "$emu" = qemu-aarch64 ] || fail "emulators: $emu"
	grep -qx enabled "$M/qemu-aarch64"
	flags=$(sed -n 's/^flags: //p' "$M/qemu-aarch64")
	for f in P C F; do [[ $flags == *$f* ]] || fail "flags: $flags"; done
	grep -qx "interpreter $D/usr/bin/qemu-aarch64" "$M/qemu-aarch64"
	# Again: "already registered", not fatal; the status all the same.
	run --separate-stderr env QEMU_BINARY_PATH="$D/usr/bin" "$BIN" --install arm64
	assert_success
	[ "$stderr" = "installing: arm64 qemu-aarch64 already registered" ] || fail "$stderr"
	# An arm64 program runs, by the emulator opened at registration (F):
	# its link can go.
	rm "$D/usr/bin/qemu-aarch64"
	run "$(guest aarch64 hot)" 2000
	assert_success
	# Without QEMU_PRESERVE_ARGV0: CF.
	run --separate-stderr env QEMU_BINARY_PATH="$D/usr/bin" "$BIN" --install riscv64
	assert_success
	flags=$(sed -n 's/^flags: //p' "$M/qemu-riscv64")
	[[ $flags != *P* && $flags == *C* && $flags == *F* ]] || fail "flags: $flags"
	# A platform's name or the entry's, a glob; the rest stays.
	run --separate-stderr "$BIN" --uninstall linux/arm64,qemu-risc*
	assert_success
	[ "$stderr" = $'uninstalling: aarch64 OK\nuninstalling: qemu-riscv64 OK' ] ||
		fail "stderr: $stderr"
	[ "$(status_field "$output" emulators)" = null ] || fail "$output"
	diff "$D/before" <(ls "$M") || fail "the host's entries changed"
}

@test "binfmt entrypoint: --install all registers every emulator present but the host's own; unknown names are said, not fatal" {
	run --separate-stderr env QEMU_BINARY_PATH="$D/usr/bin" "$BIN" --install all
	assert_success
	emu=$(status_field "$output" emulators)
	[ "$emu" = "qemu-aarch64 qemu-arm qemu-ppc64le qemu-riscv64 qemu-s390x" ] ||
		fail "emulators: $emu ($stderr)"
	sup=$(status_field "$output" supported)
	for p in linux/arm64 linux/riscv64 linux/ppc64le linux/s390x linux/arm/v7 linux/arm/v6; do
		[[ " $sup " == *" $p "* ]] || fail "$p not supported: $sup"
	done
	run --separate-stderr "$BIN" --install sparc64 --uninstall nothing-here
	assert_success
	[ "$stderr" = $'uninstalling: nothing-here not found\ninstalling: sparc64 unsupported architecture: sparc64' ] ||
		fail "$stderr"
}

@test "binfmt entrypoint: --mount DIR where binfmt_misc is not mounted mounts it there for the run, and unmounts it" {
	mkdir "$D/mnt"
	run --separate-stderr "$BIN" --mount "$D/mnt"
	assert_success
	[[ $(status_field "$output" supported) == linux/amd64* ]] || fail "$output"
	! mountpoint -q "$D/mnt" || fail "$D/mnt still mounted"
	[ -z "$(ls -A "$D/mnt")" ] || fail "$D/mnt: $(ls -A "$D/mnt")"
}

@test "-a on an entry registered with F whose emulator's path names nothing any more (an emulator image's, gone): each QEMU it starts seen from its first block" {
	local p
	run env QEMU_BINARY_PATH="$D/usr/bin" "$BIN" --install arm64
	assert_success
	rm "$D/usr/bin/qemu-aarch64"
	start_bg "$QEMU_JITBPF" -a -v --perfmap
	wait_bg_err 'attached to .* binaries' 10
	grep -q "binfmt_misc qemu-aarch64: the emulator it opened ($D/usr/bin/qemu-aarch64 when registered) is /proc/self/fd/" "$D/bg.err" ||
		fail "$(cat "$D/bg.err")"
	"$(guest aarch64 hot)" 20000 >/dev/null &
	p=$!
	wait "$p"
	kill -INT "$BG_PID"
	wait_bg 60
	[ "$BG_STATUS" = 0 ] || fail "$(cat "$D/bg.err")"
	# Its first block, _start's, and its hot functions, named.
	grep -q ' _start$' "/tmp/perf-$p.map" || fail "no _start: $(head -n 5 "/tmp/perf-$p.map")"
	grep -q ' hot_main$' "/tmp/perf-$p.map" || fail "no hot_main"
	# Followed from its start: no handshake asked of it (one is, of a QEMU
	# met late, as -p does).
	! grep -q 'attach request' "$D/bg.err" || fail "$(cat "$D/bg.err")"
	rm -f "/tmp/perf-$p.map"
}

@test "the images: docker load takes both archives; the emulator image as setup-qemu-action runs it installs arm64, and a docker build FROM an arm64 image runs its RUN steps through it; --uninstall leaves the host's entries" {
	local priv
	require_docker
	run dock load -i "$BUILD/oci/qemu-jitbpf-binfmt.tar"
	assert_success
	assert_line "Loaded image: qemu-jitbpf/binfmt:latest"
	run dock load -i "$BUILD/oci/qemu-jitbpf.tar"
	assert_success
	assert_line "Loaded image: qemu-jitbpf/qemu-jitbpf:latest"
	run dock run --rm qemu-jitbpf/qemu-jitbpf:latest --version
	assert_success
	assert_output --regexp '^qemu-jitbpf [0-9]'
	priv=$(privileged)
	[ "$priv" = --privileged ] ||
		echo "# --privileged refused here (the bounding set lacks CAP_SYS_RESOURCE): $priv" >&3
	# setup-qemu-action's three runs: --version, --install, the status.
	run --separate-stderr dock run --rm $priv qemu-jitbpf/binfmt:latest --version
	assert_success
	[[ $stderr == binfmt/qemu-jitbpf-* ]] || fail "$stderr"
	run --separate-stderr dock run --rm $priv qemu-jitbpf/binfmt:latest --install arm64
	assert_success
	[ "$stderr" = "installing: arm64 OK" ] || fail "$stderr"
	run --separate-stderr dock run --rm $priv qemu-jitbpf/binfmt:latest
	assert_success
	[[ " $(status_field "$output" supported) " == *" linux/arm64 "* ]] || fail "$output"
	[ "$(status_field "$output" emulators)" = qemu-aarch64 ] || fail "$output"
	grep -qx "interpreter /usr/bin/qemu-aarch64" "$M/qemu-aarch64"
	flags=$(sed -n 's/^flags: //p' "$M/qemu-aarch64")
	for f in P C F; do [[ $flags == *$f* ]] || fail "flags: $flags"; done
	# An arm64 image (a root of Debian's static arm64 busybox, imported:
	# docker 20.10 calls it amd64), built FROM; its RUN steps are arm64
	# programs, run by the emulator that the image, gone, left open.
	mkdir -p "$D/root/bin"
	cp "$BUILD/guests/aarch64/busybox" "$D/root/bin/busybox"
	for c in sh echo uname md5sum; do ln -s busybox "$D/root/bin/$c"; done
	tar -C "$D/root" -c . | dock import - arm64-busybox:test >/dev/null
	mkdir -p "$D/ctx"
	cp "$(guest aarch64 hot)" "$D/ctx/hot"
	cat >"$D/ctx/Dockerfile" <<'DF'
FROM arm64-busybox:test
COPY hot /bin/hot
RUN uname -m > /machine && hot 20000 > /hot.out
RUN echo built by $(cat /machine) | md5sum > /sum
DF
	run dock build -t arm64-built:test "$D/ctx"
	assert_success
	run dock run --rm arm64-built:test sh -c 'cat /machine; cat /sum'
	assert_success
	assert_line aarch64
	run dock run --rm $priv qemu-jitbpf/binfmt:latest --uninstall qemu-aarch64
	assert_success
	diff "$D/before" <(ls "$M") || fail "the host's entries changed"
}
