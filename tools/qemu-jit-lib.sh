# shellcheck shell=bash
# Shared by the bpftrace front ends in tools/ (qemu-jit-events, qemu-tbstat):
# find the QEMU of -p PID or -c CMD, check it has the qemu-jitbpf probes,
# and run a bpftrace program on it.  Source it; each function exits with a
# one-line error on bad input.

# qj_target NAME PID CMD BIN: check the options; set QJ_BIN to the QEMU binary.
qj_target() {
	local name=$1 pid=$2 cmd=$3 bin=$4
	if { [ -z "$pid" ] && [ -z "$cmd" ]; } || { [ -n "$pid" ] && [ -n "$cmd" ]; }; then
		echo "$name: give exactly one of -p PID and -c CMD" >&2
		exit 2
	fi
	if [ -n "$pid" ] && [ ! -d "/proc/$pid" ]; then
		echo "$name: no process $pid" >&2
		exit 1
	fi
	if [ -z "$bin" ]; then
		if [ -n "$pid" ]; then
			bin=$(readlink "/proc/$pid/exe" || true)
		else
			bin=$(command -v "${cmd%% *}" || true)
		fi
	fi
	# (grep -q would close the pipe early: readelf's SIGPIPE fails it)
	if [ -z "$bin" ] || ! readelf -n "$bin" 2>/dev/null | grep 'Name: tb_gen_code_done$' >/dev/null; then
		echo "$name: ${bin:-QEMU} has no qemu-jitbpf probes (build one with 'make qemu')" >&2
		exit 1
	fi
	QJ_BIN=$(readlink -f "$bin")
}

# qj_bpftrace PID CMD PROGRAM: run PROGRAM (text whose probes are written
# usdt::qemu:NAME) on the QEMU of qj_target, in place of this shell.
qj_bpftrace() {
	local pid=$1 cmd=$2 prog=$3
	# bpftrace 0.17 needs the binary's path with -c; it detaches uprobes
	# through tracefs.
	prog=${prog//usdt::qemu:/usdt:$QJ_BIN:qemu:}
	if [ ! -d /sys/kernel/tracing/events ]; then
		mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
	fi
	if [ -n "$pid" ]; then
		exec bpftrace -p "$pid" -e "$prog"
	else
		exec bpftrace -c "$cmd" -e "$prog"
	fi
}
