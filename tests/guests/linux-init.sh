#!/bin/busybox sh
# /init of the system-mode tests' initramfs: Debian's busybox and one
# workload (/hot, tests/guests/hot.c, static).  The kernel command line
# says what to do:
#   qj=kallsyms     print the kernel's code symbols between markers
#   qj=work:ROUNDS  run the workload, /hot ROUNDS, on each CPU at once
# then power off.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mode=$(sed -n 's/.*qj=\([^ ]*\).*/\1/p' /proc/cmdline)
echo "init: up, $(grep -c ^processor /proc/cpuinfo) CPUs, mode $mode"
case $mode in
kallsyms)
	echo 0 >/proc/sys/kernel/kptr_restrict
	echo "=== kallsyms"
	grep ' [tT] ' /proc/kallsyms
	echo "=== end"
	;;
work:*)
	rounds=${mode#work:}
	cpus=$(grep -c ^processor /proc/cpuinfo)
	echo "work: start $rounds rounds on $cpus CPUs"
	i=0
	while [ "$i" -lt "$cpus" ]; do
		taskset -c "$i" /hot "$rounds" >/tmp/out.$i &
		i=$((i + 1))
	done
	wait
	for f in /tmp/out.*; do sed 's/^/work: /' "$f"; done
	echo "work: done"
	;;
esac
echo "init: power off"
poweroff -f
