#!/bin/bash
# make deb: Debian packages of what make built, into OUT (build/deb):
#
#   qemu-jitbpf               the tool, its man pages, the bpftrace tools,
#                             the service (unit, sysusers, configuration)
#   qemu-jitbpf-user-static   the static emulators of the 10.2.2 series,
#                             in /usr/libexec/qemu-jitbpf, with binfmt_misc
#                             entries (qemu-jitbpf-ARCH) registered as
#                             Debian's qemu-user-static registers its own
#
# Laid out as dh would: files from `make install` (PREFIX=/usr, the unit
# in /lib/systemd/system as Debian 12's packages have it), the tool
# stripped (the emulators keep their symbols: profiles name QEMU's own
# frames by them), man pages and changelogs compressed, md5sums, the
# library dependencies from dpkg-shlibdeps; packaging/deb/ holds the
# maintainer scripts and the copyright file.  lintian checks the result
# (tests/packages.bats).
#
#   scripts/deb.sh [OUT]
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$TOP/build/deb}
TOOL=$TOP/build/bin/qemu-jitbpf
STATIC=$TOP/build/qemu-10.2.2-static/bin
PKG=$TOP/packaging/deb
EMULATORS="x86_64 aarch64 arm ppc64le riscv64 s390x"
FOREIGN="aarch64 arm ppc64le riscv64 s390x"
# (DEBFULLNAME and DEBEMAIL, as dch reads them, name who builds them.)
MAINTAINER="${DEBFULLNAME:-qemu-jitbpf builder} <${DEBEMAIL:-qemu-jitbpf@example.org}>"

die() { echo "deb: $*" >&2; exit 1; }
[ -x "$TOOL" ] || die "$TOOL is missing (make tool)"
for a in $EMULATORS; do
	[ -x "$STATIC/qemu-$a-static" ] || die "$STATIC/qemu-$a-static is missing (make qemu)"
done
ARCH=$(dpkg --print-architecture)
VERSION=$("$TOOL" --version | awk '{ print $2 }')
# The last commit's date, so that a tree makes the same packages.
DATE=$(git -C "$TOP" log -1 --format=%aD 2>/dev/null || date -R)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$OUT"

# /usr/share/doc/PACKAGE: the copyright file and a changelog.
doc() { # STAGE PACKAGE
	local d=$1/usr/share/doc/$2
	install -d "$d"
	install -m 0644 "$PKG/copyright" "$d/copyright"
	# (A native package's: changelog, not changelog.Debian.)
	printf '%s (%s) unstable; urgency=medium\n\n  * Built by make deb from the qemu-jitbpf tree.\n\n -- %s  %s\n' \
		"$2" "$VERSION" "$MAINTAINER" "$DATE" >"$d/changelog"
	gzip -9n "$d/changelog"
}

# DEBIAN/: the control file from FIELDS, maintainer scripts, md5sums; then
# the package.
build() { # STAGE PACKAGE FIELDS
	local stage=$1 name=$2 size
	install -d -m 0755 "$stage/DEBIAN"
	for s in postinst prerm postrm; do
		[ ! -e "$PKG/$name/$s" ] || install -m 0755 "$PKG/$name/$s" "$stage/DEBIAN/$s"
	done
	if [ -d "$stage/etc" ]; then
		(cd "$stage" && find etc -type f | sed 's|^|/|' | sort) >"$stage/DEBIAN/conffiles"
	fi
	(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
		xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
	size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
	{
		echo "Package: $name"
		echo "Version: $VERSION"
		echo "Architecture: $ARCH"
		echo "Maintainer: $MAINTAINER"
		echo "Installed-Size: $size"
		printf '%s\n' "$3"
	} >"$stage/DEBIAN/control"
	find "$stage" -type d -exec chmod 0755 {} +
	# This version's package replaces an earlier one's (a build per
	# commit): OUT holds what make built last, as apt would install it.
	rm -f "$OUT/${name}"_*_"$ARCH.deb"
	dpkg-deb --root-owner-group -Zxz --build "$stage" "$OUT/${name}_${VERSION}_$ARCH.deb" >/dev/null
	echo "deb: $OUT/${name}_${VERSION}_$ARCH.deb"
}

# The tool, linked with the distribution's shared elfutils and
# compressors, as Debian wants them (make's own links them statically for
# a faster start).
T=$W/qemu-jitbpf
make -C "$TOP" --no-print-directory -s "TOOL=$W/bin/qemu-jitbpf" \
	'TOOL_LINK=$(TOOL_LIBS) -Wl,-z,relro -Wl,-z,now' \
	install DESTDIR="$T" PREFIX=/usr UNITDIR=/lib/systemd/system SYSUSERSDIR=/usr/lib/sysusers.d \
	>/dev/null
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$T/usr/bin/qemu-jitbpf"
rm -f "$T/etc/qemu-jitbpf.conf.default"
gzip -9n "$T"/usr/share/man/man*/*
doc "$T" qemu-jitbpf
mkdir -p "$W/shlibs/debian"
echo "Source: qemu-jitbpf" >"$W/shlibs/debian/control"
DEPENDS=$(cd "$W/shlibs" && dpkg-shlibdeps -O "$T/usr/bin/qemu-jitbpf" 2>/dev/null |
	sed -n 's/^shlibs:Depends=//p')
[ -n "$DEPENDS" ] || die "dpkg-shlibdeps found no dependency of the tool"
build "$T" qemu-jitbpf "Depends: $DEPENDS
Recommends: bpftrace
Suggests: linux-perf, qemu-jitbpf-user-static
Section: devel
Priority: optional
Description: name and profile the code QEMU's TCG JIT generates, from outside
 qemu-jitbpf attaches to QEMU emulators built with its USDT probes (a
 running one, one it launches, or every one of the host) with BPF, and
 writes what perf, uftrace, pprof and coverage tools read: perf maps and
 jitdumps naming the translated code after the guest's functions, uftrace
 data, sampled guest call stacks (folded, flame graphs, pprof, pushed to
 Pyroscope or Parca), coverage (lcov, Cobertura, drcov), a report of what
 each emulated command cost, every guest thread's stack now, and where
 its time waits.
 .
 It runs as a service (qemu-jitbpf.service, as its own user with only the
 capabilities it needs) that profiles every QEMU of the host."

# The emulators, and their binfmt_misc entries.
E=$W/qemu-jitbpf-user-static
install -d "$E/usr/libexec/qemu-jitbpf" "$E/usr/lib/binfmt.d" "$E/usr/share/binfmts" \
	"$E/usr/share/lintian/overrides"
for a in $EMULATORS; do
	install -m 0755 "$STATIC/qemu-$a-static" "$E/usr/libexec/qemu-jitbpf/"
	strip --strip-debug --remove-section=.comment "$E/usr/libexec/qemu-jitbpf/qemu-$a-static"
done
install -m 0755 "$TOP/scripts/binfmt.sh" "$E/usr/libexec/qemu-jitbpf/binfmt.sh"
for a in $FOREIGN; do
	q=/usr/libexec/qemu-jitbpf/qemu-$a-static
	"$TOP/scripts/binfmt.sh" conf "qemu-jitbpf-$a" "$q" "$a" OPF \
		>"$E/usr/lib/binfmt.d/qemu-jitbpf-$a.conf"
	"$TOP/scripts/binfmt.sh" binfmts "qemu-jitbpf-$a" "$q" "$a" qemu-jitbpf-user-static \
		>"$E/usr/share/binfmts/qemu-jitbpf-$a"
done
cat >"$E/usr/share/lintian/overrides/qemu-jitbpf-user-static" <<'EOF'
# Static-pie executables, as Debian's qemu-user-static has them, not
# shared libraries.
qemu-jitbpf-user-static: shared-library-lacks-prerequisites [usr/libexec/qemu-jitbpf/qemu-*-static]
# Their symbol tables stay: qemu-jitbpf names QEMU's own frames in
# profiles (translating, helpers, system calls) by them.
qemu-jitbpf-user-static: unstripped-binary-or-object [usr/libexec/qemu-jitbpf/qemu-*-static]
EOF
doc "$E" qemu-jitbpf-user-static
build "$E" qemu-jitbpf-user-static "Recommends: systemd | binfmt-support
Suggests: qemu-jitbpf
Conflicts: qemu-user-binfmt
Provides: qemu-user-binfmt
Section: otherosfs
Priority: optional
Multi-Arch: foreign
Description: QEMU user-mode emulators with the qemu-jitbpf probes (static)
 Statically linked QEMU 10.2.2 user-mode emulators (aarch64, arm, ppc64le,
 riscv64, s390x and x86_64 guests) built with the qemu-jitbpf patch
 series: USDT probes that let qemu-jitbpf name and profile the code they
 translate, at no cost while nothing is attached.
 .
 Foreign executables (in containers too) run under them through
 binfmt_misc, as with qemu-user-static, which this package replaces; a
 format another binfmt_misc entry runs already is left to it."
