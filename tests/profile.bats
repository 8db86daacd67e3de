#!/usr/bin/env bats
# qemu-jitbpf --profile and --top: what QEMU 10.2.2 x86_64 users see in a
# browser, a terminal and on a third-party guest; the command line.

load helpers

bats_require_minimum_version 1.5.0

setup() {
	[ -x "$QEMU_JITBPF" ] || fail "make tool first"
	Q=$(qemu_bin 10.2.2 x86_64)
	A=$(qemu_bin 10.2.2 aarch64)
	D=$BATS_TEST_TMPDIR
	cd "$D"
}

teardown() {
	stop_bg
	tmux kill-session -t "qj-top-$$" 2>/dev/null || true
}

# (--virtual-time-budget: the page's load handler, which applies #z= and
# #s=, has run before the shot, however loaded the machine is.)
screenshot() { # SVG-URL PNG
	timeout 60 chromium --headless --no-sandbox --disable-gpu --window-size=1200,600 \
		--virtual-time-budget=2000 --screenshot="$2" "$1" >/dev/null 2>&1
	[ -s "$2" ] || fail "chromium wrote no screenshot of $1"
}

@test "the flame graph renders in chromium, zooms and searches" {
	run "$QEMU_JITBPF" --profile="$D/p.svg" -F 999 -- "$Q" "$(guest x86_64 tree)" 100000
	assert_success
	screenshot "file://$D/p.svg" "$D/p.png"
	read -r colours share < <(python3 "$TOP/tests/png-colours.py" "$D/p.png")
	echo "# $colours colours, $share of the pixels not background" >&3
	[ "$colours" -ge 20 ] || fail "$colours colours: blank?"
	awk -v s="$share" 'BEGIN { exit !(s >= 0.05) }' || fail "only $share drawn"
	# Search marks short_path's box (#s=), zooming into it (#z=) widens
	# it to the whole graph: about three times the marked pixels.
	screenshot "file://$D/p.svg#s=%5Eshort_path%24" "$D/s.png"
	screenshot "file://$D/p.svg#z=short_path&s=%5Eshort_path%24" "$D/z.png"
	s=$(python3 "$TOP/tests/png-colours.py" "$D/s.png" 230,0,230)
	z=$(python3 "$TOP/tests/png-colours.py" "$D/z.png" 230,0,230)
	echo "# marked pixels: $s, zoomed $z" >&3
	[ "$s" -gt 1000 ] || fail "search marked $s pixels"
	[ "$z" -gt $((s * 2)) ] || fail "zoom: $z marked pixels vs $s"
}

@test "--top shows the hottest guest functions live under tmux; q quits" {
	start_bg "$Q" "$(guest x86_64 tree)" 100000000
	sleep 0.5
	tmux new-session -d -s "qj-top-$$" -x 120 -y 30 \
		"$QEMU_JITBPF -p $BG_PID --top -F 199 2>$D/top.err; echo EXIT=\$? >$D/top.exit"
	sleep 4
	screen=$(tmux capture-pane -p -t "qj-top-$$")
	echo "$screen" | sed 's/^/# /' >&3
	grep -qE '^qemu-jitbpf --top: qemu-x86_64-'"$BG_PID"', 199 Hz, [0-9]+ samples, 0 lost' \
		<<<"$screen" || fail "no header"
	grep -qE '^CPU: guest code [0-9.]+%, helpers [0-9.]+%, translation [0-9.]+%' <<<"$screen"
	# leaf_work first, with most of the self time; main has all of it.
	first=$(grep -A1 'self%' <<<"$screen" | tail -n1)
	[[ "$first" =~ ^\ +([0-9.]+)%\ +([0-9.]+)%\ +leaf_work\ +tree$ ]] || fail "first row: $first"
	awk -v s="${BASH_REMATCH[1]}" 'BEGIN { exit !(s >= 80) }' || fail "leaf_work self ${BASH_REMATCH[1]}%"
	grep -qE '^ +[0-9.]+% +(99|100)\.[0-9]+% +main +tree$' <<<"$screen" || fail "main total"
	tmux send-keys -t "qj-top-$$" q
	wait_for_file "$D/top.exit" 10
	assert_equal "$(cat "$D/top.exit")" EXIT=0
	kill -0 "$BG_PID" || fail "QEMU did not survive --top"
}

@test "python3, a stripped third-party guest: samples land in its functions and libc's" {
	run "$QEMU_JITBPF" --profile="$D/p.folded" -F 999 -- "$Q" /usr/bin/python3 -c '
for i in range(1500):
    b = bytes(1000000); b.find(b"x"); s = str(i) * 100; s.upper()'
	assert_success
	py=$(readlink -f /usr/bin/python3)
	libc=/usr/lib/x86_64-linux-gnu/libc.so.6
	id=$(readelf -n "$libc" | awk '/Build ID/ { print $3 }')
	nm -D --defined-only "$py" | awk '{ print $3 }' >"$D/py.syms"
	{ nm -D --defined-only "$libc"; nm --defined-only \
		"/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" 2>/dev/null; } |
		awk '{ print $3 }' | sed 's/@.*//' >"$D/libc.syms"
	# The guest leaf: the last frame without a _[q] or _[k] mark.
	awk '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); leaf = ""
	       for (i = 2; i <= k; i++) if (f[i] !~ /_\[[qk]\]$/) leaf = f[i]
	       print leaf, n }' "$D/p.folded" >"$D/leaves"
	# Python's code without a symbol is named python3.11+0xADDR.
	read -r total inpy inlibc < <(awk -v file="${py##*/}+0x" '
		FILENAME ~ /py.syms$/ { py[$1] = 1; next }
		FILENAME ~ /libc.syms$/ { libc[$1] = 1; next }
		{ total += $2 }
		$1 in py || index($1, file) == 1 { p += $2 }
		$1 in libc { l += $2 }
		END { print total, p + 0, l + 0 }' "$D/py.syms" "$D/libc.syms" "$D/leaves")
	echo "# $total samples: $inpy in $py, $inlibc in libc" >&3
	[ "$total" -ge 500 ]
	[ $((inpy * 100 / total)) -ge 5 ] || fail "$inpy samples in python"
	[ $((inlibc * 100 / total)) -ge 20 ] || fail "$inlibc samples in libc"
	grep -q '_PyEval_EvalFrameDefault' "$D/leaves" || fail "no sample in the interpreter loop"
	# Translating python's code shows as QEMU frames above the guest's.
	grep -qE '^qemu-x86_64-[0-9]+;[^ ]*[^q];[^ ]*tb_gen_code_\[q\]' "$D/p.folded" ||
		fail "no translation time as QEMU frames"
}

@test "--profile goes with --perfmap, --jitdump and --uftrace in one run" {
	run "$QEMU_JITBPF" --perfmap --jitdump --uftrace="$D/u" -o "$D" --profile -- \
		"$A" "$(guest aarch64 tree)" 30000
	assert_success
	pid=$(sed -nE 's|^qemu-jitbpf: perf map: /tmp/perf-([0-9]+)\.map$|\1|p' <<<"$output")
	[ -n "$pid" ]
	grep -q ' leaf_work$' "/tmp/perf-$pid.map"
	rm -f "/tmp/perf-$pid.map"
	[ -s "$D/jit-$pid.dump" ]
	assert_line "qemu-jitbpf: profile: $D/profile-$pid.folded"
	grep -q ';main;short_path;leaf_work ' "$D/profile-$pid.folded"
	run uftrace report -d "$D/u" -f call -s call --no-pager
	assert_success
	assert_output --regexp '30000 +short_path'
}

@test "profiler options: bad input is a one-line error" {
	run "$QEMU_JITBPF" -F 0 -p 1 --profile
	assert_failure
	assert_output --partial "invalid frequency '0'"
	run "$QEMU_JITBPF" --call-graph=lbr -p 1 --profile
	assert_failure
	assert_output --partial "invalid call graph 'lbr' (fp or dwarf[,BYTES])"
	run "$QEMU_JITBPF" --call-graph=dwarf,7 -p 1 --profile
	assert_failure
	assert_output --partial "invalid stack size '7'"
	run -0 true
	run "$QEMU_JITBPF" --top -p 1 </dev/null
	assert_failure
	assert_output "qemu-jitbpf: --top needs a terminal on standard output"
	# A profile that cannot be written fails the run, and leaves nothing.
	run "$QEMU_JITBPF" --profile="$D/no/such/dir/p.folded" -- "$Q" "$(guest x86_64 tree)" 1000
	assert_failure
	assert_output --partial "$D/no/such/dir/p.folded"
	[ ! -e "$D/no" ]
}

@test "valgrind: no memory error and no leak in the profiler (fp and dwarf, every writer)" {
	no_valgrind_under_asan
	vg() {
		valgrind -q --suppressions="$TOP/tests/valgrind.supp" --error-exitcode=99 \
			--leak-check=full --errors-for-leak-kinds=definite,possible "$@"
	}
	run vg "$QEMU_JITBPF" --profile="$D/p.folded" --profile="$D/p.pb.gz" --profile="$D/p.svg" \
		-F 999 -- "$Q" "$(guest x86_64 tree)" 50000
	[ "$status" -ne 99 ] || fail "valgrind: $output"
	assert_success
	grep -q ';short_path;leaf_work ' "$D/p.folded" ||
		fail "$(sort -t' ' -k2n "$D/p.folded" | tail -4; grep -v eBPF <<<"$output" | tail -4)"
	run vg "$QEMU_JITBPF" --profile="$D/d.folded" --call-graph=dwarf -F 999 -- \
		"$A" "$(guest aarch64 tree-o2-nofp)" 50000
	[ "$status" -ne 99 ] || fail "valgrind: $output"
	assert_success
	grep -q ';main;long_path;long_mid;long_inner;leaf_work ' "$D/d.folded" ||
		fail "$(sort -t' ' -k2n "$D/d.folded" | tail -4; grep -v eBPF <<<"$output" | tail -4)"
}

@test "kernel frames: named from /proc/kallsyms, then from a per-boot cache only root can write" {
	kernel_run() { # the guest calls access() every round: syscalls
		rm -f "$D/stop"
		start_bg "$Q" "$(guest x86_64 tree)" -u "$D/stop"
		(sleep 1.5; touch "$D/stop") &
		run "$QEMU_JITBPF" -p "$BG_PID" --profile="$D/$1" -F 999
		assert_success
		wait_bg 20
		grep -qE ';__access;[^ ]*_\[q\];[^ ]*entry_SYSCALL_64[^ ]*_\[k\];[^ ]*_\[k\] [0-9]+$' \
			"$D/$1" || fail "no named syscall frames: $(grep '_\[k\]' "$D/$1" | head -3)"
	}
	rm -rf /run/qemu-jitbpf
	kernel_run fresh.folded
	cache=$(ls /run/qemu-jitbpf/kallsyms-*)
	[ "$(stat -c '%a %U' /run/qemu-jitbpf "$cache")" = "700 root
600 root" ] || fail "$(stat -c '%n %a %U' /run/qemu-jitbpf "$cache")"
	kernel_run cached.folded
	# A cache others could have written is not read, but replaced.
	chmod 644 "$cache"
	kernel_run replaced.folded
	[ "$(stat -c %a "$cache")" = 600 ]
}

@test "kernel frames in the tool's own BPF programs: named as /proc/kallsyms names them, which is not read again" {
	# Python's imports translate much: QEMU's threads run our uprobe
	# programs often, and samples at 10 kHz land in them.
	py=("$Q" /usr/bin/python3 -c 'import json, email, http.client, argparse, decimal, asyncio')
	ls /run/qemu-jitbpf/kallsyms-* >/dev/null 2>&1 ||
		"$QEMU_JITBPF" --profile="$D/first.folded" -F 10000 -- "${py[@]}" 2>/dev/null
	start_bg "$QEMU_JITBPF" -v --profile="$D/p.folded" -F 10000 -- "${py[@]}"
	wait_bg_err 'probes attached' 20
	grep '\[bpf\]$' /proc/kallsyms | awk '{ print $3 }' >"$D/kallsyms"
	wait_bg 60
	[ "$BG_STATUS" = 0 ] || fail "$(cat "$BATS_TEST_TMPDIR/bg.err")"
	! grep 'reading /proc/kallsyms' "$BATS_TEST_TMPDIR/bg.err" || fail "read /proc/kallsyms"
	grep -oE ';bpf_prog_[0-9a-f]{16}_[^;]*_\[k\]' "$D/p.folded" | sed 's/^;//; s/_\[k\]$//' |
		sort -u >"$D/ours"
	echo "# $(wc -l <"$D/ours") BPF functions in the profile: $(tr '\n' ' ' <"$D/ours")" >&3
	grep -q _tb_gen_code_batch "$D/ours" || fail "no frame in tb_gen_code_batch"
	missing=$(grep -vxFf "$D/kallsyms" "$D/ours") || true
	[ -z "$missing" ] || fail "not in /proc/kallsyms: $missing"
}

@test "kernel frames in another tool's BPF programs on the same QEMU (-a elsewhere, an earlier run's links being closed): named, /proc/kallsyms not read again" {
	local other
	py=("$Q" /usr/bin/python3 -c 'import json, email, http.client, argparse, decimal, asyncio')
	ls /run/qemu-jitbpf/kallsyms-* >/dev/null 2>&1 ||
		"$QEMU_JITBPF" --profile="$D/first.folded" -F 10000 -- "${py[@]}" 2>/dev/null
	# Its uprobes are on QEMU's file: they run in our QEMU too.
	"$QEMU_JITBPF" -a -v --qemu "$Q" --perfmap -d 60 >/dev/null 2>"$D/other.err" &
	other=$!
	for _ in $(seq 100); do
		grep -q 'attached to' "$D/other.err" 2>/dev/null && break
		sleep 0.1
	done
	start_bg "$QEMU_JITBPF" -v --profile="$D/p.folded" -F 10000 -- "${py[@]}"
	wait_bg 60
	kill -INT "$other"
	wait "$other" || true
	[ "$BG_STATUS" = 0 ] || fail "$(cat "$BATS_TEST_TMPDIR/bg.err")"
	! grep 'reading /proc/kallsyms' "$BATS_TEST_TMPDIR/bg.err" || fail "read /proc/kallsyms"
	grep -q ';bpf_prog_[0-9a-f]\{16\}_[^;]*_\[k\]' "$D/p.folded" || fail "no BPF frame"
}
