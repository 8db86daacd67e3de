#!/bin/bash
# Build a QEMU with the qemu-jitbpf probes (or the unpatched reference).
#
#   qemu-build.sh 10.2.2|7.2 [patched|ref|static]
#                                              Debian source + probes/qemu-<ver>;
#                                              static: qemu-ARCH-static, for
#                                              binfmt_misc and containers
#   qemu-build.sh 10.2.2 stock                 unpatched, as Fedora builds its
#                                              qemu-user-static: the degraded
#                                              mode's QEMU
#   QEMU_SRC=/path qemu-build.sh custom        a user's own tree, as it is
#
# Binaries go to build/qemu-<ver>[-ref]/bin (build/qemu-custom/bin).  Built
# trees are cached under $QEMU_JITBPF_CACHE (default ~/.cache/qemu-jitbpf),
# keyed by version, flavour, configure flags and patch contents, so a second
# run does nothing.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
VERSION=${1:?usage: qemu-build.sh VERSION [patched|ref]}
FLAVOR=${2:-patched}
. "$ROOT/scripts/apt-private.sh"
# Bump when the recipe below changes in a way that changes the binaries.
RECIPE=5

# Linux-user guests: x86_64 and aarch64 for both versions.  The other
# architectures multi-arch images are built for come with 10.2.2 as
# static emulators only (qemu-ARCH-static, the flavour binfmt_misc runs
# them as): built dynamic as well, they served no test the static ones
# do not.
USER_ARCHES="x86_64 aarch64"
STATIC_ARCHES="$USER_ARCHES"
[ "$VERSION" != 10.2.2 ] || STATIC_ARCHES="$USER_ARCHES riscv64 arm ppc64le s390x"
# configure's --target-list of the linux-user emulators of ARCHES.
linux_user_targets() { # ARCH...
	local t
	t=$(printf '%s-linux-user,' "$@")
	echo "${t%,}"
}
TARGETS=$(linux_user_targets $USER_ARCHES)
# Frame pointers, as Fedora builds everything since F38: the profiler
# (--profile) then shows QEMU's own call chains, and which guest code
# called a helper.  No DWARF (-g): QEMU's frames are named from .symtab
# and unwound by .eh_frame, which stay; nothing here reads QEMU's source
# lines, and -g cost minutes of every cold build.  The reference build
# gets the same flags.
CONFIG_FLAGS="--target-list=$TARGETS --enable-trace-backends=dtrace
	--enable-plugins --disable-docs --disable-tools --disable-system
	--disable-werror --disable-debug-info --extra-cflags=-fno-omit-frame-pointer"

log() { printf 'qemu-build: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# System emulators (10.2.2): only the machines the tests boot (q35, virt:
# scripts/qemu-devices),
# and the firmware from Debian's seabios and qemu-system-data packages,
# found without -L.  7.2 stays linux-user only: a second pair of system
# emulators would add ~10 min to a cold CI run (docs/design/system-mode.md,
# "Build").
SYSTEM_TARGETS="x86_64-softmmu,aarch64-softmmu"
SYSTEM_FLAGS="--without-default-devices --with-devices-x86_64=jitbpf
	--with-devices-aarch64=jitbpf
	--firmwarepath=/usr/share/qemu:/usr/share/seabios"
DEVICES=$ROOT/scripts/qemu-devices
BINARIES=$(printf 'qemu-%s ' $USER_ARCHES)

case $VERSION in
10.2.2)
	SUITE=sid DEBVER=1:10.2.2+ds-1 DSC=qemu_10.2.2+ds-1.dsc
	CONFIG_FLAGS="${CONFIG_FLAGS/--target-list=$TARGETS/--target-list=$TARGETS,$SYSTEM_TARGETS}"
	CONFIG_FLAGS="${CONFIG_FLAGS/--disable-system/} $SYSTEM_FLAGS --disable-install-blobs"
	BINARIES="$BINARIES qemu-system-x86_64 qemu-system-aarch64"
	# The uftrace plugin (benchmark reference) exists from 9.x on.
	NINJA_EXTRA=contrib-plugins
	NEED_MESON=1
	;;
7.2)
	SUITE=bookworm DEBVER=1:7.2+dfsg-7+deb12u18 DSC=qemu_7.2+dfsg-7+deb12u18.dsc
	NINJA_EXTRA=
	NEED_MESON=0
	;;
custom)
	[ -n "${QEMU_SRC:-}" ] || die "QEMU_SRC must name a QEMU source tree"
	[ -x "$QEMU_SRC/configure" ] || die "$QEMU_SRC is not a QEMU source tree"
	NEED_MESON=0
	;;
*)
	die "unknown QEMU version '$VERSION' (10.2.2 or 7.2)"
	;;
esac
case $FLAVOR in
patched) OUT=$ROOT/build/qemu-$VERSION ;;
ref) OUT=$ROOT/build/qemu-$VERSION-ref ;;
static)
	# As Debian's qemu-user-static: linux-user only, glib linked in, no
	# plugins (they need a dynamic loader).  binfmt_misc's F flag runs it
	# inside containers, where no library of the host can be found.
	OUT=$ROOT/build/qemu-$VERSION-static
	TARGETS=$(linux_user_targets $STATIC_ARCHES)
	CONFIG_FLAGS="--target-list=$TARGETS --static --enable-trace-backends=dtrace
	--disable-plugins --disable-docs --disable-tools --disable-system
	--disable-werror --disable-debug-info --extra-cflags=-fno-omit-frame-pointer"
	# (Debian's 10.2.2 source comes without the firmware blobs.)
	[ "$VERSION" != 10.2.2 ] || CONFIG_FLAGS="$CONFIG_FLAGS --disable-install-blobs"
	BINARIES=$(printf 'qemu-%s ' $STATIC_ARCHES)
	NINJA_EXTRA=
	;;
stock)
	# Unpatched, configured as Fedora's qemu.spec configures its
	# qemu-user-static (run_configure: --enable-trace-backends=dtrace,
	# --disable-strip, -z relro -z now, --build-id; the static build:
	# --static --disable-pie --enable-linux-user, everything else off),
	# and stripped as rpm strips it into the debuginfo package: no
	# symbols, only the stapsdt notes.  No -g: the package ships none.
	[ "$VERSION" = 10.2.2 ] || die "the stock flavour is built from 10.2.2"
	OUT=$ROOT/build/qemu-$VERSION-stock
	BINARIES=$(printf "qemu-%s " $USER_ARCHES)
	CONFIG_FLAGS="--target-list=$TARGETS --static --disable-pie --enable-trace-backends=dtrace
	--disable-plugins --disable-docs --disable-tools --disable-system
	--disable-werror --disable-debug-info --disable-strip --disable-install-blobs
	--extra-cflags=-O2 --extra-cflags=-fexceptions --extra-cflags=-fstack-protector-strong
	--extra-cflags=-fasynchronous-unwind-tables --extra-cflags=-fstack-clash-protection
	--extra-cflags=-fcf-protection --extra-ldflags=-Wl,--build-id
	--extra-ldflags=-Wl,-z,relro --extra-ldflags=-Wl,-z,now"
	NINJA_EXTRA=
	;;
*) die "unknown flavour '$FLAVOR' (patched, ref, static or stock)" ;;
esac
PATCHDIR=$ROOT/probes/qemu-$VERSION

fetch_sources() {
	local dl=$CACHE/dl lock
	mkdir -p "$dl"
	# 10.2.2 and its static flavour build side by side from one download.
	exec {lock}>"$dl/.qemu-$VERSION.lock"
	flock "$lock"
	if [ ! -f "$dl/$DSC" ]; then
		log "downloading qemu=$DEBVER from $SUITE"
		apt_private "$SUITE" update >/dev/null
		(cd "$dl" && apt_private "$SUITE" source --download-only "qemu=$DEBVER" >/dev/null)
	fi
	if [ "$NEED_MESON" = 1 ] && ! ls "$dl"/meson_*_all.deb >/dev/null 2>&1; then
		log "downloading meson from $SUITE"
		apt_private "$SUITE" update >/dev/null
		(cd "$dl" && apt_private "$SUITE" download meson >/dev/null)
	fi
	exec {lock}>&-
}

if [ "$VERSION" = custom ]; then
	OUT=$ROOT/build/qemu-custom
	if ! grep -q '^tb_gen_code_done' "$QEMU_SRC/accel/tcg/trace-events"; then
		die "$QEMU_SRC lacks the qemu-jitbpf probes; apply them first:" \
			"git -C $QEMU_SRC am $ROOT/probes/qemu-<version>/*.patch"
	fi
	mkdir -p "$OUT/obj" "$OUT/bin"
	cd "$OUT/obj"
	# shellcheck disable=SC2086
	[ -f build.ninja ] || "$QEMU_SRC/configure" $CONFIG_FLAGS >configure.log
	ninja qemu-x86_64 qemu-aarch64 >ninja.log
	cp -f qemu-x86_64 qemu-aarch64 "$OUT/bin/"
	log "built $OUT/bin"
	exit 0
fi

key_input() {
	echo "recipe=$RECIPE version=$VERSION debver=$DEBVER flavor=$FLAVOR"
	echo "flags=$CONFIG_FLAGS"
	case $CONFIG_FLAGS in *with-devices-x86_64=jitbpf*) cat "$DEVICES"/*.mak ;; esac
	case $FLAVOR in ref | stock) ;; *) cat "$PATCHDIR"/*.patch ;; esac
}
KEY=$(key_input | sha256sum | cut -c1-16)
STAMP=$OUT/.build-key

have_all() {
	local suffix=
	[ "$FLAVOR" != static ] || suffix=-static
	for b in $BINARIES; do [ -x "$OUT/bin/$b$suffix" ] || return 1; done
}
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$KEY" ] && have_all; then
	[ -f "$OUT/source" ] || echo "$CACHE/dl/$DSC" >"$OUT/source"
	log "$OUT is up to date ($KEY)"
	exit 0
fi

CACHED=$CACHE/build/qemu-$VERSION-$FLAVOR-$KEY
if [ ! -f "$CACHED/.complete" ]; then
	fetch_sources
	WORK=$ROOT/build/work/qemu-$VERSION-$FLAVOR
	rm -rf "$WORK"
	mkdir -p "$WORK"
	log "unpacking $DSC with Debian's patches"
	dpkg-source -q -x "$CACHE/dl/$DSC" "$WORK/src" >/dev/null
	if [ "$FLAVOR" != ref ] && [ "$FLAVOR" != stock ]; then
		for p in "$PATCHDIR"/*.patch; do
			log "applying $(basename "$p")"
			patch -s -p1 -d "$WORK/src" <"$p" || die "patch $p does not apply"
		done
	fi
	env_meson=()
	if [ "$NEED_MESON" = 1 ]; then
		dpkg -x "$(ls "$CACHE"/dl/meson_*_all.deb | tail -n1)" "$WORK/meson"
		env_meson=(PYTHONPATH="$WORK/meson/usr/lib/python3/dist-packages")
		CONFIG_FLAGS="$CONFIG_FLAGS --python=/usr/bin/python3"
	fi
	for arch in x86_64 aarch64; do
		cp "$DEVICES/$arch-jitbpf.mak" "$WORK/src/configs/devices/$arch-softmmu/jitbpf.mak"
	done
	mkdir -p "$WORK/obj"
	log "configuring ($FLAVOR $VERSION)"
	# shellcheck disable=SC2086
	(cd "$WORK/obj" && env "${env_meson[@]}" ../src/configure $CONFIG_FLAGS \
		>configure.log 2>&1) || { tail -n 30 "$WORK/obj/configure.log"; die "configure failed"; }
	log "building $BINARIES $NINJA_EXTRA (takes minutes)"
	# shellcheck disable=SC2086
	(cd "$WORK/obj" && env "${env_meson[@]}" ninja $BINARIES \
		$NINJA_EXTRA >ninja.log 2>&1) || { tail -n 40 "$WORK/obj/ninja.log"; die "build failed"; }
	rm -rf "$CACHED.tmp"
	mkdir -p "$CACHED.tmp/bin" "$CACHED.tmp/plugins"
	for b in $BINARIES; do cp "$WORK/obj/$b" "$CACHED.tmp/bin/"; done
	[ "$FLAVOR" != stock ] || strip --strip-all "$CACHED.tmp"/bin/*
	cp "$WORK"/obj/contrib/plugins/*.so "$CACHED.tmp/plugins/" 2>/dev/null || true
	cp "$WORK/obj/configure.log" "$CACHED.tmp/"
	cp "$WORK/src/scripts/checkpatch.pl" "$CACHED.tmp/"
	touch "$CACHED.tmp/.complete"
	rm -rf "$CACHED"
	mv "$CACHED.tmp" "$CACHED"
	rm -rf "$WORK"
fi

rm -rf "$OUT"
mkdir -p "$OUT"
cp -a "$CACHED/bin" "$CACHED/plugins" "$CACHED/checkpatch.pl" "$OUT/"
if [ "$FLAVOR" = static ]; then
	# Named as Debian names them.
	for b in $BINARIES; do mv "$OUT/bin/$b" "$OUT/bin/$b-static"; done
fi
echo "$KEY" >"$STAMP"
# Where its source package is (tests/build.bats applies the upstream
# series to it).
echo "$CACHE/dl/$DSC" >"$OUT/source"
log "ready: $OUT/bin ($KEY)"
