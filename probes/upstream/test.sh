#!/bin/bash
# Apply the upstream series (probes/upstream/*.patch) to a QEMU tree, check
# it with QEMU's own checkpatch, build the linux-user emulators with the
# dtrace backend, run QEMU's own tests, and see each new probe fire.
#
#   probes/upstream/test.sh                 Debian's 10.2.2 source (as
#                                           scripts/qemu-build.sh gets it)
#   QEMU_SRC=~/src/qemu probes/upstream/test.sh
#                                           a git checkout (master, which
#                                           the series is based on): it
#                                           goes on with git am, on a
#                                           branch of its own
#   TESTS="check-tcg"                       QEMU's make targets to run
#                                           (default: check check-tcg)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SERIES=$ROOT/probes/upstream
. "$ROOT/scripts/apt-private.sh"
WORK=${WORK:-$ROOT/build/upstream}
TESTS=${TESTS:-check check-tcg}
TARGETS=x86_64-linux-user,aarch64-linux-user

log() { printf 'upstream: %s\n' "$*" >&2; }
# The patches, without the cover letter.
PATCHES=()
for p in "$SERIES"/[0-9][0-9][0-9][0-9]-*.patch; do
	case $p in */0000-*) ;; *) PATCHES+=("$p") ;; esac
done
die() { log "error: $*"; exit 1; }
# Debian's 10.2.2 source, as the other builds get it, unpacked into DIR.
debian_source() { # DIR
	"$ROOT/scripts/qemu-build.sh" 10.2.2 stock >/dev/null
	dpkg-source -q -x "$CACHE/dl/qemu_10.2.2+ds-1.dsc" "$1" >/dev/null
}

env_meson=()
if [ "${REUSE:-0}" = 1 ] && [ -x "$WORK/obj/qemu-x86_64" ]; then
	# (REUSE=1: the tests again, on the tree the last run built.)
	SRC=${QEMU_SRC:-$WORK/src}
	[ -d "$WORK/meson" ] && env_meson=(PYTHONPATH="$WORK/meson/usr/lib/python3/dist-packages")
else
rm -rf "$WORK"
mkdir -p "$WORK"
if [ -n "${QEMU_SRC:-}" ]; then
	[ -d "$QEMU_SRC/.git" ] || die "$QEMU_SRC is not a git checkout of QEMU"
	SRC=$QEMU_SRC
	git -C "$SRC" checkout -q -b "qemu-jitbpf-upstream-$$"
	git -C "$SRC" am -q "${PATCHES[@]}" || die "the series does not apply to $SRC"
	log "on $(git -C "$SRC" log -1 --format='%h (%cs) %s' HEAD~${#PATCHES[@]}), VERSION $(cat "$SRC/VERSION")"
	# A checkout whose subprojects were never downloaded, on a machine
	# that cannot download them: take those whose wrap is the same as
	# in Debian's 10.2.2 source (the release tarball carries them).
	missing=()
	for w in keycodemapdb berkeley-softfloat-3 berkeley-testfloat-3; do
		[ -e "$SRC/subprojects/$w/meson.build" ] || missing+=("$w")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		debian_source "$WORK/debian-src"
		for w in "${missing[@]}"; do
			cmp -s "$SRC/subprojects/$w.wrap" "$WORK/debian-src/subprojects/$w.wrap" ||
				die "subprojects/$w is missing and its wrap is not 10.2.2's: meson subprojects download"
			cp -a "$WORK/debian-src/subprojects/$w" "$SRC/subprojects/$w"
			log "subprojects/$w from Debian's 10.2.2 source (the same wrap)"
		done
	fi
else
	# Debian's 10.2.2 (its meson too).
	debian_source "$WORK/src"
	SRC=$WORK/src
	for p in "${PATCHES[@]}"; do
		patch -s -p1 -d "$SRC" <"$p" || die "$(basename "$p") does not apply"
	done
	dpkg -x "$(ls "$CACHE"/dl/meson_*_all.deb | tail -n1)" "$WORK/meson"
	env_meson=(PYTHONPATH="$WORK/meson/usr/lib/python3/dist-packages")
fi

log "checkpatch"
for p in "${PATCHES[@]}"; do
	out=$(perl "$SRC/scripts/checkpatch.pl" --no-tree "$p" 2>&1) ||
		die "$(basename "$p"): $out"
	grep -E '^total:' <<<"$out" | sed "s|^|upstream: $(basename "$p"): |" >&2
done

log "configuring $TARGETS with the dtrace backend"
mkdir -p "$WORK/obj"
cd "$WORK/obj"
env "${env_meson[@]}" "$SRC/configure" --python=/usr/bin/python3 --target-list="$TARGETS" \
	--enable-trace-backends=dtrace --disable-docs --disable-system --disable-tools \
	--disable-install-blobs >configure.log 2>&1 || { tail -n 30 configure.log; die "configure failed"; }
log "building"
env "${env_meson[@]}" ninja >ninja.log 2>&1 || { tail -n 40 ninja.log; die "build failed"; }
fi
cd "$WORK/obj"

log "the new probes"
for b in qemu-x86_64 qemu-aarch64; do
	readelf -n "$b" >"$b.notes"
	for probe in tcg_prologue tb_gen_code_done linux_user_guest_base linux_user_elf_image; do
		grep -q "Name: $probe\$" "$b.notes" || die "$b has no qemu:$probe"
	done
done
true_x86=$(type -P true)
# bpftrace 0.17 detaches uprobes through tracefs.
[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
out=$(timeout 60 bpftrace -q -e '
	usdt:./qemu-x86_64:qemu:tcg_prologue { @prologue = count(); @size = arg1; }
	usdt:./qemu-x86_64:qemu:tb_gen_code_done { @tbs = count(); }
	usdt:./qemu-x86_64:qemu:linux_user_guest_base { @base = count(); }
	usdt:./qemu-x86_64:qemu:linux_user_elf_image { @images = count(); }' \
	-c "./qemu-x86_64 $true_x86" 2>&1)
log "bpftrace on qemu-x86_64 $true_x86: $(grep '^@' <<<"$out" | paste -sd' ')"
for k in prologue tbs base images; do
	n=$(sed -nE "s/^@$k: ([0-9]+)$/\1/p" <<<"$out")
	[ "${n:-0}" -gt 0 ] || die "qemu:$k never fired: $out"
done

for t in $TESTS; do
	log "make $t"
	env "${env_meson[@]}" make "$t" >"$t.log" 2>&1 || { tail -n 40 "$t.log"; die "make $t failed"; }
	# (make check: meson's totals; check-tcg: its TEST and SKIPPED lines.)
	{
		grep -E '^(Ok|Fail|Skipped|Timeout|Expected Fail|Unexpected Pass):' "$t.log" |
			tr -s ' ' | paste -sd' '
		grep -q '^  TEST ' "$t.log" &&
			echo "$(grep -c '^  TEST ' "$t.log") run, $(grep -c '^  SKIPPED ' "$t.log") skipped"
	} | grep . | sed "s|^|upstream: make $t: |" >&2 || true
done
log "passed"
