#!/usr/bin/env bats
# qemu-jitbpf: command line, error paths, safe files, third-party guests.

load helpers

bats_require_minimum_version 1.5.0

setup() {
	[ -x "$QEMU_JITBPF" ] || fail "make tool first"
	Q=$(qemu_bin 10.2.2 x86_64)
	D=$BATS_TEST_TMPDIR
}

teardown() {
	stop_bg
}

@test "--help shows usage and examples" {
	run "$QEMU_JITBPF" --help
	assert_success
	assert_output --partial "qemu-jitbpf -p PID"
	assert_output --partial "EXAMPLES:"
	assert_output --partial "--jitdump"
	assert_output --partial "--perfmap-insn"
	assert_output --partial "--guest-elf"
	# argp wraps a line past 79 columns: an example cut in two is wrong.
	awk '/^EXAMPLES:/ { on = 1; next } on && /^$/ { exit }
		on && !/^    (qemu-jitbpf|perf) / { print "wrapped: " $0; bad = 1 }
		END { exit bad }' <<<"$output" || fail "an example wraps"
	! awk 'length > 79' <<<"$output" | grep . || fail "lines past 79 columns"
}

@test "the man page describes exactly the options --help lists" {
	local help man
	# Each option line's names (before its text), as argp prints them.
	help=$("$QEMU_JITBPF" --help | grep -E '^ +-' | sed -E 's/^ +//; s/  .*//' |
		grep -oE -- '--[a-z][a-z-]*' | sort -u)
	# The line after each .TP of the man page names its options.
	man=$(awk '/^\.TP/ { getline; print }' "$TOP/docs/qemu-jitbpf.8" | sed 's/\\-/-/g' |
		grep -oE -- '--[a-z][a-z-]*' | sort -u)
	[ "$(wc -l <<<"$help")" -ge 40 ] || fail "only $(wc -l <<<"$help") options in --help"
	[ "$help" = "$man" ] || fail "only in --help: $(comm -23 <(echo "$help") <(echo "$man") | xargs)
only in the man page: $(comm -13 <(echo "$help") <(echo "$man") | xargs)"
}

# The long options named in --help's block that starts with a line
# matching START, up to its first empty line.
help_block_options() { # START
	"$QEMU_JITBPF" --help | awk -v start="$1" '$0 ~ start { on = 1 } on && /^$/ { exit } on' |
		grep -oE -- '--[a-z][a-z-]*' | sort -u
}

# The long options of the man page's section NAME, up to the next .SH.
man_section_options() { # NAME
	awk -v sh=".SH $1" '$0 == sh { on = 1; next } on && /^\.SH / { exit } on' \
		"$TOP/docs/qemu-jitbpf.8" | sed 's/\\-/-/g' | grep -oE -- '--[a-z][a-z-]*' | sort -u
}

@test "--help's usage and examples and the man page's synopsis and examples: real options, the same ones, the features people come for" {
	local all usage synopsis examples man_examples f
	all=$("$QEMU_JITBPF" --help | grep -E '^ +-' | sed -E 's/^ +//; s/  .*//' |
		grep -oE -- '--[a-z][a-z-]*' | sort -u)
	usage=$(help_block_options '^USAGE:')
	examples=$(help_block_options '^EXAMPLES:' | grep -vx -- '--' || true)
	synopsis=$(man_section_options SYNOPSIS)
	man_examples=$(man_section_options EXAMPLES)
	# Every option they name is one the tool has.
	for f in usage examples synopsis man_examples; do
		[ -z "$(comm -23 <(echo "${!f}") <(echo "$all"))" ] ||
			fail "$f names options the tool lacks: $(comm -23 <(echo "${!f}") <(echo "$all") | xargs)"
	done
	# The man page's synopsis has each of --help's usage (and the options
	# of each subsystem), its examples each option --help's examples use.
	[ -z "$(comm -23 <(echo "$usage") <(echo "$synopsis"))" ] ||
		fail "in --help's usage, not in the synopsis: $(comm -23 <(echo "$usage") <(echo "$synopsis") | xargs)"
	[ -z "$(comm -23 <(echo "$examples") <(echo "$man_examples"))" ] ||
		fail "in --help's examples, not the man page's: $(comm -23 <(echo "$examples") <(echo "$man_examples") | xargs)"
	# What people come for is in each.
	for f in --report --stacks --off-cpu --coverage --push --profile --uftrace --jitdump; do
		grep -qx -- "$f" <<<"$usage" || fail "--help's usage lacks $f"
		grep -qx -- "$f" <<<"$synopsis" || fail "the synopsis lacks $f"
		grep -qx -- "$f" <<<"$examples" || fail "--help's examples lack $f"
		grep -qx -- "$f" <<<"$man_examples" || fail "the man page's examples lack $f"
	done
}

@test "--version, the man page and the packages say the version scripts/version.sh says; bugs go to the issue tracker" {
	local v
	v=$("$TOP/scripts/version.sh")
	run "$QEMU_JITBPF" --version
	assert_success
	assert_output "qemu-jitbpf $v"
	# A release's man page names the release: VERSION's.
	head -n1 "$TOP/docs/qemu-jitbpf.8" | grep -qF "\"qemu-jitbpf $(cat "$TOP/VERSION")\"" ||
		fail "man page: $(head -n1 "$TOP/docs/qemu-jitbpf.8")"
	grep -q "^## $(sed 's/\./\\./g' "$TOP/VERSION") " "$TOP/NEWS.md" || fail "NEWS.md has no $(cat "$TOP/VERSION")"
	run "$QEMU_JITBPF" --help
	assert_output --regexp 'Report bugs to <https://[^>]+/issues>'
	refute_output --partial localhost
}

@test "neither -p nor a command is a usage error" {
	run "$QEMU_JITBPF"
	[ "$status" -ne 0 ]
	assert_output --partial "give either -p PID, -a or -- QEMU-COMMAND"
	run "$QEMU_JITBPF" -p abc
	[ "$status" -ne 0 ]
	assert_output --partial "invalid PID 'abc'"
}

@test "uftrace's filters: bad values and a filter without --uftrace are usage errors" {
	local q g
	q=$(qemu_bin 10.2.2 x86_64)
	g=$(guest x86_64 calls)
	run "$QEMU_JITBPF" -D 0 --uftrace="$D/u" -- "$q" "$g"
	assert_failure
	assert_line --partial "invalid depth '0' (1 to 1024)"
	run "$QEMU_JITBPF" -t 3parsecs --uftrace="$D/u" -- "$q" "$g"
	assert_failure
	assert_line --partial "invalid time '3parsecs' (e.g. 500ns, 1us, 2.5ms, 1s)"
	run "$QEMU_JITBPF" -F 'cg_(' --uftrace="$D/u" -- "$q" "$g"
	assert_failure
	assert_line --partial "invalid function 'cg_(': not a regular expression"
	run "$QEMU_JITBPF" -N cg_leaf --perfmap -- "$q" "$g"
	assert_failure
	assert_line --partial "-F FUNC, -N, -D and -t go with --uftrace"
	[ ! -e "$D/u" ] || fail "bad options, yet $D/u was made"
	# -F with a number is still perf's frequency.
	run "$QEMU_JITBPF" -F 10001 --profile="$D/p.folded" -- "$q" "$g"
	assert_failure
	assert_line --partial "invalid frequency '10001'"
}

@test "error: PID not running" {
	run "$QEMU_JITBPF" -p 4194303
	assert_failure
	assert_output "qemu-jitbpf: process 4194303 is not running"
}

@test "error: not a QEMU" {
	start_bg sleep 30
	sleep 0.2 # until the shell has exec'd sleep
	run "$QEMU_JITBPF" -p "$BG_PID"
	assert_failure
	assert_output --regexp "^qemu-jitbpf: process $BG_PID \(sleep, .*/sleep\) is not a QEMU$"
}

@test "error: a QEMU without the probes says how to build one" {
	# Any binary named like QEMU that lacks the probes, e.g. Debian's.
	cp "$(command -v sleep)" "$D/qemu-x86_64"
	start_bg "$D/qemu-x86_64" 30
	sleep 0.2
	run "$QEMU_JITBPF" -p "$BG_PID"
	assert_failure
	assert_output "qemu-jitbpf: $D/qemu-x86_64 (pid $BG_PID) has no USDT probes: it works with a QEMU built with ours (make qemu, see README.md), or, degraded, with a linux-user QEMU built with the dtrace trace backend (Fedora's, RHEL's, Azure Linux's)"
}

@test "error: missing privilege names the capabilities" {
	start_bg "$Q" "$(guest x86_64 spin)" 2000000
	run setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
		"$QEMU_JITBPF" -p "$BG_PID"
	assert_failure
	assert_output "qemu-jitbpf: missing capability CAP_BPF: needed to load BPF programs (run as root, or see PRIVILEGES in qemu-jitbpf(8))"
}

@test "error: output directory missing or not writable" {
	run "$QEMU_JITBPF" -o "$D/nope" --jitdump -- "$Q" "$(guest x86_64 hot)" 1
	assert_failure
	assert_output "qemu-jitbpf: output directory $D/nope does not exist"
	mkdir "$D/ro"
	mount -t tmpfs -o ro none "$D/ro"
	run "$QEMU_JITBPF" -o "$D/ro" --jitdump -- "$Q" "$(guest x86_64 hot)" 1
	umount "$D/ro"
	assert_failure
	assert_output "qemu-jitbpf: output directory $D/ro is not writable"
}

@test "error: --guest-elf with a bad file or bias" {
	start_bg "$Q" "$(guest x86_64 spin)" 2000000
	sleep 0.5 # until the shell has exec'd QEMU
	run "$QEMU_JITBPF" -p "$BG_PID" --guest-elf "$D/none.elf"
	assert_failure
	assert_output "qemu-jitbpf: --guest-elf $D/none.elf: not a readable ELF file"
	run "$QEMU_JITBPF" -p "$BG_PID" --guest-elf "$(guest x86_64 hot):0xzz"
	assert_failure
	assert_output "qemu-jitbpf: --guest-elf $(guest x86_64 hot):0xzz: bias '0xzz' is not a number"
}

@test "the perf map is never written through a planted link, and belongs to QEMU's user" {
	start_bg setpriv --reuid=nobody --regid=nogroup --clear-groups "$Q" "$(guest x86_64 spin)" 2000000
	sleep 0.5
	echo precious >"$D/victim"
	ln -sf "$D/victim" "/tmp/perf-$BG_PID.map"
	run "$QEMU_JITBPF" -p "$BG_PID" -d 1
	assert_success
	[ "$(cat "$D/victim")" = precious ]
	[ -f "/tmp/perf-$BG_PID.map" ] && [ ! -L "/tmp/perf-$BG_PID.map" ]
	run stat -c '%U %a' "/tmp/perf-$BG_PID.map"
	assert_output "nobody 644"
	run grep -c ' spin_round$' "/tmp/perf-$BG_PID.map"
	[ "$output" -ge 1 ]
	rm -f "/tmp/perf-$BG_PID.map"
}

@test "--guest-elf names code that QEMU's images leave nameless" {
	# A stripped guest: only the unstripped file given with --guest-elf
	# has the symbols.
	strip -o "$D/spin.stripped" "$(guest x86_64 spin)"
	start_bg "$Q" "$D/spin.stripped" 2000000
	sleep 0.5
	run "$QEMU_JITBPF" -p "$BG_PID" -d 1
	assert_success
	run grep -c ' spin_round$' "/tmp/perf-$BG_PID.map"
	assert_output 0
	run "$QEMU_JITBPF" -p "$BG_PID" -d 1 --guest-elf "$(guest x86_64 spin):0"
	assert_success
	run grep -c ' spin_round$' "/tmp/perf-$BG_PID.map"
	[ "$output" -ge 1 ] || fail "no spin_round in the map"
	rm -f "/tmp/perf-$BG_PID.map"
}

@test "Debian's python3, a third-party guest: samples land on libpython and libc symbols" {
	for v in 10.2.2 7.2; do
		q=$(qemu_bin "$v" x86_64)
		D=$BATS_TEST_TMPDIR/$v
		mkdir -p "$D"
		run perf record -q -e cpu-clock -k 1 -o "$D/perf.data" -- \
			"$QEMU_JITBPF" --jitdump -o "$D" -- "$q" /usr/bin/python3 -c \
			'import json; print(sum(len(json.dumps(list(range(i % 50)))) for i in range(40000)))'
		assert_success
		perf_inject "$D/perf.data" "$D/perf.jit.data"
		jit_samples "$D/perf.jit.data" >"$D/s.txt"
		total=$(wc -l <"$D/s.txt")
		py=$(grep -cE ' (_?Py|_PyEval_EvalFrameDefault)' "$D/s.txt" || true)
		libc=$(grep -cE ' (__memmove|__memcpy|memcpy|memmove|malloc|_int_malloc|_int_free|free|cfree|__strlen|strlen|__memset|memset)' "$D/s.txt" || true)
		top=$(awk '{ print $2 }' "$D/s.txt" | sort | uniq -c | sort -rn | head -n 5)
		echo "# $v: $total JIT samples, $py in Py*, $libc in libc; top: $(echo $top)" >&3
		[ "$total" -ge 100 ] || fail "$v: $total JIT samples"
		# python3.11 is stripped: its static functions have no name
		# anywhere (not for native perf either); exported ones do.
		[ $((py * 100)) -ge $((total * 25)) ] || fail "$v: $py of $total in Py* functions"
		[ "$libc" -ge 5 ] || fail "$v: $libc samples in libc"
		grep -q ' _PyEval_EvalFrameDefault$' <<<"$top" || fail "$v: top is $top"
	done
}

@test "--uftrace: events the ring had no room for are counted and marked LOST" {
	run "$QEMU_JITBPF" --ringbuf-mb 1 --uftrace="$D/u" -- "$Q" "$(guest x86_64 calls)" count 2000000
	assert_success
	lost=$(calls_lost "$output")
	echo "# $lost call events lost" >&3
	[ "$lost" -gt 0 ] || fail "a 1 MiB ring lost no call: $output"
	[ "$(uftrace_lost "$D/u")" -eq "$lost" ]
	# Tens of millions of records: read as they stream, not kept in $output.
	uftrace replay -d "$D/u" 2>/dev/null | grep -qE '/\* LOST [0-9]+ records!! \*/' ||
		fail "uftrace replay shows no LOST record"
	# A riscv64 program starts at 0x10000, where counts are addresses
	# of its symbols too: uftrace dump then names one (uftrace_lost).
	run "$QEMU_JITBPF" --ringbuf-mb 1 --uftrace="$D/r" -- "$(qemu_bin 10.2.2 riscv64)" \
		"$(guest riscv64 calls)" count 2000000
	assert_success
	lost=$(calls_lost "$output")
	echo "# riscv64: $lost call events lost" >&3
	[ "$lost" -gt 0 ] || fail "a 1 MiB ring lost no call: $output"
	[ "$(uftrace_lost "$D/r")" -eq "$lost" ]
}

@test "--uftrace: a gap deeper than uftrace's max_stack is marked LOST too" {
	# 3000 calls deep: most events, and so most gaps, are below the
	# 1024 frames uftrace records.
	run "$QEMU_JITBPF" --ringbuf-mb 1 --uftrace="$D/u" -- "$Q" "$(guest x86_64 hostile)" deep 2000
	assert_success
	assert_line --regexp '^deep 2000 '
	lost=$(calls_lost "$output")
	echo "# $lost call events lost" >&3
	[ "$lost" -gt 0 ] || fail "a 1 MiB ring lost no call: $output"
	[ "$(uftrace_lost "$D/u")" -eq "$lost" ]
}

@test "valgrind: no memory error and no leak in launched runs (perf map, jitdump, uftrace)" {
	no_valgrind_under_asan
	vg() {
		valgrind -q --suppressions="$TOP/tests/valgrind.supp" --error-exitcode=99 \
			--leak-check=full --errors-for-leak-kinds=definite,possible "$@"
	}
	run vg "$QEMU_JITBPF" --perfmap --jitdump -o "$D" -- "$Q" "$(guest x86_64 hot)" 2000
	[ "$status" -ne 99 ] || fail "valgrind: $output"
	assert_success
	assert_line --regexp '^hot 2000 '
	rm -f "$(perfmap_of "$output")"
	run vg "$QEMU_JITBPF" --uftrace="$D/u" -- "$Q" "$(guest x86_64 calls)"
	[ "$status" -ne 99 ] || fail "valgrind: $output"
	assert_success
	assert_line --regexp '^qemu-jitbpf: uftrace: .* \([1-9][0-9]* records\)$'
}

@test "a run shorter than the tool's 10 ms drain still gets its jitdump" {
	# QEMU has exited, its mappings gone, when the tool reads the marker.
	run "$QEMU_JITBPF" --jitdump -o "$D" -- "$Q" "$(guest x86_64 hot)" 1
	assert_success
	assert_line --regexp "^qemu-jitbpf: jitdump: $D/jit-[0-9]+\.dump$"
	f=$(sed -nE 's/^qemu-jitbpf: jitdump: //p' <<<"$output")
	# Header, then CODE_LOAD records (id 0) with code bytes.
	[ "$(stat -c %s "$f")" -gt 4096 ] || fail "$(stat -c %s "$f") bytes"
	[ "$(head -c 4 "$f" | od -An -tx4 | tr -d ' ')" = 4a695444 ]
}

@test "the detach helper: the tool run anew, no capability, nothing open but its socket and links, its own session; it leaves" {
	run "$QEMU_JITBPF" --perfmap -- "$Q" "$(guest x86_64 fib)" 20
	assert_success
	rm -f "$(perfmap_of "$output")"
	# It took our links (or an earlier run's helper did, a process alike).
	helper=$(pgrep -f '^qemu-jitbpf-detach [0-9]+$' | head -n 1)
	[ -n "$helper" ] || fail "no detach helper: $(pgrep -af qemu-jitbpf)"
	[ "$(cat "/proc/$helper/comm")" = qemu-jitbpf ] || fail "named $(cat "/proc/$helper/comm")"
	for cap in CapPrm CapEff CapBnd; do
		v=$(awk -v k="$cap:" '$1 == k { print $2 }' "/proc/$helper/status")
		[ "$cap" = CapBnd ] || [ "$v" = 0000000000000000 ] || fail "$cap $v"
	done
	grep -q '^NoNewPrivs:[[:space:]]*1$' "/proc/$helper/status" || fail "may gain privileges"
	[ "$(ps -o sid= -p "$helper" | tr -d ' ')" = "$helper" ] || fail "not in a session of its own"
	for fd in "/proc/$helper/fd"/*; do
		case $(readlink "$fd") in
		/dev/null | socket:* | anon_inode:bpf-link) ;;
		*) fail "fd $fd open on $(readlink "$fd")" ;;
		esac
	done
	# Idle for 0.5 s, it leaves, and our links with it: no program of
	# ours is left loaded.
	wait_pid "$helper" 5 "the detach helper"
	for _ in $(seq 20); do
		bpftool prog show 2>/dev/null | grep -qE 'name (tb_gen_code_bat|tcg_prologue|jit_attach) ' || break
		sleep 0.1
	done
	! bpftool prog show 2>/dev/null | grep -E 'name (tb_gen_code_bat|tcg_prologue|jit_attach) ' ||
		fail "programs of ours still loaded"
}

@test "a launched QEMU's exit status is the tool's, its files written all the same" {
	bb=/bin/busybox
	for v in 10.2.2 7.2; do
		q=$(qemu_bin "$v" x86_64)
		run "$QEMU_JITBPF" --perfmap --uftrace="$D/u-$v" -- "$q" "$bb" sh -c 'echo guest; exit 3'
		[ "$status" -eq 3 ] || fail "$v: exit $status, not 3: $output"
		assert_line guest
		assert_line --regexp '^qemu-jitbpf: uftrace: .* \([1-9][0-9]* records\)$'
		map=$(perfmap_of "$output")
		[ -s "$map" ] || fail "$v: no perf map"
		rm -f "$map"
		run uftrace replay -d "$D/u-$v"
		assert_success
		# The guest ran 0 still gives 0.
		run "$QEMU_JITBPF" -- "$q" "$bb" true
		assert_success
		rm -f "$(perfmap_of "$output")"
	done
}

# The QEMU that the qemu-jitbpf of start_bg launched, as soon as it runs.
launched_qemu() { # GUEST-NAME -> $qemu
	for _ in $(seq 500); do
		qemu=$(pgrep -P "$BG_PID" -f "guests/x86_64/$1" || true)
		[ -z "$qemu" ] || return 0
		sleep 0.01
	done
	fail "QEMU did not start"
}

@test "a launched QEMU killed by a signal gives 128 + the signal" {
	# The guest kills itself, once we have attached (QEMU makes the
	# jitdump's marker at the handshake): QEMU dies of the same signal.
	# (Killed before by a signal it leaves to the kernel, QEMU goes with
	# what it held: no files, the status all the same.)
	start_bg "$QEMU_JITBPF" --jitdump -o "$D" -- "$Q" /bin/busybox sh -c \
		"while [ ! -e '$D/go' ]; do :; done; kill -TERM \$\$"
	for _ in $(seq 100); do
		ls "$D"/jit-*.dump >/dev/null 2>&1 && break
		sleep 0.1
	done
	touch "$D/go"
	wait_bg 30
	[ "$BG_STATUS" -eq 143 ] || fail "exit $BG_STATUS, not 143: $(cat "$BATS_TEST_TMPDIR/bg.err")"
	grep -qE "^qemu-jitbpf: jitdump: $D/jit-[0-9]+\.dump$" "$BATS_TEST_TMPDIR/bg.err" ||
		fail "no jitdump: $(cat "$BATS_TEST_TMPDIR/bg.err")"
	rm -f /tmp/perf-"$(sed -nE 's|^qemu-jitbpf: jitdump: .*/jit-([0-9]+)\.dump$|\1|p' "$BATS_TEST_TMPDIR/bg.err")".map
	# Killed from outside, while the tool traces it.
	start_bg "$QEMU_JITBPF" --jitdump -o "$D" -- "$Q" "$(guest x86_64 spin)" 2000000
	launched_qemu spin
	wait_for_file "$D/jit-$qemu.dump" # attached
	kill -KILL "$qemu"
	wait_bg 30
	[ "$BG_STATUS" -eq 137 ] || fail "exit $BG_STATUS, not 137: $(cat "$BATS_TEST_TMPDIR/bg.err")"
	grep -q "^qemu-jitbpf: jitdump: $D/jit-$qemu.dump$" "$BATS_TEST_TMPDIR/bg.err"
	rm -f "/tmp/perf-$qemu.map"
}

@test "a launched QEMU killed while the tool starts: its status, not an attach error" {
	# QEMU waits for the tool's probes (QEMU_JIT_ATTACH_WAIT) while the
	# tool loads; killed then, the tool cannot attach.
	start_bg "$QEMU_JITBPF" -- "$Q" "$(guest x86_64 spin)" 2000000
	launched_qemu spin
	kill -KILL "$qemu"
	wait_bg 30
	[ "$BG_STATUS" -eq 137 ] || fail "exit $BG_STATUS, not 137: $(cat "$BATS_TEST_TMPDIR/bg.err")"
	rm -f "/tmp/perf-$qemu.map"
}

# Start a guest (hot ROUNDS, unless given) under a QEMU asked to hold its
# reports for a tracer (QEMU_JIT_ATTACH_HOLD, as the tool sets it when it
# launches QEMU; or another VARIABLE); the QEMU's pid in $qemu.  The guest
# runs at once, with nobody attached.
start_holding_qemu() { # ROUNDS | VARIABLE GUEST ARGS...
	local var=QEMU_JIT_ATTACH_HOLD
	if [ $# -gt 1 ]; then
		var=$1
		shift
	else
		set -- hot "$1"
	fi
	start_bg env HOLD_VAR="$var" sh -c 'export $HOLD_VAR=$$; exec "$0" "$@"' "$Q" \
		"$(guest x86_64 "$1")" "${@:2}"
	qemu=$BG_PID
	local t=100
	while [ ! -s "$BATS_TEST_TMPDIR/bg.out" ] && [ "$t" -gt 0 ]; do
		sleep 0.05
		t=$((t - 1))
	done
	[ -s "$BATS_TEST_TMPDIR/bg.out" ] || fail "the guest did not run while QEMU held its reports"
}

@test "a QEMU holding its reports runs the guest at once; a tool that attaches after the guest ended names all of it" {
	local map
	start_holding_qemu 300
	# The guest is done; QEMU waits at its exit for a tracer.
	kill -0 "$qemu" || fail "QEMU did not wait for a tracer at exit"
	run "$QEMU_JITBPF" -v --perfmap -p "$qemu"
	assert_success
	assert_line --regexp '^qemu-jitbpf: [1-9][0-9]* TB reports from before the handshake \(QEMU held them'
	assert_line --partial ", 0 events lost"
	map=$(perfmap_of "$output")
	grep -q ' hot_main$' "$map" || fail "no hot_main in $map"
	grep -q ' hot_side$' "$map" || fail "no hot_side in $map"
	rm -f "$map"
	# Handed over, QEMU exits at once, with the guest's output.
	wait_bg 5
	[ "$BG_STATUS" -eq 0 ] || fail "QEMU exited with $BG_STATUS"
	[ "$(cat "$D/bg.out")" = "$("$(guest x86_64 hot)" 300)" ] || fail "guest printed $(cat "$D/bg.out")"
}

@test "a QEMU holding its reports for a tracer that never comes drops them after 10 s and exits" {
	start_holding_qemu 300
	wait_bg 20
	[ "$BG_STATUS" -eq 0 ] || fail "QEMU exited with $BG_STATUS"
	[ "$(cat "$D/bg.out")" = "$("$(guest x86_64 hot)" 300)" ] || fail "guest printed $(cat "$D/bg.out")"
}

@test "a QEMU holding its calls runs the guest at once; a tool that attaches after the guest ended records all of them" {
	local expected actual
	start_holding_qemu QEMU_JIT_ATTACH_HOLD_CALLS calls count 300
	kill -0 "$qemu" || fail "QEMU did not wait for a tracer at exit"
	run "$QEMU_JITBPF" -v --uftrace="$D/u" -p "$qemu"
	assert_success
	assert_line --partial ", 0 events lost"
	wait_bg 5
	[ "$BG_STATUS" -eq 0 ] || fail "QEMU exited with $BG_STATUS"
	[ "$(cat "$D/bg.out")" = "$("$BUILD/guests/native/calls" count 300)" ] ||
		fail "guest printed $(cat "$D/bg.out")"
	# Every call since the first block, main's included, as native
	# uftrace records the -pg build; all of them the main thread's.
	uftrace record -d "$D/native" "$BUILD/guests/native/calls-pg" count 300 >/dev/null
	expected=$(uftrace_counts "$D/native")
	actual=$(uftrace_counts "$D/u")
	grep -q '^main 1$' <<<"$expected" || fail "native: $expected"
	[ "$actual" = "$expected" ] || fail "counts differ: expected $(echo $expected), got $(echo $actual)"
	[ -f "$D/u/$qemu.dat" ] || fail "no task $qemu: $(ls "$D/u")"
}

@test "QEMU waits for a tool that falls behind its calls instead of losing them" {
	local tool fibs
	# -D 5 keeps the data small; every event still crosses the ring.
	start_bg "$QEMU_JITBPF" -v --uftrace="$D/u" -D 5 -- "$Q" "$(guest x86_64 fib)" 32
	tool=$BG_PID
	wait_bg_err 'handshake after'
	# The ring holds ~12 ms of this guest's calls: stop reading for 0.3 s.
	kill -STOP "$tool"
	sleep 0.3
	kill -CONT "$tool"
	wait_bg 120
	[ "$BG_STATUS" -eq 0 ] || fail "exit $BG_STATUS: $(cat "$D/bg.err")"
	[ "$(cat "$D/bg.out")" = "fib(32) = 2178309" ] || fail "guest printed $(cat "$D/bg.out")"
	grep -q ', 0 events lost$' "$D/bg.err" || fail "$(cat "$D/bg.err")"
	grep -Eq '^qemu-jitbpf: QEMU waited [1-9][0-9]* times for us to read its calls$' \
		"$D/bg.err" || fail "QEMU did not wait: $(cat "$D/bg.err")"
	fibs=$(uftrace report -d "$D/u" -s call 2>/dev/null | awk '$6 == "fib" { print $5 }')
	# main() is at depth 3: fib(32), fib(31) and fib(30).
	[ "$fibs" = 3 ] || fail "fib recorded $fibs times down to depth 5"
}

@test "a tool that attaches while QEMU waits for a stopped one records at once" {
	local a n g
	g=$(guest x86_64 calls)
	start_bg "$Q" "$g" count 100000000
	g=$BG_PID
	"$QEMU_JITBPF" --uftrace="$D/a" -p "$g" -D 2 2>"$D/a.err" &
	a=$!
	sleep 1
	# QEMU waits for A, up to a second, from a few ms after this; B comes
	# in the middle of that wait, and has half a second.
	kill -STOP "$a"
	sleep 0.2
	run "$QEMU_JITBPF" -v --uftrace="$D/b" -D 2 -p "$g" -d 0.5
	kill -CONT "$a"
	kill -INT "$a"
	wait "$a" || fail "A failed: $(cat "$D/a.err")"
	assert_success
	kill "$g"
	wait_bg 30
	n=$(uftrace report -d "$D/b" -s call 2>/dev/null | awk '$6 == "cg_mid" { print $5 }')
	echo "# B: cg_mid ${n:-0} times" >&3
	[ "${n:-0}" -gt 1000 ] || fail "B recorded cg_mid ${n:-0} times: $output"
}

@test "QEMU gives up waiting, once, for a tracer that listens to jit_calls_wait but never says where it read" {
	local bin
	bin=$(readlink -f "$Q")
	# QEMU says it waits every 10 ms, at the seq of the batch it waits at.
	run bpftrace -e "usdt:$bin:qemu:jit_calls { @calls = count(); }
		usdt:$bin:qemu:jit_calls_wait { @waits[arg1] = count(); }" -c "$Q $(guest x86_64 fib) 30"
	assert_success
	assert_line "fib(30) = 832040"
	[ "$(grep -c '^@waits\[' <<<"$output")" = 1 ] || fail "QEMU waited more than once: $output"
	assert_line --regexp '^@calls: [0-9]{4}$'
}

@test "guest threads that end give their call buffers back: QEMU's memory stays flat" {
	local rss
	run "$QEMU_JITBPF" -v --uftrace="$D/u" -- "$Q" "$(guest x86_64 hostile)" churn 3000
	assert_success
	assert_line --regexp '^churn 3000 [0-9a-f]+$'
	assert_line --partial ", 0 events lost"
	rss=$(sed -nE 's/^qemu-jitbpf: QEMU used .* peak RSS ([0-9]+) KiB$/\1/p' <<<"$output")
	echo "# QEMU's peak RSS: $rss KiB" >&3
	# Each thread's buffer is 96 KiB, of which this guest's calls touch a
	# few pages: 3000 kept took QEMU to 86 MB.
	[ -n "$rss" ] && [ "$rss" -lt $((48 * 1024)) ] || fail "QEMU grew to $rss KiB"
	run uftrace report -d "$D/u" -s call -F worker
	assert_success
	assert_output --regexp '3000 +worker'
}

@test "a launched QEMU runs the guest while the tool attaches, except for --profile" {
	# The tool asks for it in QEMU's environment; what QEMU was asked
	# shows in its /proc/PID/environ while a long guest runs.
	local mode var
	for mode in --perfmap --uftrace="$D/u" --profile="$D/p.pb.gz"; do
		start_bg "$QEMU_JITBPF" "$mode" -- "$Q" "$(guest x86_64 spin)" 2000000
		launched_qemu spin
		case $mode in
		--perfmap) var=QEMU_JIT_ATTACH_HOLD ;;
		--uftrace=*) var=QEMU_JIT_ATTACH_HOLD_CALLS ;;
		*) var= ;;
		esac
		if [ -n "$var" ]; then
			tr '\0' '\n' <"/proc/$qemu/environ" | grep -qx "$var=$qemu" ||
				fail "$mode: QEMU was not asked to hold ($var)"
		fi
		tr '\0' '\n' <"/proc/$qemu/environ" | grep -E "^QEMU_JIT_ATTACH_HOLD(_CALLS)?=" |
			grep -vqx "$var=$qemu" && fail "$mode: QEMU was asked to hold otherwise"
		tr '\0' '\n' <"/proc/$qemu/environ" | grep -qx "QEMU_JIT_ATTACH_WAIT=$qemu" ||
			fail "$mode: QEMU was not asked to wait"
		kill "$qemu"
		wait_bg 30
		rm -f "/tmp/perf-$qemu.map"
	done
}

@test "a command that cannot be run gives 127" {
	run -127 "$QEMU_JITBPF" -- "$D/no-such-qemu" x
	assert_line "qemu-jitbpf: cannot run $D/no-such-qemu: No such file or directory"
}

@test "--uftrace moves earlier uftrace data to DIR.old, as uftrace record does, and keeps other files" {
	local first
	run "$QEMU_JITBPF" --uftrace="$D/u" -- "$Q" "$(guest x86_64 calls)" count 10
	assert_success
	first=$(cat "$D/u/task.txt")
	run "$QEMU_JITBPF" --uftrace="$D/u" -- "$Q" "$(guest x86_64 calls)" count 20
	assert_success
	[ "$(cat "$D/u.old/task.txt")" = "$first" ] || fail "u.old is not the first run's"
	run uftrace_counts "$D/u.old"
	assert_line "cg_mid 24"
	run uftrace_counts "$D/u"
	assert_line "cg_mid 53"
	# A directory that holds anything else is refused, untouched, and no
	# QEMU starts.
	mkdir "$D/mine"
	echo precious >"$D/mine/notes.txt"
	run "$QEMU_JITBPF" --uftrace="$D/mine" -- "$Q" "$(guest x86_64 calls)" count 10
	assert_failure
	assert_output "qemu-jitbpf: $D/mine exists and holds no uftrace data; remove it or name another with --uftrace=DIR"
	[ "$(cat "$D/mine/notes.txt")" = precious ]
	[ ! -e "$D/mine.old" ]
}

@test "a launched command that runs no QEMU: followed all the same, a warning, its exit status" {
	run "$QEMU_JITBPF" --perfmap -- sh -c 'exit 4'
	[ "$status" = 4 ] || fail "status $status: $output"
	assert_line --regexp '^qemu-jitbpf: warning: .*(sh|dash) ran no QEMU with the qemu-jitbpf probes$'
	assert_line 'qemu-jitbpf: 0 QEMU processes (0 forked), 0 perf maps, 0 jitdumps, 0 uftrace, 0 without a handshake'
}

@test "the launched command's environment: ours once each, with its own pid, and the user's kept" {
	# The tool's own variables replace any the user's environment has
	# (getenv() would take the first of two), and name the command's pid.
	run env QEMU_JIT_COUNTS=stale QEMU_JIT_ATTACH_WAIT=1 QEMU_JITDUMP_DIR=/x KEEP_ME=yes \
		"$QEMU_JITBPF" --coverage-counts --coverage="$D/c.info" -- \
		sh -c 'echo "pid $$"; env | grep -E "^(QEMU_JIT|KEEP_ME)" | sort'
	assert_success
	# A QEMU_JITDUMP_DIR of the user's stays when we give none.
	assert_line "QEMU_JITDUMP_DIR=/x"
	pid=$(sed -n 's/^pid //p' <<<"$output")
	[ -n "$pid" ] || fail "no pid: $output"
	assert_line "KEEP_ME=yes"
	assert_line "QEMU_JIT_ATTACH_WAIT=$pid"
	assert_line "QEMU_JIT_ATTACH_HOLD=$pid"
	assert_line "QEMU_JIT_COUNTS=$pid"
	[ "$(grep -c '^QEMU_JIT_COUNTS=' <<<"$output")" = 1 ] || fail "$output"
	[ "$(grep -c '^QEMU_JIT_ATTACH_WAIT=' <<<"$output")" = 1 ] || fail "$output"
}

@test "a file written over: the new one in its place, a directory there kept and refused" {
	printf 'old\n' >"$D/c.info"
	run "$QEMU_JITBPF" --coverage="$D/c.info" -- "$Q" "$(guest x86_64 fib)" 10
	assert_success
	grep -q '^end_of_record$' "$D/c.info" || fail "$(cat "$D/c.info")"
	mkdir "$D/d.info"
	touch "$D/d.info/inside"
	run "$QEMU_JITBPF" --coverage="$D/d.info" -- "$Q" "$(guest x86_64 fib)" 10
	assert_failure
	assert_line "qemu-jitbpf: cannot write $D/d.info: Is a directory"
	[ -f "$D/d.info/inside" ] || fail "the directory moved"
	# Nothing of ours is left beside them.
	[ -z "$(ls "$D" | grep -v -e '^c\.info$' -e '^d\.info$')" ] || fail "$(ls -la "$D")"
}
