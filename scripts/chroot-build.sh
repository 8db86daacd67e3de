#!/bin/bash
# A build emulated as `docker buildx --platform linux/arm64` runs one: an
# arm64 Debian root file system made by debootstrap --foreign from Debian's
# archive, completed under our static qemu-aarch64 through binfmt_misc (flag
# F: the emulator is opened at registration, so the root needs no copy of
# it), in which sh, make, gcc, cc1, as and ld are all emulated.  What it
# builds is Debian's zlib sources, nobody's here.
#
#   scripts/chroot-build.sh root [DIR]    make the root (once: debootstrap's
#                                         two stages, gcc and make in it,
#                                         zlib's sources in /src)
#   scripts/chroot-build.sh build [DIR] [-- TOOL-ARGS...]
#                                         build zlib in it from clean; with
#                                         TOOL-ARGS, under `qemu-jitbpf -a
#                                         TOOL-ARGS` attached to every QEMU;
#                                         says its wall time, the CPU of
#                                         the build (wait4) and the tool
#   scripts/chroot-build.sh build-cross [DIR] [-- TOOL-ARGS...]
#                                         the same build with its compiler
#                                         native: the host's
#                                         aarch64-linux-gnu-gcc with the
#                                         root as its sysroot (as a cross
#                                         build stage of docker buildx
#                                         does); make native too; only the
#                                         test program runs emulated
#   scripts/chroot-build.sh run [DIR] -- COMMAND...
#                                         COMMAND in the root (emulated)
#
# DIR defaults to build/chroot-arm64.  Root; make tool qemu first.
# The binfmt entry is jitbpf-chroot-aarch64, removed at the end of each
# command.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/apt-private.sh
. "$ROOT/scripts/apt-private.sh"
QEMU=$ROOT/build/qemu-10.2.2-static/bin/qemu-aarch64-static
TOOL=$ROOT/build/bin/qemu-jitbpf
NAME=jitbpf-chroot-aarch64
SUITE=bookworm

die() { echo "chroot-build: $*" >&2; exit 1; }

cmd=${1:-}
[ $# -gt 0 ] && shift
DIR=$ROOT/build/chroot-arm64
if [ $# -gt 0 ] && [ "$1" != -- ]; then DIR=$1; shift; fi
[ "${1:-}" = -- ] && shift

[ -x "$QEMU" ] || die "no $QEMU: make qemu first"
command -v debootstrap >/dev/null || die "no debootstrap: make deps first"

register() {
	"$ROOT/scripts/binfmt.sh" register "$NAME" "$QEMU" aarch64 F
	trap '"$ROOT/scripts/binfmt.sh" unregister "$NAME" || true' EXIT
}

# COMMAND... in the root, with /proc and /dev, in a mount namespace of its
# own (nothing stays mounted when it ends).
in_root() {
	unshare -m --propagation private sh -c '
		d=$1; shift
		mount -t proc proc "$d/proc"
		mount --rbind /dev "$d/dev"
		exec chroot "$d" "$@"' sh "$DIR" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 "$@"
}

# CPU: the seconds of the children this shell has waited for, user + sys
# (times runs in this shell: in a $(...) it would count the subshell's).
cpu_now() {
	local f
	f=$(mktemp)
	times >"$f"
	CPU=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%.3f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$f")
	rm -f "$f"
}

case $cmd in
root)
	if [ ! -e "$DIR/debootstrap/debootstrap" ] && [ ! -x "$DIR/usr/bin/gcc" ]; then
		mkdir -p "$DIR"
		debootstrap --foreign --arch=arm64 --variant=minbase \
			--include=gcc,make,libc6-dev "$SUITE" "$DIR" "$MIRROR"
	fi
	register
	if [ -e "$DIR/debootstrap/debootstrap" ]; then
		in_root /debootstrap/debootstrap --second-stage
	fi
	if [ ! -d "$DIR/src/zlib" ]; then
		src=$CACHE/dl/zlib-source
		mkdir -p "$src"
		(cd "$src" && { ls zlib_*.dsc >/dev/null 2>&1 ||
			apt_private "$SUITE" source --download-only zlib >/dev/null; })
		rm -rf "$DIR/src/zlib.tmp"
		mkdir -p "$DIR/src"
		dpkg-source -q -x "$(ls "$src"/zlib_*.dsc | head -1)" "$DIR/src/zlib.tmp" >/dev/null
		mv "$DIR/src/zlib.tmp" "$DIR/src/zlib"
	fi
	in_root gcc --version | head -1
	;;
build | build-cross)
	[ -x "$DIR/usr/bin/gcc" ] && [ -d "$DIR/src/zlib" ] || die "no root in $DIR: run 'root' first"
	register
	rm -rf "$DIR/work"
	cp -a "$DIR/src/zlib" "$DIR/work"
	sync
	build='cd /work && ./configure >/dev/null && make -s -j2 libz.a example minigzip >/dev/null && ./example >/dev/null'
	if [ "$cmd" = build-cross ]; then
		command -v aarch64-linux-gnu-gcc >/dev/null || die "no aarch64-linux-gnu-gcc: make deps first"
		# configure and make on the host, the compiler and linker
		# native; then the test program, emulated, in the root.
		build="cd '$DIR/work' && CC=aarch64-linux-gnu-gcc CFLAGS='-O3 --sysroot=$DIR' \
			LDFLAGS='--sysroot=$DIR' AR=aarch64-linux-gnu-ar RANLIB=aarch64-linux-gnu-ranlib \
			./configure >/dev/null && make -s -j2 libz.a example minigzip >/dev/null"
	fi
	if [ $# -gt 0 ]; then
		[ -x "$TOOL" ] || die "no $TOOL: make tool first"
		log=$(mktemp)
		"$TOOL" -a -v --qemu "$QEMU" "$@" 2>"$log" &
		tool=$!
		# Every QEMU from the time it says it attached is seen.
		for _ in $(seq 300); do
			grep -q 'attached to .* binaries' "$log" && break
			[ -e "/proc/$tool" ] || { cat "$log" >&2; die "the tool exited before the build"; }
			sleep 0.1
		done
	fi
	rc=0
	t0=$(date +%s.%N)
	cpu_now
	cpu0=$CPU
	if [ "$cmd" = build-cross ]; then
		sh -c "$build" && in_root sh -c 'cd /work && ./example >/dev/null' || rc=$?
	else
		in_root sh -c "$build" || rc=$?
	fi
	t1=$(date +%s.%N)
	cpu_now
	cpu1=$CPU
	tool_cpu=0
	if [ $# -gt 0 ]; then
		kill -INT "$tool"
		wait "$tool" || [ "$rc" -ne 0 ] || rc=$?
		cpu_now
		tool_cpu=$(echo "$CPU - $cpu1" | bc -l)
		# (-v's log: kept for a failure, or in TOOL_LOG; a report is best
		# written to a FILE.)
		[ "$rc" -eq 0 ] || cat "$log" >&2
		[ -z "${TOOL_LOG:-}" ] || cp "$log" "$TOOL_LOG"
		rm -f "$log"
	fi
	# The build's CPU: every process of it, as wait4() counts them.
	printf 'chroot-build: %.2f s wall, %.2f s of CPU in the build, %.2f s in the tool\n' \
		"$(echo "$t1 - $t0" | bc -l)" "$(echo "$cpu1 - $cpu0" | bc -l)" "$tool_cpu" >&2
	exit "$rc"
	;;
run)
	[ -x "$DIR/usr/bin/gcc" ] || die "no root in $DIR: run 'root' first"
	register
	in_root "$@"
	;;
*)
	echo "usage: chroot-build.sh root|build|build-cross|run [DIR] [-- ARGS...]" >&2
	exit 2
	;;
esac
