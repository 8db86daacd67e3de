# Shared helpers for the bats suite.  Load with: load helpers (or by path).

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$TOP/build
TOOLS=$TOP/tools

bats_load_library bats-support
bats_load_library bats-assert

# The probes we add; docs/probes.md describes each.
OUR_PROBES="tb_gen_code_done tcg_prologue tb_flush jit_attach jitdump_marker
linux_user_guest_base linux_user_elf_image"

qemu_bin() { # VERSION ARCH
	echo "$BUILD/qemu-$1/bin/qemu-$2"
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

# Start a command in the background, its stdout in $BATS_TEST_TMPDIR/bg.out.
start_bg() {
	"$@" >"$BATS_TEST_TMPDIR/bg.out" 2>"$BATS_TEST_TMPDIR/bg.err" &
	BG_PID=$!
}

stop_bg() {
	if [ -n "${BG_PID:-}" ] && kill -0 "$BG_PID" 2>/dev/null; then
		kill "$BG_PID" 2>/dev/null || true
		wait "$BG_PID" 2>/dev/null || true
	fi
	BG_PID=
}

# Wait for a background process to exit on its own; its status in $BG_STATUS.
wait_bg() { # [SECONDS]
	local t=${1:-60}
	while kill -0 "$BG_PID" 2>/dev/null && [ "$t" -gt 0 ]; do
		sleep 1
		t=$((t - 1))
	done
	kill -0 "$BG_PID" 2>/dev/null && fail "background process did not finish"
	wait "$BG_PID"
	BG_STATUS=$?
	BG_PID=
}

# Field value of key=value in a line of the events tool.
field() { # LINE KEY
	sed -nE "s/.* $2=([^ ]+).*/\1/p" <<<"$1"
}
