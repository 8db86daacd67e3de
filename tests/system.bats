#!/usr/bin/env bats
# System mode: virtual machines under qemu-system-aarch64 and
# qemu-system-x86_64 (QEMU 10.2.2), attached while they run.  A bare-metal
# aarch64 program named from the ELF QEMU loads, and Debian's own Linux
# kernels named from the guest's /proc/kallsyms.

load helpers

V=10.2.2

setup() {
	D=$BATS_TEST_TMPDIR
	QSA=$BUILD/qemu-$V/bin/qemu-system-aarch64
	QSX=$BUILD/qemu-$V/bin/qemu-system-x86_64
	[ -x "$QSA" ] && [ -x "$QSX" ] || fail "system emulators not built (make qemu)"
	BARE=$BUILD/guests/bare/aarch64/bare
	VM_PID=
}

teardown() {
	stop_bg
	if [ -n "$VM_PID" ]; then kill "$VM_PID" 2>/dev/null || true; fi
}

# The bare-metal program, ROUNDS rounds (0: until killed); semihosting
# output in $D/vm.out.
bare_vm() { # ROUNDS
	echo "$QSA" -M virt -cpu max -m 128 -nodefaults -display none \
		-semihosting-config enable=on,target=native -kernel "$BARE" -append "$1"
}

# Start a VM in the background, in $D (where QEMU makes the jitdump marker).
start_vm() { # COMMAND...
	(cd "$D" && exec "$@" >"$D/vm.out" 2>"$D/vm.err") &
	VM_PID=$!
}

# Wait until the VM's console (FILE) has a line matching PATTERN.
wait_console() { # FILE PATTERN [SECONDS]
	local t=$((${3:-60} * 10))
	while ! grep -q "$2" "$1" 2>/dev/null && [ "$t" -gt 0 ]; do
		kill -0 "$VM_PID" 2>/dev/null || fail "the VM exited: $(cat "$D/vm.err")"
		sleep 0.1
		t=$((t - 1))
	done
	[ "$t" -gt 0 ] || fail "no '$2' on the console: $(tail -5 "$1")"
}

wait_vm() { # SECONDS
	wait_pid "$VM_PID" "$1" "the VM"
	VM_STATUS=$WAIT_STATUS
	VM_PID=
}

# Attach to the VM while perf records it: the tool for TOOL_S seconds,
# perf for 2 s once the tool has its handshake.
profile_vm() { # TOOL_S TOOL-OPTIONS...
	local secs=$1
	shift
	start_bg "$QEMU_JITBPF" -p "$VM_PID" -v -d "$secs" "$@"
	wait_bg_err handshake 10
	perf_record "$D/perf.data" 2 -p "$VM_PID"
	wait_bg 60
	[ "$BG_STATUS" = 0 ] || fail "qemu-jitbpf: $BG_STATUS: $(cat "$D/bg.err")"
}

@test "the system emulators have the probes, with argument specs libbpf 1.1 parses" {
	check_probe_specs "$QSX" $SYSTEM_PROBES
	check_probe_specs "$QSA" $SYSTEM_PROBES
	# Not the linux-user ones: guest images come from QEMU's ELF loader.
	! readelf -n "$QSX" | grep -q 'Name: linux_user_guest_base'
}

@test "bare-metal aarch64, attached 2 s late: perf map and jitdump name its functions, no symbol option" {
	start_vm $(bare_vm 0)
	sleep 2
	profile_vm 5 --perfmap --jitdump
	grep -q "loader_elf\|guest image $BARE" "$D/bg.err" || true
	check_attribution "$D/perf.data" hot_main
	perf_inject "$D/perf.data" "$D/perf.jit.data"
	check_attribution "$D/perf.jit.data" hot_main
	# hot_side does a third of hot_main's work.
	local m s
	m=$(jit_samples "$D/perf.jit.data" | awk '$2 == "hot_main"' | wc -l)
	s=$(jit_samples "$D/perf.jit.data" | awk '$2 == "hot_side"' | wc -l)
	[ "$s" -gt 0 ] && [ $((m * 10)) -gt $((s * 20)) ] && [ $((m * 10)) -lt $((s * 45)) ] ||
		fail "hot_main $m samples vs hot_side $s: not about 3:1"
	kill -0 "$VM_PID" || fail "the VM did not keep running"
}

@test "bare-metal aarch64 under --uftrace: exact call counts, one task per vCPU" {
	run "$QEMU_JITBPF" --uftrace="$D/u" -- $(bare_vm 300)
	assert_success
	assert_output --partial "bare: done 300 rounds"
	run uftrace report -d "$D/u" -s call
	assert_success
	echo "$output" | awk 'NF == 6 { print $6, $5 }' | sort >"$D/counts"
	cat >"$D/want" <<-EOF
		hot_main 300
		hot_side 300
		main 1
		mix 600
		one_round 300
	EOF
	grep -E '^(hot_main|hot_side|main|mix|one_round) ' "$D/counts" >"$D/got" || true
	diff -u "$D/want" "$D/got"
}

# The guest kernel's code symbols, from its own /proc/kallsyms (one boot,
# kept while the kernel is the same).
linux_kallsyms() { # ARCH
	local ks=$BUILD/guests/linux/$1/kallsyms
	if [ ! -s "$ks" ] || [ "$ks" -ot "$BUILD/guests/linux/$1/vmlinuz" ]; then
		"$TOP/scripts/guest-kallsyms.sh" "$1" "$BUILD/qemu-$V/bin" "$ks" ||
			fail "cannot list the $1 guest kernel's symbols"
	fi
	echo "$ks"
}

# A Linux VM (2 vCPUs, MTTCG) running the workload ROUNDS on each vCPU.
start_linux() { # ARCH ROUNDS
	start_vm "$TOP/scripts/linux-vm.sh" "$1" "$BUILD/qemu-$V/bin" "work:$2" "$D/console"
	wait_console "$D/console" "work: start" 120
}

# The VM ends on its own with the workload's right output.
check_linux_end() { # ARCH ROUNDS SECONDS
	local want
	# The checksum depends only on the rounds: the host computes it.
	want=$("$BUILD/guests/x86_64/hot" "$2")
	wait_vm "$3"
	[ "$VM_STATUS" = 0 ] || fail "the VM exited with $VM_STATUS: $(cat "$D/vm.err")"
	tr -d '\r' <"$D/console" | grep '^work: hot' >"$D/work.out"
	printf 'work: %s\nwork: %s\n' "$want" "$want" | diff -u - "$D/work.out"
	grep -q '^init: power off' "$D/console"
}

# JIT samples in the guest kernel's functions: at least MIN.
check_kernel_samples() { # PERF_DATA KALLSYMS MIN
	local n
	n=$(jit_samples "$1" | awk 'NR == FNR { k[$3] = 1; next } ($2 in k) { n++ }
		END { print n + 0 }' "$2" -)
	echo "# $n JIT samples in guest kernel functions" >&3
	[ "$n" -ge "$3" ] || fail "only $n samples named with guest kernel functions"
}

linux_attached_after_boot() { # ARCH
	local ks rounds=1200000
	ks=$(linux_kallsyms "$1")
	start_linux "$1" "$rounds"
	grep -q 'CPU 1/TCG' /proc/"$VM_PID"/task/*/comm || fail "QEMU runs no MTTCG vCPU threads"
	profile_vm 4 --perfmap --jitdump --guest-symbols "$ks" --guest-elf "$BUILD/guests/$1/hot"
	check_attribution "$D/perf.data" hot_main
	# The workload computes: the guest kernel runs for its timer
	# interrupts, whose share of the samples follows the host's load
	# (9 to 110 of ~15 000 in four runs): a few named suffice.
	check_kernel_samples "$D/perf.data" "$ks" 5
	perf_inject "$D/perf.data" "$D/perf.jit.data"
	check_attribution "$D/perf.jit.data" hot_main
	check_kernel_samples "$D/perf.jit.data" "$ks" 5
	check_linux_end "$1" "$rounds" 120
}

@test "Debian's x86_64 kernel, -smp 2, attached after boot: guest kernel and workload named" {
	linux_attached_after_boot x86_64
}

@test "Debian's arm64 kernel, -M virt -cpu max -smp 2, attached after boot: guest kernel and workload named" {
	linux_attached_after_boot aarch64
}

@test "attach and detach 10 times to a running VM: it keeps running, its console unchanged" {
	local rounds=2000000 i
	start_linux x86_64 "$rounds"
	for i in $(seq 10); do
		run "$QEMU_JITBPF" -p "$VM_PID" -d 0.5 --perfmap --guest-elf "$BUILD/guests/x86_64/hot"
		assert_success
		grep -q ' hot_main$' "/tmp/perf-$VM_PID.map" || fail "attach $i: no hot_main in the map"
		kill -0 "$VM_PID" || fail "the VM stopped after attach $i"
	done
	grep -q '^work: hot' "$D/console" && fail "the workload ended before the 10th detach"
	check_linux_end x86_64 "$rounds" 120
}

@test "bare-metal aarch64 profile (MMU off): guest call stacks from its RAM, read by pprof" {
	start_vm $(bare_vm 0)
	sleep 1
	run "$QEMU_JITBPF" -p "$VM_PID" -d 3 -F 199 --profile="$D/p.folded" --profile="$D/p.pb.gz"
	assert_success
	# Whole guest stacks, from _start: the frame records are in guest RAM.
	local total main side
	total=$(awk '{ n += $NF } END { print n + 0 }' "$D/p.folded")
	main=$(awk '/;_start;main;one_round;hot_main( |;)/ { n += $NF } END { print n + 0 }' \
		"$D/p.folded")
	side=$(awk '/;_start;main;one_round;hot_side( |;)/ { n += $NF } END { print n + 0 }' \
		"$D/p.folded")
	echo "# $total samples: _start;main;one_round;hot_main $main, ...;hot_side $side" >&3
	[ $((main * 100)) -ge $((total * 55)) ] || fail "hot_main stacks: $main of $total"
	[ $((side * 100)) -ge $((total * 15)) ] || fail "hot_side stacks: $side of $total"
	run go tool pprof -traces "$D/p.pb.gz"
	assert_success
	assert_output --partial "one_round"
	kill -0 "$VM_PID" || fail "the VM did not keep running"
}

@test "--stacks of a bare-metal VM (MMU off): the vCPU's whole stack from its RAM, as the profiler names it" {
	local i f hot=0
	start_vm $(bare_vm 0)
	sleep 1
	for i in 1 2 3; do
		run "$QEMU_JITBPF" -p "$VM_PID" --stacks="$D/s.json"
		assert_success
		f=$(/usr/bin/python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))['processes'][0]['threads']
print(len(t), ';'.join(f['function'] for f in t[0]['frames']), t[0]['state'])" "$D/s.json")
		echo "# $f" >&3
		# In a round, or printing the rounds done (every 1000th round:
		# a semihosting call, which leaves the translated code).
		[[ $f =~ ^1\ ((hot_(main|side)\;one_round|(put\;)?put_num)\;)?main\;_start\  ]] || fail "$f"
		[[ $f != *one_round* ]] || hot=$((hot + 1))
	done
	[ "$hot" -ge 1 ] || fail "no stack of the 3 in a round"
	kill -0 "$VM_PID" || fail "the VM did not keep running"
}

@test "Linux VM profile, coverage and --top: the guest kernel's and the workload's functions" {
	local ks
	ks=$(linux_kallsyms x86_64)
	start_linux x86_64 3000000
	# As copied through a serial console: CRLF line ends, read as LF.
	sed 's/$/\r/' "$ks" >"$D/kallsyms.crlf"
	run "$QEMU_JITBPF" -p "$VM_PID" -d 3 --profile="$D/p.folded" --guest-symbols "$D/kallsyms.crlf" \
		--guest-elf "$BUILD/guests/x86_64/hot" --coverage="$D/vm.info"
	assert_success
	# Coverage: the kernel's functions from its symbols (no lines), the
	# workload's lines and functions from its DWARF.
	local fnf fnh
	fnf=$(awk -v f="SF:$D/kallsyms.crlf" '$0 == f { s = 1 } s && /^FNF:/ { print substr($0, 5); exit }' "$D/vm.info")
	fnh=$(awk -v f="SF:$D/kallsyms.crlf" '$0 == f { s = 1 } s && /^FNH:/ { print substr($0, 5); exit }' "$D/vm.info")
	echo "# guest kernel: $fnh of $fnf functions ran" >&3
	# Every function of the map (one name per address), run or not.
	[ "$fnf" -eq "$(awk '$2 ~ /^[tTwW]$/ && $1 !~ /^0+$/ { print $1 }' "$ks" | sort -u | wc -l)" ] ||
		fail "$fnf kernel functions listed"
	[ "$fnh" -ge 100 ] && [ $((fnh * 4)) -lt "$fnf" ] || fail "$fnh of $fnf kernel functions ran"
	# (Timer interrupts come while it runs.)
	grep -qE '^FNDA:[1-9][0-9]*,hrtimer_interrupt$' "$D/vm.info" || fail "hrtimer_interrupt did not run"
	grep -qE '^FNDA:[1-9][0-9]*,hot_main$' "$D/vm.info" || fail "hot_main did not run"
	grep -q '^SF:.*/tests/guests/hot.c$' "$D/vm.info" || fail "no hot.c"
	run genhtml -q --no-source -o "$D/html" "$D/vm.info"
	assert_success
	refute_output --partial WARNING
	local total main kern
	total=$(awk '{ n += $NF } END { print n + 0 }' "$D/p.folded")
	main=$(awk '/;hot_main( |;)/ { n += $NF } END { print n + 0 }' "$D/p.folded")
	# Leaves in the guest kernel, named from its kallsyms.
	kern=$(awk 'NR == FNR { k[$3] = 1; next } { split($1, f, ";"); for (i in f) if (f[i] in k) { n += $NF; break } }
		END { print n + 0 }' "$ks" "$D/p.folded")
	echo "# $total samples, hot_main $main, in guest kernel functions $kern" >&3
	[ $((main * 100)) -ge $((total * 50)) ] || fail "hot_main: $main of $total"
	[ "$kern" -ge 1 ] || fail "no sample in a guest kernel function"
	! grep -q $'\r' "$D/p.folded" || fail "a carriage return in a name"
	tmux new-session -d -s "qj-systop-$$" -x 120 -y 30 \
		"$QEMU_JITBPF -p $VM_PID --top --guest-elf $BUILD/guests/x86_64/hot 2>$D/top.err; echo EXIT=\$? >$D/top.exit"
	sleep 4
	local screen
	screen=$(tmux capture-pane -p -t "qj-systop-$$")
	echo "$screen" | sed 's/^/# /' >&3
	tmux send-keys -t "qj-systop-$$" q
	wait_for_file "$D/top.exit" 10
	assert_equal "$(cat "$D/top.exit")" EXIT=0
	grep -A1 'self%' <<<"$screen" | tail -n1 | grep -q ' hot_main ' || fail "hot_main is not first"
	# --stacks: each vCPU, its leaf named from the guest kernel's
	# kallsyms or the workload's ELF (the MMU is on: no stack is read).
	run "$QEMU_JITBPF" -p "$VM_PID" --stacks="$D/s.json" --guest-symbols "$ks" \
		--guest-elf "$BUILD/guests/x86_64/hot"
	assert_success
	/usr/bin/python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))['processes'][0]['threads']
k = set(l.split()[2] for l in open(sys.argv[2]) if len(l.split()) > 2)
print('#', [(x['name'], [f['function'] for f in x['frames']]) for x in t], file=sys.stderr)
ok = len(t) == 2 and all(len(x['frames']) == 1 and (x['frames'][0]['function'] in k
                         or x['frames'][0]['function'] in ('hot_main', 'hot_side')) for x in t)
sys.exit(not ok)" "$D/s.json" "$ks" 2>&3 || fail "$(cat "$D/s.json")"
	check_linux_end x86_64 3000000 120
}

@test "--guest-symbols: bad input is a one-line error" {
	run "$QEMU_JITBPF" --guest-symbols "$D/none" -- "$QSA" -M virt
	assert_failure
	assert_output "qemu-jitbpf: --guest-symbols $D/none: No such file or directory"
	printf 'ffffffff81000000 T startup_64\nnot a symbol line\n' >"$D/bad.map"
	run "$QEMU_JITBPF" --guest-symbols "$D/bad.map" -- "$QSA" -M virt
	assert_failure
	assert_output "qemu-jitbpf: --guest-symbols $D/bad.map: line 2 is not a System.map or kallsyms line"
	printf 'ffffffff81000000 D some_data\n' >"$D/data.map"
	run "$QEMU_JITBPF" --guest-symbols "$D/data.map" -- "$QSA" -M virt
	assert_failure
	assert_output "qemu-jitbpf: --guest-symbols $D/data.map: no code symbols (types t, T, w, W)"
	printf 'ffffffff81000000 T startup_64\n' >"$D/ok.map"
	run "$QEMU_JITBPF" --guest-symbols "$D/ok.map:zz" -- "$QSA" -M virt
	assert_failure
	assert_output "qemu-jitbpf: --guest-symbols $D/ok.map:zz: bias 'zz' is not a number"
	run "$QEMU_JITBPF" -a --guest-symbols "$D/ok.map"
	assert_failure
	assert_line --partial "--guest-symbols"
}

@test "round-robin vCPUs (one thread for two): uftrace keeps a task per vCPU and privilege level" {
	LINUX_VM_ACCEL=tcg,thread=single start_linux x86_64 1500000
	grep -q 'CPU 1/TCG' /proc/"$VM_PID"/task/*/comm && fail "QEMU runs MTTCG threads"
	run "$QEMU_JITBPF" -p "$VM_PID" -d 1 --uftrace="$D/u" --guest-elf "$BUILD/guests/x86_64/hot"
	assert_success
	# x86: task 10 x (vCPU + 1) + CPL; the workload runs at CPL 3 on both.
	local tasks
	tasks=$(sed -n 's/^TASK .* tid=\([0-9]*\) .*/\1/p' "$D/u/task.txt" | sort -n | tr '\n' ' ')
	echo "# tasks: $tasks" >&3
	[[ " $tasks" == *" 13 "* && " $tasks" == *" 23 "* ]] || fail "tasks $tasks"
	for t in 13 23; do
		uftrace report -d "$D/u" --tid "$t" -s call 2>/dev/null | grep -q ' hot_main$' ||
			fail "task $t has no hot_main"
	done
	check_linux_end x86_64 1500000 180
}
