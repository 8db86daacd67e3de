#!/bin/bash
# Run the system-mode tests' Linux VM: Debian's cloud kernel (make guests)
# with the busybox initramfs, under TCG, its console in a file.
#
#   scripts/linux-vm.sh x86_64|aarch64 QEMU-BIN-DIR MODE CONSOLE [QEMU-ARGS...]
#
# MODE is what the initramfs' /init does (tests/guests/linux-init.sh):
# "kallsyms" or "work:ROUNDS".  The VM powers off at the end; QEMU then
# exits 0.  exec: the caller's pid is QEMU's, or LINUX_VM_WRAP's, a command
# QEMU's runs under (e.g. "qemu-jitbpf --perfmap --").  LINUX_VM_ACCEL
# replaces "-accel tcg" (e.g. tcg,thread=single: one thread for all vCPUs).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARCH=$1 BIN=$2 MODE=$3 CONSOLE=$4
shift 4
G=${GUESTS:-$ROOT/build/guests}/linux/$ARCH
APPEND="nokaslr quiet loglevel=1 panic=-1 qj=$MODE"
# Threads named after the vCPUs they run ("CPU 0/TCG"), for perf and ps.
NAME="-name qemu-jitbpf-test,debug-threads=on"
# shellcheck disable=SC2206
WRAP=(${LINUX_VM_WRAP:-})
ACCEL=${LINUX_VM_ACCEL:-tcg}
case $ARCH in
x86_64)
	exec "${WRAP[@]}" "$BIN/qemu-system-x86_64" -M q35 -m 512 -smp 2 -accel "$ACCEL" $NAME -nodefaults \
		-display none -no-reboot -serial "file:$CONSOLE" -kernel "$G/vmlinuz" \
		-initrd "$G/initramfs.cpio.gz" -append "console=ttyS0 $APPEND" "$@"
	;;
aarch64)
	exec "${WRAP[@]}" "$BIN/qemu-system-aarch64" -M virt,dtb-randomness=off -cpu max,pauth-impdef=on \
		-m 512 -smp 2 -accel "$ACCEL" $NAME -nodefaults -display none -no-reboot \
		-serial "file:$CONSOLE" -kernel "$G/vmlinuz" -initrd "$G/initramfs.cpio.gz" \
		-append "console=ttyAMA0 $APPEND" "$@"
	;;
*)
	echo "linux-vm: unknown architecture '$ARCH' (x86_64 or aarch64)" >&2
	exit 1
	;;
esac
