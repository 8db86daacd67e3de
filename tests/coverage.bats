#!/usr/bin/env bats
# qemu-jitbpf --coverage: what ran of the guest's code, from the TB
# reports, checked against gcov's verdict on the same program built
# natively with --coverage (tests/guests/cov.c), and read by genhtml.

load helpers

bats_require_minimum_version 1.5.0

setup() {
	[ -x "$QEMU_JITBPF" ] || fail "make tool first"
	D=$BATS_TEST_TMPDIR
	cd "$D"
}

teardown() {
	stop_bg
	binfmt_unregister 2>/dev/null || true
}

# gcov's verdict on tests/guests/$SRC (cov.c unless set) run once per RUN
# (its arguments, one string each: the counts add up): "LINE 0|1" of each
# line it instruments in $D/gcov.lines, "FUNCTION 0|1" (called, names
# demangled) in $D/gcov.fns.
SRC=cov.c
gcov_oracle() { # RUN...
	local args cc=gcc
	[[ $SRC != *.cpp ]] || cc=g++
	mkdir "$D/native"
	(cd "$D/native" && $cc -O0 -g --coverage -o prog "$TOP/tests/guests/$SRC" -lpthread) ||
		fail "gcov's build failed"
	for args in "$@"; do
		# shellcheck disable=SC2086 # the run's words
		(cd "$D/native" && ./prog $args >/dev/null) || fail "$SRC $args failed"
	done
	(cd "$D/native" && gcov -b -m ./*.gcda >/dev/null) || fail "gcov failed"
	# "    #####:   14:static int..." or "        2:   23:..."
	sed -nE 's/^ *(#####|[0-9]+): *([0-9]+):.*/\2 \1/p' "$D/native/$SRC.gcov" |
		awk '{ print $1, ($2 == "#####" ? 0 : 1) }' | sort -n >"$D/gcov.lines"
	# "function shapes::spin(unsigned long) called 1 returned 100% ..."
	sed -nE 's/^function (.*) called ([0-9]+) returned.*/\1|\2/p' "$D/native/$SRC.gcov" |
		awk -F'|' '{ print $1, ($2 > 0) }' | sort >"$D/gcov.fns"
	[ -s "$D/gcov.lines" ] && [ -s "$D/gcov.fns" ] || fail "gcov said nothing"
}

# gcov's counts (after gcov_oracle): "LINE N" of each line with no branch
# of its own (nor a call that returns other than once: fork()) in
# $D/gcov.counts, "FUNCTION N" (called N times) in
# $D/gcov.calls.
gcov_counts() {
	awk '/^branch/ || (/^call/ && !/returned 100%/) { if (last) br[last] = 1; next }
		/^(call|function)/ { next }
		match($0, /^ *(#####|[0-9]+): *[0-9]+:/) {
			split($0, a, ":"); c = a[1]; l = a[2]; gsub(/ /, "", c); gsub(/ /, "", l)
			n[l] = (c == "#####" ? 0 : c); last = l; next }
		{ last = "" }
		END { for (l in n) if (!br[l]) print l, n[l] }' "$D/native/$SRC.gcov" | sort -n >"$D/gcov.counts"
	sed -nE 's/^function (.*) called ([0-9]+) returned.*/\1 \2/p' "$D/native/$SRC.gcov" |
		sort >"$D/gcov.calls"
}

# The tracefile's counts of $SRC: "LINE N" and "FUNCTION N".
lcov_counts() { # INFO
	awk -F'[:,]' -v src="/$SRC" '/^SF:/ { f = (substr($2, length($2) - length(src) + 1) == src) }
		f && /^DA:/ { print $2, $3 }' "$1" | sort -n
}
lcov_calls() { # INFO
	awk -v src="/$SRC" '/^SF:/ { f = (substr($0, length($0) - length(src) + 1) == src) }
		f && /^FNDA:/ { sub(/^FNDA:/, ""); n = index($0, ","); print substr($0, n + 1), substr($0, 1, n - 1) }' "$1" | sort
}

# Does INFO count as gcov does: every function's calls, and every line
# without a branch that both list?
counts_like_gcov() { # INFO LABEL
	local ours bad= line n got
	ours=$(lcov_counts "$1")
	while read -r line n; do
		got=$(awk -v l="$line" '$1 == l { print $2 }' <<<"$ours")
		[ -z "$got" ] || [ "$got" = "$n" ] || bad="$bad $line(gcov $n, ours $got)"
	done <"$D/gcov.counts"
	[ -z "$bad" ] || fail "$2: line counts differ:$bad"
	diff <(lcov_calls "$1") "$D/gcov.calls" || fail "$2: calls differ from gcov's"
	echo "# $2: $(grep -c . "$D/gcov.calls") functions' calls and $(grep -c . "$D/gcov.counts") lines' counts are gcov's" >&3
}

# The tracefile's verdicts on $SRC: "LINE 0|1" and "FUNCTION 0|1".
lcov_lines() { # INFO
	awk -F'[:,]' -v src="/$SRC" '/^SF:/ { f = (substr($2, length($2) - length(src) + 1) == src) }
		f && /^DA:/ { print $2, ($3 > 0) }' "$1" | sort -n
}
lcov_fns() { # INFO
	awk -v src="/$SRC" '/^SF:/ { f = (substr($0, length($0) - length(src) + 1) == src) }
		f && /^FNDA:/ { sub(/^FNDA:/, ""); n = index($0, ","); print substr($0, n + 1), (substr($0, 1, n - 1) > 0) }' "$1" | sort
}

# Does INFO give gcov's verdict ($D/gcov.*) on every line of $SRC gcov
# instruments and GUEST's line table has, and on every function?
agrees_with_gcov() { # INFO GUEST LABEL
	local ours nolines missing= bad= line ran got
	ours=$(lcov_lines "$1")
	[ -n "$ours" ] || fail "$3: no line of $SRC: $(head -c 600 "$1")"
	# Lines gcov counts that no row of the line table has (case labels:
	# the jump goes to the case's first statement) cannot be listed;
	# every other line must be, with gcov's verdict.
	nolines=$(objdump --dwarf=decodedline "$2" | awk -v s="$SRC" '$1 == s { print $2 }' | sort -u)
	while read -r line ran; do
		got=$(awk -v l="$line" '$1 == l { print $2 }' <<<"$ours")
		if [ -z "$got" ]; then
			grep -qx "$line" <<<"$nolines" && missing="$missing $line(has rows)"
			continue
		fi
		[ "$got" = "$ran" ] || bad="$bad $line(gcov $ran, ours $got)"
	done <"$D/gcov.lines"
	[ -z "$missing$bad" ] || fail "$3: lines left out:$missing; verdicts differ:$bad"
	# Lines that did not run are listed, with 0.
	! grep -q ' 0$' "$D/gcov.lines" || grep -qx '[0-9]* 0' <<<"$ours" || fail "$3: no line with 0"
	diff <(lcov_fns "$1") "$D/gcov.fns" || fail "$3: functions differ from gcov's"
	echo "# $3: $(grep -c . <<<"$ours") lines of $SRC, $(grep -c ' 1$' <<<"$ours") ran" >&3
}

@test "--coverage: every line and function gcov instruments has gcov's verdict, on x86_64, aarch64, riscv64 and arm" {
	local arch g
	gcov_oracle "a b"
	for arch in x86_64 aarch64 riscv64 arm; do
		g=$(guest "$arch" cov)
		run "$QEMU_JITBPF" --coverage="$D/$arch.info" -- "$(qemu_bin 10.2.2 "$arch")" "$g" a b
		assert_success
		assert_output --partial "coverage: $D/$arch.info: "
		agrees_with_gcov "$D/$arch.info" "$g" "$arch"
	done
	# The forked child's own function is there: every process counts.
	grep -qx 'in_child 1' "$D/gcov.fns"
	# genhtml reads it without a word of warning.
	run genhtml -q -o "$D/html" "$D/aarch64.info"
	assert_success
	assert_output ''
	grep -q 'cov.c' "$D/html/index.html"
}

@test "--coverage-counts: FNDA is gcov's call count, DA gcov's count of each line without a branch, through threads, a fork and a flush, on x86_64, aarch64, riscv64 and arm" {
	local arch g
	gcov_oracle "a b"
	gcov_counts
	# looped() runs in the main thread and in two others, at once.
	grep -qx 'looped 3' "$D/gcov.calls" || fail "$(cat "$D/gcov.calls")"
	for arch in x86_64 aarch64 riscv64 arm; do
		g=$(guest "$arch" cov)
		run "$QEMU_JITBPF" -v --coverage-counts --coverage="$D/$arch.info" \
			--coverage="$D/$arch.csv" -- "$(qemu_bin 10.2.2 "$arch")" "$g" a b
		assert_success
		refute_output --partial 'not counted'
		refute_output --partial 'counted its blocks'
		# (QEMU held its reports while we attached: no flush lost any.)
		refute_output --partial 'flushed its code cache'
		assert_output --partial ' 0 events lost'
		# The first thread flushed QEMU's code cache: counts went on.
		refute_output --regexp ' 0 flushes'
		agrees_with_gcov "$D/$arch.info" "$g" "$arch"
		counts_like_gcov "$D/$arch.info" "$arch"
	done
	run genhtml -q -o "$D/html" "$D/aarch64.info"
	assert_success
	assert_output ''
	# The hot-block table: rows by execution count, each named where it
	# lies; looped()'s blocks of the parent and the child's in_child().
	head -1 "$D/x86_64.csv" | grep -qx 'pc,tcount,icount,ecount,function,source,process'
	grep -q ',looped,.*/cov\.c:[0-9]*,' "$D/x86_64.csv" || fail "$(head -3 "$D/x86_64.csv")"
	grep -q ',in_child,.*/cov\.c:[0-9]*,' "$D/x86_64.csv" || fail "no row of in_child()"
	tail -n +2 "$D/x86_64.csv" | cut -d, -f4 | sort -c -n -r
}

@test "--coverage-counts: the hot-block table has QEMU's hotblocks plugin's execution count for every block both list (one thread with vDSO calls, four threads)" {
	local q p g args pc tc ic ec ours tbs n=0
	q=$(qemu_bin 10.2.2 x86_64)
	p=$BUILD/qemu-10.2.2/plugins/libhotblocks.so
	[ -f "$p" ] || fail "$p missing (make qemu)"
	# (fib reads the clock 1000 times: code of QEMU's vDSO, which has no
	# ELF file of ours but has its rows.)
	for args in "fib 20 1000" "threads 3000"; do
		g=$(guest x86_64 "${args%% *}")
		# The plugin in the QEMU we count: one run, one environment (the
		# guest's libc start-up reads the variables we give QEMU).
		rm -f "$D/plugin.log"
		# shellcheck disable=SC2086 # the guest's arguments
		run "$QEMU_JITBPF" --coverage="$D/hot.csv" -- \
			"$q" -plugin "$p",inline=on -d plugin,op -D "$D/plugin.log" "$g" ${args#* }
		assert_success
		refute_output --partial 'not counted'
		# Each TB counts with one op (patch 32), not four.
		tbs=$(grep -c '^OP:' "$D/plugin.log")
		[ "$tbs" -gt 100 ] && [ "$(grep -c ' jit_count ' "$D/plugin.log")" = "$tbs" ] ||
			fail "$args: $tbs TBs, $(grep -c ' jit_count ' "$D/plugin.log") jit_count ops"
		# "0x0000000000401615, 1, 7, 21891"
		while IFS=', ' read -r pc tc ic ec; do
			ours=$(grep "^$(printf '0x%x' "$pc")," "$D/hot.csv" | cut -d, -f4)
			[ "$ours" = "$ec" ] || fail "$args: block $pc: plugin $ec, ours '$ours'"
			n=$((n + 1))
		done < <(grep '^0x' "$D/plugin.log")
	done
	[ "$n" -ge 30 ] || fail "only $n blocks compared"
	echo "# $n blocks: the plugin's ecount" >&3
}

@test "--coverage-counts attached late, then detached: exactly what ran in between" {
	local q
	q=$(qemu_bin 10.2.2 x86_64)
	start_bg "$q" "$(guest x86_64 cov)" -s "$D/go" "$D/stop"
	"$QEMU_JITBPF" -v -p "$BG_PID" --coverage-counts --coverage="$D/late.info" \
		>"$D/tool.out" 2>"$D/tool.err" &
	local tool=$!
	wait_for_file_line "$D/tool.err" 'QEMU counts its blocks' 20
	touch "$D/go"
	wait_for_file_line "$D/bg.out" 'counted' 20
	kill -INT "$tool"
	wait "$tool" || fail "the tool failed: $(cat "$D/tool.err")"
	touch "$D/stop"
	wait_bg 20
	run lcov_calls "$D/late.info"
	assert_line 'looped 1000'
	# sum += i once a call, sum -= 1 twice (looped(3)).
	run lcov_counts "$D/late.info"
	assert_line "$(grep -n 'sum += i;' "$TOP/tests/guests/cov.c" | cut -d: -f1) 1000"
	assert_line "$(grep -n 'sum -= 1;' "$TOP/tests/guests/cov.c" | cut -d: -f1) 2000"
}

@test "--coverage of a C++ guest: gcov's verdict, its demangled names (a template's member in a namespace)" {
	local arch g
	SRC=names.cpp
	gcov_oracle 1000
	grep -q '^shapes::Accum<unsigned long>::add(unsigned long) 1$' "$D/gcov.fns" || fail "$(cat "$D/gcov.fns")"
	for arch in x86_64 aarch64; do
		g=$(guest "$arch" names-cpp-o0)
		run "$QEMU_JITBPF" --coverage="$D/$arch.info" -- "$(qemu_bin 10.2.2 "$arch")" "$g" 1000
		assert_success
		agrees_with_gcov "$D/$arch.info" "$g" "$arch C++"
	done
	run genhtml -q -o "$D/html" "$D/aarch64.info"
	assert_success
	assert_output ''
}

@test "--coverage of a foreign busybox script: one tracefile for its processes, gcov's verdict on them together" {
	local bb=$BUILD/guests/aarch64/busybox qa
	qa=$(qemu_bin 10.2.2 aarch64)
	[ -x "$bb" ] || fail "$bb missing (make guests)"
	# cov with 2 and 1 arguments: each runs cases of classify() the other
	# does not; gcov adds up both runs, as the tracefile must.
	gcov_oracle "a b" "a"
	binfmt_register "$qa"
	cat >"$D/script.sh" <<-EOF
		"$(guest aarch64 cov)" a b
		"$(guest aarch64 hot)" 100 >/dev/null
		"$(guest aarch64 cov)" a
	EOF
	run "$QEMU_JITBPF" --coverage="$D/tree.info" -- "$qa" "$bb" sh "$D/script.sh"
	assert_success
	agrees_with_gcov "$D/tree.info" "$(guest aarch64 cov)" "aarch64 script"
	grep -qx 'FNDA:1,hot_main' "$D/tree.info" || fail "hot.c's process left out"
	grep -c '^SF:' "$D/tree.info" | grep -qx 2 || fail "$(grep '^SF:' "$D/tree.info")"
}

@test "--coverage=FILE.xml: Cobertura that diff-cover reads, its missing lines the lcov tracefile's unrun ones" {
	local missing expected
	# A repository where a change added cov.c: diff-cover judges its lines.
	mkdir -p "$D/repo/src"
	cd "$D/repo"
	git init -q -b main
	echo '/* soon */' >src/cov.c
	git add src/cov.c
	git -c user.email=t@t -c user.name=t commit -qm base
	cp "$TOP/tests/guests/cov.c" src/cov.c
	gcc -static -g -O0 -o cov src/cov.c -lpthread
	run "$QEMU_JITBPF" --coverage="$D/c.xml" --coverage="$D/c.info" -- \
		"$(qemu_bin 10.2.2 x86_64)" ./cov a b
	assert_success
	grep -qx "		<source>$D/repo/src</source>" "$D/c.xml" || fail "$(grep -A1 '<sources>' "$D/c.xml")"
	run diff-cover "$D/c.xml" --compare-branch=main
	assert_success
	echo "$output" | grep -E '^(src|Total|Missing)' | sed 's/^/#   /' >&3
	# "src/cov.c (68.6%): Missing lines 16-18,20-23,31,..."
	missing=$(sed -nE 's/^src\/cov\.c .*Missing lines (.*)$/\1/p' <<<"$output" | tr ',' '\n' |
		awk -F- '{ for (l = $1; l <= ($2 == "" ? $1 : $2); l++) print l }')
	expected=$(awk -F'[:,]' '/^DA:/ && $3 == 0 { print $2 }' "$D/c.info")
	[ -n "$expected" ] && [ "$missing" = "$expected" ] ||
		fail "diff-cover: $(tr '\n' ' ' <<<"$missing"); ours: $(tr '\n' ' ' <<<"$expected")"
	assert_output --regexp "Total: +$(grep -c '^DA:' "$D/c.info") lines"
}

# Attach to `cov MODE FILE` (QEMU V) once it has run a second, for 1.5 s,
# into $D/late-V.info; the tool's output in $output, QEMU's pid in $LATE_PID.
attach_late() { # V MODE
	start_bg "$(qemu_bin "$1" x86_64)" "$(guest x86_64 cov)" "$2" "$D/stop-$1"
	LATE_PID=$BG_PID
	sleep 1
	(sleep 1.5 && touch "$D/stop-$1") &
	run "$QEMU_JITBPF" -p "$BG_PID" --coverage="$D/late-$1.info" --coverage-prefix="$TOP/tests=/src"
	assert_success
	wait_bg 20
}

@test "--coverage attached late: what ran since QEMU started (its code cache at the attach), then all that runs; sources under --coverage-prefix" {
	local v
	for v in 10.2.2 7.2; do
		attach_late "$v" -u
		refute_output --partial "flushed"
		# init_once() ran once, before the attach: QEMU reported it from
		# its code cache at the handshake.
		run lcov_fns "$D/late-$v.info"
		assert_line 'init_once 1'
		assert_line 'looped 1'
		assert_line 'never_called 0'
		assert_line 'worker 0'
		grep -qx 'SF:/src/guests/cov.c' "$D/late-$v.info" || fail "$(grep SF: "$D/late-$v.info")"
		! grep -q "^SF:$TOP/tests/" "$D/late-$v.info" || fail "a source not under the new prefix"
	done
}

@test "--coverage attached late after a code-cache flush: what the flush took is lost, and the tool says so" {
	# cov -U starts a thread first, for which QEMU flushes its code cache.
	attach_late 10.2.2 -U
	assert_line "qemu-jitbpf: warning: pid $LATE_PID: QEMU flushed its code cache 1 time before we attached: the coverage misses code that ran only before it"
	run lcov_fns "$D/late-10.2.2.info"
	assert_line 'init_once 1'
	assert_line 'worker 1'
	# It ran in_child() before the flush, and never again.
	assert_line 'in_child 0'
}

@test "--coverage of a bare-metal aarch64 program (system mode): the branch it never takes is all it misses" {
	local qsa=$BUILD/qemu-10.2.2/bin/qemu-system-aarch64 unrun
	[ -x "$qsa" ] || fail "system emulators not built (make qemu)"
	# 3 rounds: "if (r % 1000 == 999)" never holds (bare.c lines 110-112).
	run "$QEMU_JITBPF" --coverage="$D/bare.info" -- "$qsa" -M virt -cpu max -m 128 -nodefaults \
		-display none -semihosting-config enable=on,target=native \
		-kernel "$BUILD/guests/bare/aarch64/bare" -append 3
	assert_success
	assert_output --partial 'bare: done 3 rounds'
	unrun=$(awk -F'[:,]' '/^SF:/ { f = $2 } f ~ /\/bare\.c$/ && /^DA:/ && $3 == 0 { print $2 }' \
		"$D/bare.info" | tr '\n' ' ')
	[ "$unrun" = "110 111 112 " ] || fail "unrun lines of bare.c: $unrun"
	grep -qx 'FNDA:1,one_round' "$D/bare.info"
	grep -q '^SF:.*/start-aarch64\.S$' "$D/bare.info" || fail "no line of the assembly start"
	# Counted: 7 rounds, each calling mix() twice.
	run "$QEMU_JITBPF" --coverage-counts --coverage="$D/bare7.info" -- "$qsa" -M virt -cpu max \
		-m 128 -nodefaults -display none -semihosting-config enable=on,target=native \
		-kernel "$BUILD/guests/bare/aarch64/bare" -append 7
	assert_success
	run grep '^FNDA:' "$D/bare7.info"
	assert_line 'FNDA:7,one_round'
	assert_line 'FNDA:7,hot_main'
	assert_line 'FNDA:7,hot_side'
	assert_line 'FNDA:14,mix'
	assert_line 'FNDA:1,main'
}

@test "--coverage with --interval: a file each interval, all that ran since the start, so it only grows" {
	local f prev=0 hit n
	start_bg "$(qemu_bin 10.2.2 x86_64)" "$(guest x86_64 cov)" -u "$D/stop"
	(sleep 3.5 && touch "$D/stop") &
	run "$QEMU_JITBPF" -p "$BG_PID" --coverage="$D/c.info" --interval=1 --keep-profiles=3
	assert_success
	wait_bg 20
	n=$(find "$D" -maxdepth 1 -name 'c.*Z.info' | wc -l)
	# 3 or 4 intervals ended, at most 3 files kept.
	[ "$n" -eq 3 ] || fail "$n interval files: $(ls "$D")"
	[ ! -e "$D/c.info" ] || fail "an unstamped file with --interval"
	for f in "$D"/c.*Z.info; do
		hit=$(awk -F: '$1 == "LH" { n += $2 } END { print n + 0 }' "$f")
		[ "$hit" -ge "$prev" ] || fail "$f: $hit lines ran, fewer than the interval before ($prev)"
		prev=$hit
	done
	[ "$prev" -gt 0 ]
	grep -qx 'FNDA:1,looped' "$f"
}

@test "--coverage=NAME.drcov: a drcov file per process, blocks in the functions that ran and in no other (static and dynamic guests)" {
	local arch g files libc
	for arch in x86_64 aarch64; do
		g=$(guest "$arch" cov)
		run "$QEMU_JITBPF" --coverage="$D/$arch.drcov" -- "$(qemu_bin 10.2.2 "$arch")" "$g"
		assert_success
		# cov forks once: a file for each process.
		files=("$D/$arch".*.drcov)
		[ "${#files[@]}" = 2 ] || fail "$arch: ${files[*]}"
		for f in "${files[@]}"; do
			"$TOP/tests/drcov-blocks.py" "$f" >"$f.txt" || fail "$f does not parse"
			grep -q "^Module Table: version 2, count [1-9]" "$f" || fail "$f: no modules"
		done
		for f in "${files[@]}"; do "$TOP/tests/drcov-blocks.py" "$f" "$g"; done |
			sort -u >"$D/$arch.fns"
		for fn in main classify looped worker in_child; do
			grep -qx "$fn" "$D/$arch.fns" || fail "$arch: no block in $fn: $(tr '\n' ' ' <"$D/$arch.fns")"
		done
		for fn in never_called init_once; do
			! grep -qx "$fn" "$D/$arch.fns" || fail "$arch: a block in $fn, which never ran"
		done
	done
	# A dynamic guest: the program, the interpreter and libc are modules,
	# at their load addresses; libc's blocks are in what the program ran.
	g=$(guest x86_64 nonlocal-dyn)
	run "$QEMU_JITBPF" --coverage="$D/dyn.drcov" -- "$(qemu_bin 10.2.2 x86_64)" "$g"
	assert_success
	files=("$D"/dyn.*.drcov)
	"$TOP/tests/drcov-blocks.py" "${files[0]}" >"$D/dyn.txt"
	libc=$(awk '$1 ~ /\/libc\.so\.6$/ { print $1; exit }' "$D/dyn.txt")
	[ -n "$libc" ] || fail "no block in libc: $(cut -d' ' -f1 "$D/dyn.txt" | sort | uniq -c)"
	grep -q "ld-linux-x86-64.so.2" "$D/dyn.txt" || fail "no block in the interpreter"
	"$TOP/tests/drcov-blocks.py" "${files[0]}" "$libc" >"$D/libc.fns"
	grep -qx exit "$D/libc.fns" || fail "no block in libc's exit: $(head -5 "$D/libc.fns")"
	! grep -qx getaddrinfo "$D/libc.fns" || fail "a block in libc's getaddrinfo"
	"$TOP/tests/drcov-blocks.py" "${files[0]}" "$g" | grep -qx main || fail "no block in the program's main"
}

@test "--coverage: bad input is a one-line error" {
	run "$QEMU_JITBPF" --coverage=c.txt -- true
	assert_failure
	assert_output --partial "'c.txt' is not .info (lcov), .xml (Cobertura), .drcov or .csv (hot blocks)"
	run "$QEMU_JITBPF" --coverage-prefix=/a=/b -- true
	assert_failure
	assert_output --partial '--coverage-prefix goes with --coverage'
	run "$QEMU_JITBPF" --coverage=c.info --coverage-prefix=nothing -- true
	assert_failure
	assert_output --partial "'nothing' is not OLD=NEW"
	run "$QEMU_JITBPF" --coverage=/nonexistent/c.info -- true
	assert_failure
	assert_output --partial 'cannot write the coverage /nonexistent/c.info'
	run "$QEMU_JITBPF" --coverage-counts -- true
	assert_failure
	assert_output --partial '--coverage-counts goes with --coverage'
	# QEMU 7.2 has no counters: no counts rather than wrong ones.
	run "$QEMU_JITBPF" --coverage-counts --coverage=c.info -- "$(qemu_bin 7.2 x86_64)" \
		"$(guest x86_64 cov)" a
	assert_failure
	assert_output --partial 'cannot count executions (no qemu:jit_counts probe'
	[ ! -e c.info ]
}

@test "--cache-dir: a listing read once is read from the cache next time, the same tracefile; a damaged or stale one is read anew" {
	local q g f
	q=$(qemu_bin 10.2.2 x86_64)
	cp "$(guest x86_64 cov)" "$D/prog"
	g=$D/prog
	# (One thread, no fork: the same lines each run.)
	touch "$D/go"
	cov() { # NAME: a run into NAME.info, its -v lines in NAME.err
		"$QEMU_JITBPF" -v --cache-dir="$D/cache" --coverage="$D/$1.info" -- "$q" "$g" -u "$D/go" \
			>/dev/null 2>"$D/$1.err" || fail "$(cat "$D/$1.err")"
		grep -h 'listings from the cache' "$D/$1.err"
	}
	run cov first
	assert_output --partial ': 0 listings from the cache, 1 stored in it'
	[ "$(stat -c %a "$D/cache")" = 700 ]
	run cov again
	assert_output --partial ': 1 listings from the cache, 0 stored in it'
	cmp "$D/first.info" "$D/again.info"
	# Its header kept, the rest garbage: read anew, and rewritten.
	f=$(echo "$D"/cache/*.listing)
	python3 -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read())
b[208:] = b"\xff" * (len(b) - 208); open(p, "wb").write(b)' "$f"
	run cov damaged
	assert_output --partial ': 0 listings from the cache, 1 stored in it'
	cmp "$D/first.info" "$D/damaged.info"
	truncate -s 100 "$f"
	run cov cut
	assert_output --partial ': 0 listings from the cache, 1 stored in it'
	cmp "$D/first.info" "$D/cut.info"
	# The program changed: another key (and both kept).
	touch "$g"
	run cov touched
	assert_output --partial ': 0 listings from the cache, 1 stored in it'
	cmp "$D/first.info" "$D/touched.info"
	[ "$(find "$D/cache" -name '*.listing' | wc -l)" = 2 ]
	# Bounded: beyond 256 MiB the least recently used go until 3/4 of it
	# is left (sparse files of 100 MiB each, used two days, a day and an
	# hour ago: the first two go), and a .tmp- file a killed tool left
	# over an hour ago.
	for f in 1:'2 days' 2:'1 day' 3:'1 hour'; do
		truncate -s 100M "$D/cache/000000000000000${f%%:*}.listing"
		touch -d "${f#*:} ago" "$D/cache/000000000000000${f%%:*}.listing"
	done
	truncate -s 1M "$D/cache/0000000000000009.listing.tmp-abcdef"
	touch -d '2 hours ago' "$D/cache/0000000000000009.listing.tmp-abcdef"
	touch "$g"
	run cov bounded
	assert_output --partial ': 0 listings from the cache, 1 stored in it'
	run ls "$D/cache"
	refute_line 0000000000000001.listing
	refute_line 0000000000000002.listing
	refute_line 0000000000000009.listing.tmp-abcdef
	assert_line 0000000000000003.listing
	# (And the three of this test's runs, the newest.)
	[ "$(find "$D/cache" -name '*.listing' | wc -l)" = 4 ]
	cmp "$D/first.info" "$D/bounded.info"
	# None with --no-cache.
	"$QEMU_JITBPF" -v --no-cache --coverage="$D/none.info" -- "$q" "$g" -u "$D/go" \
		>/dev/null 2>"$D/none.err"
	run grep -c 'listings from the cache' "$D/none.err"
	assert_output 0
	cmp "$D/first.info" "$D/none.info"
	# A directory others can write is refused, in one line.
	mkdir -m 777 "$D/open"
	run "$QEMU_JITBPF" --cache-dir="$D/open" --coverage="$D/x.info" -- "$q" "$g" a
	assert_failure
	assert_output "qemu-jitbpf: --cache-dir $D/open: not a directory of this user's own that only it can write"
	run "$QEMU_JITBPF" --cache-dir="$D/c" --no-cache --coverage="$D/x.info" -- "$q" "$g" a
	assert_failure
	assert_output --partial '--cache-dir and --no-cache: one or the other'
}
