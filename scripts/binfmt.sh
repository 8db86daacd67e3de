#!/bin/bash
# binfmt_misc entries that run foreign executables under our QEMUs, as
# Debian's qemu-user-static registers its own (magic and mask per
# architecture; flags OPF: P keeps argv[0], F opens the emulator now, so a
# container's programs run with it although its path is not in their root,
# O passes the program as an open file).  Our entries are named
# qemu-jitbpf-ARCH.
#
#   binfmt.sh install [BINDIR]    register BINDIR/qemu-ARCH-static for each
#                                 architecture but the host's
#                                 (default build/qemu-10.2.2-static/bin)
#   binfmt.sh uninstall           remove every entry of ours
#   binfmt.sh register NAME QEMU ARCH [FLAGS]
#                                 one entry, whatever else is registered
#                                 (the newest entry wins): tests, benchmarks
#   binfmt.sh unregister NAME
#   binfmt.sh claimant NAME ARCH  the enabled entry other than NAME that runs
#                                 ARCH's executables, if any ("NAME (QEMU)")
#   binfmt.sh conf NAME QEMU ARCH FLAGS
#                                 the entry as a binfmt.d(5) line
#   binfmt.sh binfmts NAME QEMU ARCH PACKAGE
#                                 the entry in binfmt-support's format
#                                 (update-binfmts(8), /usr/share/binfmts)
#
# Exit 1 with one line when binfmt_misc is not mounted or another entry
# already claims an architecture's executables; 2 for bad usage.
set -euo pipefail
BINFMT=${BINFMT_MISC:-/proc/sys/fs/binfmt_misc}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=qemu-jitbpf-
ARCHES="x86_64 aarch64 riscv64 arm ppc64le s390x"

die() { echo "binfmt: $*" >&2; exit 1; }

# ELF header bytes 0-19 of an executable of ARCH (ET_EXEC or ET_DYN), and
# the mask binfmt_misc applies before comparing: QEMU's own values.
magic() {
	case $1 in
	x86_64) echo '\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x3e\x00' ;;
	aarch64) echo '\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00' ;;
	riscv64) echo '\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xf3\x00' ;;
	arm) echo '\x7fELF\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x28\x00' ;;
	ppc64le) echo '\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x15\x00' ;;
	s390x) echo '\x7fELF\x02\x02\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x16' ;;
	*) die "no magic known for architecture '$1' ($ARCHES)" ;;
	esac
}
mask() {
	case $1 in
	x86_64) echo '\xff\xff\xff\xff\xff\xfe\xfe\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff' ;;
	ppc64le) echo '\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\x00' ;;
	s390x) echo '\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff' ;;
	*) echo '\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff' ;;
	esac
}

# '\x7f\x45...' -> '7f45...', as binfmt_misc shows magic and mask.
hex() { printf '%b' "$1" | od -An -tx1 -v | tr -d ' \n'; }

# Bytes of hex string A masked by hex string M.
masked() {
	local a=$1 m=$2 out= i
	for ((i = 0; i < ${#a}; i += 2)); do
		out+=$(printf '%02x' $((0x${a:i:2} & 0x${m:i:2})))
	done
	echo "$out"
}

require_mounted() {
	[ -e "$BINFMT/register" ] ||
		die "binfmt_misc is not mounted at $BINFMT (mount -t binfmt_misc binfmt_misc $BINFMT)"
}

# The entry other than NAME that already runs ARCH's executables, if any.
claimant() { # NAME ARCH
	local want mask_hex e m k
	mask_hex=$(hex "$(mask "$2")")
	want=$(masked "$(hex "$(magic "$2")")" "$mask_hex")
	for e in "$BINFMT"/*; do
		case ${e##*/} in register | status | "$1") continue ;; esac
		grep -qx enabled "$e" 2>/dev/null || continue
		grep -qx 'offset 0' "$e" || continue
		m=$(sed -n 's/^magic //p' "$e")
		k=$(sed -n 's/^mask //p' "$e")
		[ -n "$m" ] && [ ${#m} -ge ${#want} ] || continue
		m=${m:0:${#want}}
		[ -z "$k" ] || m=$(masked "$m" "${k:0:${#want}}")
		if [ "$(masked "$m" "$mask_hex")" = "$want" ]; then
			echo "${e##*/} ($(sed -n 's/^interpreter //p' "$e"))"
			return
		fi
	done
}

register() { # NAME QEMU ARCH FLAGS
	local name=$1 qemu=$2 arch=$3 flags=$4
	require_mounted
	[ -x "$qemu" ] || die "$qemu is not an executable"
	[ ! -e "$BINFMT/$name" ] || echo -1 >"$BINFMT/$name"
	printf ':%s:M::%s:%s:%s:%s\n' "$name" "$(magic "$arch")" "$(mask "$arch")" "$qemu" "$flags" \
		>"$BINFMT/register" 2>/dev/null || die "binfmt_misc refused entry $name for $qemu"
}

unregister() { # NAME
	[ ! -e "$BINFMT/$1" ] || echo -1 >"$BINFMT/$1"
}

case ${1:-} in
install)
	dir=${2:-$ROOT/build/qemu-10.2.2-static/bin}
	host=$(uname -m)
	require_mounted
	n=0
	for arch in $ARCHES; do
		[ "$arch" != "$host" ] || continue
		q=$dir/qemu-$arch-static
		[ -x "$q" ] || die "$q is missing (make qemu builds it)"
		other=$(claimant "$PREFIX$arch" "$arch")
		[ -z "$other" ] ||
			die "$arch executables are already run by binfmt_misc entry $other; remove it first"
	done
	for arch in $ARCHES; do
		[ "$arch" != "$host" ] || continue
		q=$dir/qemu-$arch-static
		register "$PREFIX$arch" "$(readlink -f "$q")" "$arch" OPF
		echo "binfmt: $arch executables run with $(readlink -f "$q") ($PREFIX$arch)"
		n=$((n + 1))
	done
	[ "$n" -gt 0 ] || die "no architecture but the host's ($host) to register"
	;;
uninstall)
	[ -d "$BINFMT" ] || exit 0
	for e in "$BINFMT/$PREFIX"*; do
		[ -e "$e" ] || continue
		echo -1 >"$e"
		echo "binfmt: removed ${e##*/}"
	done
	;;
register)
	[ $# -ge 4 ] || { echo "usage: binfmt.sh register NAME QEMU ARCH [FLAGS]" >&2; exit 2; }
	register "$2" "$3" "$4" "${5:-F}"
	;;
unregister)
	[ $# -eq 2 ] || { echo "usage: binfmt.sh unregister NAME" >&2; exit 2; }
	unregister "$2"
	;;
claimant)
	[ $# -eq 3 ] || { echo "usage: binfmt.sh claimant NAME ARCH" >&2; exit 2; }
	[ ! -d "$BINFMT" ] || claimant "$2" "$3"
	;;
conf)
	[ $# -eq 5 ] || { echo "usage: binfmt.sh conf NAME QEMU ARCH FLAGS" >&2; exit 2; }
	printf ':%s:M::%s:%s:%s:%s\n' "$2" "$(magic "$4")" "$(mask "$4")" "$3" "$5"
	;;
binfmts)
	[ $# -eq 5 ] || { echo "usage: binfmt.sh binfmts NAME QEMU ARCH PACKAGE" >&2; exit 2; }
	# (As Debian's qemu-user-static: P and F; O comes with F there.)
	printf 'package %s\ninterpreter %s\nmagic %s\noffset 0\nmask %s\ncredentials no\nfix_binary yes\npreserve yes\n' \
		"$5" "$3" "$(magic "$4")" "$(mask "$4")"
	;;
*)
	echo "usage: binfmt.sh install [BINDIR] | uninstall | register NAME QEMU ARCH [FLAGS] | unregister NAME | claimant NAME ARCH | conf NAME QEMU ARCH FLAGS | binfmts NAME QEMU ARCH PACKAGE" >&2
	exit 2
	;;
esac
