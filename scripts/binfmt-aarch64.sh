#!/bin/bash
# Register (or drop) a binfmt_misc entry NAME that runs AArch64 ELF
# executables (ET_EXEC and ET_DYN) with QEMU, as qemu's own
# scripts/qemu-binfmt-conf.sh registers them, with flag F (the emulator is
# opened once, here).  For the tests and benchmarks that run a foreign
# shell's commands under our qemu-aarch64.
#   binfmt-aarch64.sh register NAME QEMU
#   binfmt-aarch64.sh unregister NAME
# Exit 3 when binfmt_misc cannot be mounted or refuses the entry.
set -euo pipefail
BINFMT=/proc/sys/fs/binfmt_misc

case ${1:-} in
register)
	name=$2 qemu=$3
	if [ ! -e "$BINFMT/register" ]; then
		mount -t binfmt_misc binfmt_misc "$BINFMT" 2>/dev/null || {
			echo "binfmt-aarch64: binfmt_misc cannot be mounted here" >&2
			exit 3
		}
	fi
	[ ! -e "$BINFMT/$name" ] || echo -1 >"$BINFMT/$name"
	printf ':%s:M::\\x7fELF\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\xb7\\x00:\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xff\\xff\\xff:%s:F\n' \
		"$name" "$qemu" >"$BINFMT/register" 2>/dev/null || {
		echo "binfmt-aarch64: binfmt_misc refused $name" >&2
		exit 3
	}
	;;
unregister)
	[ ! -e "$BINFMT/$2" ] || echo -1 >"$BINFMT/$2"
	;;
*)
	echo "usage: binfmt-aarch64.sh register NAME QEMU | unregister NAME" >&2
	exit 2
	;;
esac
