#!/bin/bash
# Build a private, static libbpf newer than Debian 12's 1.1: from 1.3 on,
# libbpf attaches USDT probes through multi-uprobe links (one link and one
# RCU grace period per program, rather than one per probe site), which is
# what keeps attach and detach cheap (docs/design/engine.md, "Stopping").
# The source comes from Debian's archive through a private apt
# configuration; the result is cached, keyed by version, and copied to
# build/libbpf:
#   build/libbpf/include/{bpf,linux}/...   build/libbpf/lib/libbpf.a
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/apt-private.sh"
VERSION=1.7.0
DEBVER=1.7.0-1
SUITE=sid
OUT=$ROOT/build/libbpf
CACHED=$CACHE/libbpf-$DEBVER

log() { printf 'libbpf-build: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

if [ -f "$OUT/.version" ] && [ "$(cat "$OUT/.version")" = "$DEBVER" ]; then
	exit 0
fi
if [ ! -f "$CACHED/.complete" ]; then
	dl=$CACHE/dl
	mkdir -p "$dl"
	if [ ! -f "$dl/libbpf_$DEBVER.dsc" ]; then
		log "downloading libbpf=$DEBVER from $SUITE"
		apt_private "$SUITE" update >/dev/null
		(cd "$dl" && apt_private "$SUITE" source --download-only "libbpf=$DEBVER" >/dev/null) ||
			die "cannot download libbpf $DEBVER"
	fi
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	tar -xzf "$dl/libbpf_$VERSION.orig.tar.gz" -C "$work"
	log "building libbpf $VERSION (static)"
	make -s -C "$work/libbpf-$VERSION/src" -j"$(nproc)" BUILD_STATIC_ONLY=1 \
		OBJDIR="$work/obj" DESTDIR="$work/root" PREFIX= LIBDIR=/lib \
		install install_uapi_headers >"$work/build.log" 2>&1 ||
		{ tail -n 20 "$work/build.log"; die "build failed"; }
	rm -rf "$CACHED.tmp"
	mkdir -p "$CACHED.tmp"
	cp -a "$work/root/include" "$work/root/lib" "$CACHED.tmp/"
	touch "$CACHED.tmp/.complete"
	rm -rf "$CACHED"
	mv "$CACHED.tmp" "$CACHED"
fi
rm -rf "$OUT"
mkdir -p "$OUT"
cp -a "$CACHED/include" "$CACHED/lib" "$OUT/"
echo "$DEBVER" >"$OUT/.version"
log "ready: $OUT ($DEBVER)"
