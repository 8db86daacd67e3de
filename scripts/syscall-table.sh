#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Writes userspace/naming/syscall-table.h: each guest architecture's Linux
# system call names by number, from the kernel headers Debian's cross
# compilers bring (linux-libc-dev and its -cross packages).  The table is
# checked in; run this again after a kernel's headers add calls.
#
#   scripts/syscall-table.sh [OUT]
set -euo pipefail

out=${1:-userspace/naming/syscall-table.h}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

# ELF machine, table name, compiler whose headers give its numbers.
arches=(
	"62 x86_64 gcc"
	"183 aarch64 aarch64-linux-gnu-gcc"
	"243 riscv64 riscv64-linux-gnu-gcc"
	"40 arm arm-linux-gnueabihf-gcc"
	"21 ppc64 powerpc64le-linux-gnu-gcc"
	"22 s390x s390x-linux-gnu-gcc"
)

{
	echo "/* SPDX-License-Identifier: GPL-2.0-or-later */"
	echo "/* Written by scripts/syscall-table.sh from the kernel's headers: do not edit. */"
	for a in "${arches[@]}"; do
		read -r machine name cc <<<"$a"
		command -v "$cc" >/dev/null || {
			echo "syscall-table.sh: $cc not found (make deps)" >&2
			exit 1
		}
		names=$(echo '#include <asm/unistd.h>' | $cc -E -dM - |
			sed -n 's/^#define __NR_\([a-z][a-z0-9_]*\) .*/\1/p' | sort -u)
		echo
		echo "static const char *const syscalls_$name[] = {"
		# Each name's number as the compiler evaluates it.
		{
			echo '#include <asm/unistd.h>'
			for n in $names; do echo "@@ $n __NR_$n"; done
		} | $cc -E -P - | sed -n 's/^@@ //p' |
			while read -r n expr; do
				printf '%s %d\n' "$n" "$((expr))"
			done | sort -k2,2n -k1,1 | awk '!seen[$2]++ {printf "\t[%d] = \"%s\",\n", $2, $1}'
		echo "};"
		echo "#define SYSCALLS_${name}_MACHINE $machine"
	done
} >"$tmp"
clang-format --style=file:.clang-format "$tmp" >"$out"
rm -f "$tmp"
trap - EXIT
