# Shared helpers for the bats suite.  Load with: load helpers (or by path).

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$TOP/build
TOOLS=$TOP/tools

# perf record and perf inject -j copy every object they see into perf's
# build-id cache, ~/.debug by default: a jitdump's thousands of
# jitted-PID-N.so files each time, half a million files in one run of
# the suite, whose removal alone took bats 2 minutes.  The tests read
# every object where it was written, so perf gets a cache directory it
# cannot create, and goes on without one.  perf takes the directory from
# --buildid-dir only (it sets PERF_BUILDID_DIR for its children, it does
# not read it).
PERF_BUILDID_DIR=/dev/null/no-buildid-cache
export PERF_BUILDID_DIR
perf() {
	command perf --buildid-dir "$PERF_BUILDID_DIR" "$@"
}
export -f perf

bats_load_library bats-support
bats_load_library bats-assert

# The probes we add; docs/probes.md describes each.
OUR_PROBES="tb_gen_code_done tcg_prologue tb_flush jit_attach jitdump_marker
linux_user_guest_base linux_user_elf_image linux_user_guest_mmap jit_attach_wait
jit_attach_request jit_vcpu"

# The system emulators' own probes (10.2.2), beside the common ones.
SYSTEM_PROBES="tb_gen_code_batch tcg_prologue tb_flush jit_attach jitdump_marker
jit_attach_wait jit_attach_request jit_vcpu jit_calls loader_elf_image jit_guest_ram"

# Each PROBE is in BINARY, with argument specs libbpf 1.1 parses.
check_probe_specs() { # BINARY PROBE...
	local bin=$1 notes p out line spec
	shift
	notes=$(readelf -n "$bin") || fail "readelf -n $bin failed"
	for p in "$@"; do
		out=$(awk -v p="$p" '$1 == "Name:" { n = $2 } $1 == "Arguments:" && n == p { print; n = "" }' <<<"$notes")
		[ -n "$out" ] || fail "probe qemu:$p missing in $bin"
		# libbpf 1.1 knows N@%reg, N@(%reg), N@off(%reg) and N@\$imm only:
		# no SIB operands, no symbol-relative ones such as x(%rip).
		while read -r line; do
			for spec in ${line#*Arguments:}; do
				[[ $spec =~ ^-?[0-9]+@(%[a-z0-9]+|\$-?[0-9]+|-?[0-9]*\(%[a-z0-9]+\))$ ]] ||
					fail "qemu:$p has argument spec '$spec' that libbpf 1.1 cannot parse"
			done
		done <<<"$out"
	done
}

# x86_64 and aarch64 are built dynamic (plugins, system mode); 10.2.2's
# other architectures only static, as binfmt_misc runs them
# (scripts/qemu-build.sh).
qemu_bin() { # VERSION ARCH
	case $2 in
	x86_64 | aarch64) echo "$BUILD/qemu-$1/bin/qemu-$2" ;;
	*) echo "$BUILD/qemu-$1-static/bin/qemu-$2-static" ;;
	esac
}

guest() { # ARCH NAME
	echo "$BUILD/guests/$1/$2"
}

# Guest symbol address as 0x…, from the guest's own symbol table.
guest_sym() { # ARCH NAME SYMBOL
	local a
	a=$(nm "$(guest "$1" "$2")" | awk -v s="$3" '$3 == s { print $1 }')
	[ -n "$a" ] || return 1
	echo "0x$a"
}

require_qemu() { # VERSION ARCH
	local q
	q=$(qemu_bin "$1" "$2")
	[ -x "$q" ] || fail "$q is not built (make qemu QEMU_VERSION=$1)"
}

# Run the events tool with a time limit; stderr noise of bpftrace dropped.
jit_events() {
	timeout -s INT 60 "$TOOLS/qemu-jit-events" "$@" 2> >(grep -v RLIMIT_MEMLOCK >&2)
}

# The perf map the tool's summary, in OUTPUT, names.
perfmap_of() { # OUTPUT
	sed -nE 's/^qemu-jitbpf: perf map: //p' <<<"$1"
}

# Start a command in the background, its stdout in $BATS_TEST_TMPDIR/bg.out.
# Shell commands that mount a private tmpfs over ROOT/tmp (in a new mount
# namespace), as a container has it; KEEP (default: the checkout), if it
# lies under /tmp, stays visible at ROOT/KEEP with its mounts (the /tmp it
# was in stays at /mnt).
private_tmp() { # [ROOT] [KEEP]
	local root=${1:-} keep=${2:-$TOP}
	if [[ $keep == /tmp/* ]]; then
		echo "mount --rbind '$root/tmp' /mnt && mount -t tmpfs tmpfs '$root/tmp' &&" \
			"mkdir -p '$root$keep' && mount --rbind '/mnt/${keep#/tmp/}' '$root$keep'"
	else
		echo "mount -t tmpfs tmpfs '$root/tmp'"
	fi
}

start_bg() {
	local shell t=50
	"$@" >"$BATS_TEST_TMPDIR/bg.out" 2>"$BATS_TEST_TMPDIR/bg.err" &
	BG_PID=$!
	# A map an earlier process of this pid left (pids wrap at 32768).
	rm -f "/tmp/perf-$BG_PID.map"
	# Until the forked shell has exec'd the command, -p $BG_PID is bash.
	shell=$(readlink "/proc/$$/exe")
	while [ "$(readlink "/proc/$BG_PID/exe" 2>/dev/null)" = "$shell" ] && [ "$t" -gt 0 ]; do
		sleep 0.02
		t=$((t - 1))
	done
}

stop_bg() {
	if [ -n "${BG_PID:-}" ] && kill -0 "$BG_PID" 2>/dev/null; then
		kill "$BG_PID" 2>/dev/null || true
		wait "$BG_PID" 2>/dev/null || true
	fi
	BG_PID=
}

# -a in the background on $QX and $QA (and OPTIONS); wait until attached.
start_all() { # OPTIONS...
	start_bg "$QEMU_JITBPF" -a -v --qemu "$QX" --qemu "$QA" "$@"
	wait_bg_err 'attached to .* binaries' 10
}

# Stop it as Ctrl-C does: it must exit 0; its summary to the TAP log.
stop_all() {
	kill -INT "$BG_PID"
	wait_bg 60
	grep -v 'pid [0-9]*: ' "$D/bg.err" | sed 's/^/# /' >&3 || true
	[ "$BG_STATUS" = 0 ] || fail "qemu-jitbpf -a failed ($BG_STATUS): $(cat "$D/bg.err")"
}

# Wait for a child PID to exit on its own; its status in $WAIT_STATUS.
wait_pid() { # PID SECONDS WHAT
	local t=$(($2 * 10))
	while kill -0 "$1" 2>/dev/null && [ "$t" -gt 0 ]; do
		sleep 0.1
		t=$((t - 1))
	done
	kill -0 "$1" 2>/dev/null && fail "$3 did not finish in $2 s"
	WAIT_STATUS=0
	wait "$1" || WAIT_STATUS=$?
}

# Wait for a background process to exit on its own; its status in $BG_STATUS.
wait_bg() { # [SECONDS]
	wait_pid "$BG_PID" "${1:-60}" "background process"
	BG_STATUS=$WAIT_STATUS
	BG_PID=
}

# Wait until the background process's stderr has a line matching PATTERN.
wait_bg_err() { # PATTERN [SECONDS]
	local t=$((${2:-10} * 10))
	while ! grep -q "$1" "$BATS_TEST_TMPDIR/bg.err" && [ "$t" -gt 0 ]; do
		kill -0 "$BG_PID" 2>/dev/null || fail "$1: it exited: $(cat "$BATS_TEST_TMPDIR/bg.err")"
		sleep 0.1
		t=$((t - 1))
	done
	[ "$t" -gt 0 ] || fail "no '$1' from it: $(cat "$BATS_TEST_TMPDIR/bg.err")"
}

# Field value of key=value in a line of the events tool.
field() { # LINE KEY
	sed -nE "s/.* $2=([^ ]+).*/\1/p" <<<"$1"
}

# The "tb" lines of jit_events on stdin whose pc is in [LO, LO + LEN):
# one awk over thousands of lines (a field subshell per line took 25 s).
tbs_within() { # LO LEN
	awk -v lo="$(($1))" -v hi="$(($1 + $2))" '
		function num(s,  i, v) { # decimal or 0x hex (mawk has no strtonum)
			if (s !~ /^0x/)
				return s + 0
			for (i = 3; i <= length(s); i++)
				v = v * 16 + index("0123456789abcdef", tolower(substr(s, i, 1))) - 1
			return v
		}
		$2 == "tb" {
			for (i = 3; i <= NF; i++)
				if (substr($i, 1, 3) == "pc=" && num(substr($i, 4)) >= lo &&
				    num(substr($i, 4)) < hi)
					print
		}'
}

# make check-asan runs the suite on build/asan/bin/qemu-jitbpf.
QEMU_JITBPF=${QEMU_JITBPF_TEST:-$BUILD/bin/qemu-jitbpf}

# Valgrind cannot run a tool built with ASan, which checks the same.
no_valgrind_under_asan() {
	[ -z "${QEMU_JITBPF_TEST:-}" ] || skip "the tool under test has ASan, which checks this run"
}

# JIT samples of a perf.data, "time symbol" per line: samples whose DSO is
# the perf map (perf map mode) or a jitted-*.so (after perf inject -j).
jit_samples() { # PERF_DATA
	perf script -i "$1" -F time,ip,sym,dso 2>/dev/null |
		awk '$NF ~ /perf-[0-9]+\.map\)$|jitted-[0-9]+-[0-9]+\.so\)$/ {
			t = $1; sub(":", "", t); print t, $3 }'
}

# Check that at least 90 % of the JIT samples of PERF_DATA have a guest
# function name and that HOTTEST is the name with the most samples.
check_attribution() { # PERF_DATA HOTTEST
	local s=$BATS_TEST_TMPDIR/jit-samples.txt total named top
	jit_samples "$1" >"$s"
	total=$(wc -l <"$s")
	named=$(awk '$2 != "[unknown]" && $2 !~ /^guest-0x/' "$s" | wc -l)
	top=$(awk '{ print $2 }' "$s" | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }')
	echo "# $1: $named of $total JIT samples named, hottest $top" >&3
	[ "$total" -ge 200 ] || fail "only $total JIT samples in $1"
	[ $((named * 100)) -ge $((total * 90)) ] || fail "only $named of $total JIT samples named"
	[ "$top" = "$2" ] || fail "hottest is $top, not $2"
}

perf_record() { # OUT SECONDS PERF-TARGET-ARGS...
	local out=$1 secs=$2
	shift 2
	perf record -q -e cpu-clock -k 1 -o "$out" "$@" -- sleep "$secs" >/dev/null 2>&1
}

perf_inject() { # IN OUT
	DEBUGINFOD_URLS= perf inject -j -i "$1" -o "$2" 2>/dev/null
}

# Wait until FILE has a line matching PATTERN.
wait_for_file_line() { # FILE PATTERN [SECONDS]
	local t=$((${3:-10} * 10))
	while ! grep -q "$2" "$1" 2>/dev/null && [ "$t" -gt 0 ]; do
		sleep 0.1
		t=$((t - 1))
	done
	grep -q "$2" "$1" || fail "no '$2' in $1: $(cat "$1")"
}

# Wait until FILE exists (the tool has attached and QEMU made the marker).
wait_for_file() { # FILE [SECONDS]
	local t=$((${2:-10} * 10))
	while [ ! -e "$1" ] && [ "$t" -gt 0 ]; do
		sleep 0.1
		t=$((t - 1))
	done
	[ -e "$1" ] || fail "$1 never appeared"
}

# "function calls" of the functions of calls.c/threads.c in uftrace data,
# one per line, sorted by name.
uftrace_counts() { # DIR [uftrace report options...]
	local dir=$1
	shift
	uftrace report -d "$dir" -s call "$@" 2>/dev/null |
		awk 'NF == 6 && $6 ~ /^(cg_.*|main)$/ { print $6, $5 }' | sort
}

# uftrace replay of a subtree with durations and task ids stripped.
# Pre-emptions (native uftrace records them when a busy host takes its
# core away) are left out: they are the host's, not the program's.
uftrace_tree() { # DIR FUNCTION
	uftrace replay -d "$1" -F "$2" --no-sched-preempt 2>/dev/null | grep -F '|' | sed -E 's/^[^|]*\| //'
}

# The calls of uftrace data as replay nests them, without times, tids and
# library calls and pre-emptions: what native uftrace and ours must agree
# on.
# A call whose body is empty is written "NAME();": uftrace replay writes
# "NAME() {" and "} /* NAME */" when the data held a record inside it that
# the options hide, such as native uftrace's schedule events of a
# preempted task (CI's busy machine preempts the native run).
uftrace_calls() { # DIR [replay options...]
	local dir=$1
	shift
	uftrace replay -d "$dir" -f none --no-libcall --no-sched-preempt "$@" 2>/dev/null |
		grep -vE '^#|^$' | awk '
		function flush() { if (held != "") print held; held = "" }
		{
			if (held != "") {
				if ($0 == closing) { print ind name "();"; held = ""; next }
				flush()
			}
			if ($0 ~ /^ *[^ ]+\(\) \{$/) {
				ind = $0; sub(/[^ ].*$/, "", ind)
				name = substr($0, length(ind) + 1); sub(/\(\) \{$/, "", name)
				held = $0; closing = ind "} /* " name " */"
				next
			}
			print
		}
		END { flush() }'
}

# The nesting of the functions named by REGEX, from the depths uftrace
# data record (not from exits, which frames a longjmp abandoned lack in
# native uftrace's data): each entry indented by its ancestors among them.
uftrace_nesting() { # DIR REGEX
	uftrace dump -d "$1" 2>/dev/null | awk -v re="$2" '$3 == "[entry]" {
		name = $4; sub(/\(.*/, "", name)
		if (name !~ re) next
		while (n && stack[n] >= $NF) n--
		printf "%*s%s\n", 2 * n, "", name
		stack[++n] = $NF }'
}

# Call events the tool's summary, in OUTPUT, says were lost (0 if none).
calls_lost() { # OUTPUT
	local l
	l=$(grep -E '^qemu-jitbpf: [0-9]+ TBs, .* events lost' <<<"$1") || fail "no summary: $1"
	sed -nE 's/.* events lost \(([0-9]+) calls[,)].*/\1/p; t; s/.*/0/p' <<<"$l"
}

# Events the LOST records of uftrace data account for.  uftrace dump
# shows a record's count as "<name>(count)", the name being the guest's
# symbol at that address where there is one (riscv64 and arm programs
# start at 0x10000): the count in parentheses is the raw one.
uftrace_lost() { # DIR
	uftrace dump -d "$1" 2>/dev/null |
		perl -ne '$n += hex($1) if /\[lost \] .*\(([0-9a-f]+)\) depth:/; END { print $n + 0, "\n" }'
}

ONELINERS=$TOP/docs/one-liners.md

# The one bpftrace one-liner of docs/one-liners.md that names MAP (each
# one-liner has a map or text of its own), without its "# " prompt.
oneliner() { # MAP
	local l
	l=$(grep -E '^    # bpftrace ' "$ONELINERS" | grep -F -- "$1" || true)
	[ -n "$l" ] && [ "$(wc -l <<<"$l")" = 1 ] ||
		fail "not exactly one one-liner with '$1' in docs/one-liners.md"
	echo "${l#    # }"
}

# Run a one-liner of docs/one-liners.md as that document says, with `run`:
#   -p PID SECONDS       on a running QEMU, stopped with SIGINT after SECONDS
#   -c 'CMD' QEMU        from QEMU's start: -p $PID becomes -c CMD and QEMU's
#                        path goes between the first colons of each probe
#   -a QEMU SECONDS      as written (every process), with QEMU for the path
run_oneliner() { # MAP MODE ...
	local cmd
	cmd=$(oneliner "$1")
	case $2 in
	-p) cmd=${cmd//\$PID/$3} secs=$4 ;;
	-c)
		cmd=${cmd/-p \$PID/-c \'$3\'}
		cmd=${cmd//usdt::qemu:/usdt:$4:qemu:}
		secs=60
		;;
	-a) cmd=${cmd//build\/qemu-10.2.2\/bin\/qemu-x86_64/$3} secs=$4 ;;
	esac
	# bpftrace 0.17 detaches uprobes through tracefs.
	[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing
	echo "# $cmd" >&3
	run _oneliner_exec "$secs" "$cmd"
	echo "$output" | sed 's/^/#   /' >&3
}

# Ctrl-C after SECONDS is how a one-liner ends: that is success.  A
# bpftrace still attaching its probes when the Ctrl-C comes can miss it
# (seen once in 40 runs on a loaded machine): SIGKILL 10 s later ends it
# the same way, with what it printed so far.
_oneliner_exec() { # SECONDS CMD
	local st=0
	timeout -s INT -k 10 "$1" bash -c "$2" 2> >(grep -v RLIMIT_MEMLOCK >&2) || st=$?
	case $st in 124 | 137) st=0 ;; esac
	return "$st"
}

# The non-zero USDT semaphores of provider qemu in process PID, "name value".
semaphores() { # PID
	python3 - "$1" <<'EOF'
import os, re, subprocess, sys
pid = sys.argv[1]
exe = os.readlink(f"/proc/{pid}/exe")
notes = subprocess.run(["readelf", "-n", exe], capture_output=True, text=True).stdout
sems = {}
for m in re.finditer(r"Provider: qemu\s+Name: (\S+)\s+Location: \S+, Base: \S+, Semaphore: (0x[0-9a-f]+)", notes):
    sems[m.group(1)] = int(m.group(2), 16)
phdrs = subprocess.run(["readelf", "-lW", exe], capture_output=True, text=True).stdout
# (file offset, address, file size) of each loadable segment
loads = [tuple(int(l.split()[i], 16) for i in (1, 2, 4)) for l in phdrs.splitlines() if l.split()[:1] == ["LOAD"]]
st = os.stat(exe)
maps = [l.split() for l in open(f"/proc/{pid}/maps")]
with open(f"/proc/{pid}/mem", "rb") as mem:
    for name, vaddr in sorted(sems.items()):
        if not vaddr:
            continue
        off = next(o + vaddr - v for o, v, size in loads if v <= vaddr < v + size)
        for m in maps:
            if len(m) >= 6 and int(m[4]) == st.st_ino:
                lo, hi = (int(x, 16) for x in m[0].split("-"))
                moff = int(m[2], 16)
                if moff <= off < moff + hi - lo:
                    mem.seek(lo + off - moff)
                    v = int.from_bytes(mem.read(2), "little")
                    if v and name != "jit_attach_request":
                        print(name, v)
                    break
EOF
}

# binfmt_misc runs our qemu-aarch64 for every aarch64 program, as on a
# cross-architecture container build host.
BINFMT_NAME=jitbpf-test-aarch64

binfmt_register() { # QEMU [FLAGS]
	binfmt_mount
	"$TOP/scripts/binfmt.sh" register "$BINFMT_NAME" "$1" aarch64 "${2:-F}" ||
		fail "binfmt.sh register failed"
}

binfmt_unregister() {
	"$TOP/scripts/binfmt.sh" unregister "$BINFMT_NAME"
}

binfmt_mount() {
	[ -e /proc/sys/fs/binfmt_misc/register ] ||
		mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null ||
		skip "binfmt_misc cannot be mounted here"
}

# tree.c's two paths into leaf_work, below main, as folded stacks end.
LONG="main;long_path;long_mid;long_inner;leaf_work"
SHORT="main;short_path;leaf_work"

# The name the kernel gives a process of QEMU $V for ARCH (comm: 15
# characters, so qemu-riscv64-static is qemu-riscv64-st).
qemu_comm() { # ARCH
	basename "$(qemu_bin "$V" "$1")" | cut -c1-15
}

# Check a folded profile of tree.c: >= 85 % of the samples on the two
# exact chains, rooted at COMM-PID, and the long path's share 2/3 +- 10.
check_tree() { # FOLDED PID ARCH
	local out
	out=$(awk -v long="$LONG" -v short="$SHORT" -v root="^$(qemu_comm "$3")-$2;" '
		{ n = $NF; total += n; s = $0; sub(/ [0-9]+$/, "", s) }
		s ~ root && substr(s, length(s) - length(long) + 1) == long &&
			s !~ ";leaf_work;" && split(s, f, ";") <= 9 { l += n }
		s ~ root && substr(s, length(s) - length(short) + 1) == short &&
			split(s, f, ";") <= 7 { sh += n }
		END { printf "%d %d %d", total, l, sh }' "$1")
	local folded=$1
	set -- $out
	echo "# $1 samples: long path $2, short path $3" >&3
	[ "$1" -ge 50 ] || fail "only $1 samples"
	[ $(((($2 + $3) * 100) / $1)) -ge 85 ] || fail "$(($2 + $3)) of $1 samples on the expected chains: $(sort -t' ' -k2 -nr "$folded" | head -5)"
	local share=$((($2 * 100) / ($2 + $3)))
	[ "$share" -ge 57 ] && [ "$share" -le 77 ] || fail "long path has $share % (expected 67 +- 10)"
}

# Wait until process PID has used SECONDS of CPU (user and system), for
# at most 30 s: work done, however busy the host.
wait_cpu() { # PID SECONDS
	local i ticks hz
	hz=$(getconf CLK_TCK)
	for i in $(seq 300); do
		ticks=$(awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null) || return 1
		[ "$ticks" -ge "$(($2 * hz))" ] && return 0
		sleep 0.1
	done
	return 1
}

# The waits guest (tests/guests/waits.c) under --off-cpu.
# The share (%) of FOLDED's time in stacks through FRAME, and the total (s).
share() { # FOLDED FRAME
	awk -v f=";$2;" '{ t += $NF } index($0, f) { s += $NF } END { printf "%.1f %.2f\n", 100 * s / t, t / 1e9 }' "$1"
}

# SHARE within 5 points of the guest's own (from OUT), which is 80 on a
# quiet host and less on a busy one (a round's work waits for a CPU).
check_share() { # SHARE OUT
	local own
	own=$(sed -nE 's/^waits: ([0-9.]+)% of the time in snooze$/\1/p' <<<"$2")
	[ -n "$own" ] || fail "the guest said no share: $2"
	echo "# snooze: $1 % of the profile's wall time, $own % by the guest's clock" >&3
	awk -v a="$1" -v b="$own" 'BEGIN { d = a - b; exit !(d <= 5 && d >= -5 && b >= 60 && b <= 82) }' ||
		fail "snooze has $1 % of the profile, the guest slept $own %"
}
