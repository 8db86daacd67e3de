#!/usr/bin/env bats
# Readable names: C++ and Rust symbols demangled in the perf map, the
# jitdump and the profiles (perf does not demangle what it reads from a
# perf map), raw in uftrace data (uftrace demangles them itself), and
# kept raw with --no-demangle; x86-64 PLT entries named as binutils and
# uftrace name them.

load helpers

V=10.2.2
CPP_ADD='shapes::Accum<unsigned long>::add(unsigned long)'

setup() {
	[ -x "$QEMU_JITBPF" ] || fail "make tool first"
	D=$BATS_TEST_TMPDIR
	cd "$D"
}

# perf report's user-space symbols of PERF_DATA, hottest first, "PERCENT NAME".
report_syms() { # PERF_DATA
	DEBUGINFOD_URLS= perf report -i "$1" --stdio --sort sym 2>/dev/null |
		sed -nE 's/^ +([0-9.]+)% +\[[.j]\] (.*[^ ]) *$/\1 \2/p'
}

cpp_names() { # ARCH
	local q map
	require_qemu "$V" "$1"
	q=$(qemu_bin "$V" "$1")
	run perf record -q -e cpu-clock -k 1 -o "$D/perf.data" -- \
		"$QEMU_JITBPF" --perfmap --jitdump -o "$D" -- "$q" "$(guest "$1" names-cpp)" 10000000
	assert_success
	assert_line --regexp "^names 10000000 [0-9a-f]+$"
	map=$(perfmap_of "$output")
	grep -qF " $CPP_ADD" "$map" || fail "no $CPP_ADD in the perf map"
	grep -qF " shapes::spin(unsigned long)" "$map" || fail "no shapes::spin in the perf map"
	! grep -E ' _Z[A-Za-z0-9_]+$' "$map" || fail "mangled names in the perf map"
	run report_syms "$D/perf.data"
	echo "# perf map: $(head -n 1 <<<"$output")" >&3
	[ "${lines[0]#* }" = "$CPP_ADD" ] || fail "hottest in perf report: ${lines[0]}"
	rm -f "$map"
	perf_inject "$D/perf.data" "$D/perf.jit.data"
	run report_syms "$D/perf.jit.data"
	echo "# jitdump: $(head -n 1 <<<"$output")" >&3
	[ "${lines[0]#* }" = "$CPP_ADD" ] || fail "hottest in perf report of the jitdump: ${lines[0]}"
}

@test "x86_64 C++: perf report names the hot member function readably, by perf map and by jitdump" {
	cpp_names x86_64
}

@test "aarch64 C++: perf report names the hot member function readably, by perf map and by jitdump" {
	cpp_names aarch64
}

@test "C++ in the profiles: folded, SVG and pprof carry readable names" {
	local q svg
	q=$(qemu_bin "$V" x86_64)
	run "$QEMU_JITBPF" --profile="$D/p.folded" --profile="$D/p.svg" --profile="$D/p.pb.gz" \
		-F 999 -- "$q" "$(guest x86_64 names-cpp)" 10000000
	assert_success
	grep -qF ";shapes::spin(unsigned long);$CPP_ADD " "$D/p.folded" ||
		fail "no spin;add stack in the folded profile: $(head -n 3 "$D/p.folded")"
	svg=$(sed 's/</\&lt;/g; s/>/\&gt;/g' <<<"$CPP_ADD")
	grep -qF "$svg" "$D/p.svg" || fail "no $svg in the SVG"
	# pprof shortens C++ names as it shows them, unless told not to.
	run go tool pprof -top "$D/p.pb.gz"
	assert_success
	assert_output --partial "shapes::Accum::add"
	run go tool pprof -top -symbolize=none "$D/p.pb.gz"
	assert_success
	assert_output --partial "$CPP_ADD"
}

@test "Rust: v0 and legacy names readable in the perf map and in pprof" {
	local q map
	q=$(qemu_bin "$V" x86_64)
	nm "$(guest x86_64 names-rust)" | grep -qE ' _RNvNtCs[0-9A-Za-z_]+_5names6shapes5churn$' ||
		fail "churn is not v0-mangled"
	run "$QEMU_JITBPF" --perfmap --profile="$D/p.pb.gz" -F 999 -- "$q" \
		"$(guest x86_64 names-rust)" 30000000
	assert_success
	assert_line --regexp '^names 30000000 [0-9a-f]+$'
	map=$(perfmap_of "$output")
	grep -qE ' names::shapes::churn$' "$map" || fail "no names::shapes::churn in the perf map"
	# The standard library keeps the legacy mangling: no hash shown.
	grep -qE ' std::rt::lang_start_internal$' "$map" || fail "no std::rt::lang_start_internal"
	! grep -E ' _(Z|R)[A-Za-z0-9_$.]+$' "$map" || fail "mangled names in the perf map"
	rm -f "$map"
	run go tool pprof -top "$D/p.pb.gz"
	assert_success
	assert_output --partial "names::shapes::churn"
}

@test "--no-demangle keeps the names as the files have them; uftrace data keep them raw" {
	local q map
	q=$(qemu_bin "$V" x86_64)
	run "$QEMU_JITBPF" --no-demangle --perfmap -- "$q" "$(guest x86_64 names-cpp)" 100
	assert_success
	map=$(perfmap_of "$output")
	grep -qE ' _ZN6shapes5AccumImE3addEm$' "$map" || fail "no raw name in the perf map"
	! grep -qF "$CPP_ADD" "$map" || fail "a demangled name with --no-demangle"
	rm -f "$map"
	run "$QEMU_JITBPF" --uftrace="$D/u" -- "$q" "$(guest x86_64 names-cpp)" 100
	assert_success
	grep -qE ' T _ZN6shapes4spinEm$' "$D"/u/*.sym || fail "the .sym file lost the raw name"
	# uftrace demangles them itself.
	run uftrace replay -d "$D/u" -F 'shapes::spin'
	assert_success
	assert_output --partial "shapes::Accum::add();"
}

# main()'s own calls in uftrace data DIR, library calls (uftrace's 'P'
# symbols) among them.
main_calls() { # DIR
	uftrace replay -d "$1" -F main -D 2 -f none --no-sched-preempt 2>/dev/null |
		sed -n 's/^ *//; /^main() {/,/^} \/\* main \*\//p'
}

# A dynamic guest of ARCH (its libraries from LIBS, for -L) that lives for
# milliseconds: its PLT entries named as native uftrace names library
# calls, NAME@plt in the perf map, and its libraries' code named, though
# QEMU has gone before the tool reads what it recorded.
plt_names() { # ARCH [LIBS]
	local q
	q=$(qemu_bin "$V" "$1")
	uftrace record -d "$D/n" "$BUILD/guests/native/nonlocal-pg" signal >/dev/null
	run "$QEMU_JITBPF" --uftrace="$D/q" --perfmap -- "$q" ${2:+-L "$2"} \
		"$(guest "$1" nonlocal-dyn)" signal
	assert_success
	assert_line "nonlocal signal 1"
	expected=$(main_calls "$D/n")
	actual=$(main_calls "$D/q")
	grep -qx 'printf();' <<<"$expected" || fail "native: $expected"
	[ "$actual" = "$expected" ] || fail "$(diff <(echo "$expected") <(echo "$actual"))"
	grep -q ' P printf$' "$D/q/nonlocal-dyn.sym" || fail "no P printf in the .sym"
	grep -q ' printf@plt$' "$(perfmap_of "$output")" || fail "no printf@plt in the perf map"
	rm -f "$(perfmap_of "$output")"
	[ -s "$D/q/libc.so.6.sym" ] || fail "libc not in the uftrace data: $(ls "$D/q")"
	# What raise() and printf() run in libc, by .dynsym names.
	replay=$(uftrace replay -d "$D/q" -f none 2>/dev/null)
	grep -qE '^ *pthread_kill\(' <<<"$replay" || fail "raise()'s pthread_kill not named"
	grep -qE '^ *_IO_file_xsputn\(' <<<"$replay" || fail "printf()'s _IO_file_xsputn not named"
}

@test "x86_64 PLT entries and libraries of a short-lived dynamic guest: named as native uftrace names them" {
	plt_names x86_64
}

@test "aarch64 PLT entries and libraries of a short-lived dynamic guest (-L): named as native uftrace names them" {
	plt_names aarch64 /usr/aarch64-linux-gnu
}

@test "x86_64: a library linked by lld, whose segments share file pages, is named" {
	# lld's default layout maps the code segment from the page of the
	# one before it: the file offset alone names two segments.
	cat >"$D/lib.c" <<'C'
unsigned long __attribute__((noinline)) lib_spin(unsigned long x, long n)
{
	while (n--)
		x = x * 2862933555777941757UL + 3037000493UL;
	return x;
}
C
	cat >"$D/main.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
unsigned long lib_spin(unsigned long x, long n);
int main(int argc, char **argv) { printf("%lx\n", lib_spin(7, atol(argv[1]))); return 0; }
C
	clang -O1 -fPIC -shared -fuse-ld=lld -o "$D/liblld.so" "$D/lib.c"
	clang -O1 -o "$D/main" "$D/main.c" -L"$D" -llld -Wl,-rpath,"$D"
	[ "$(readelf -lW "$D/liblld.so" | awk '$1 == "LOAD" && $2 !~ /000$/' | wc -l)" -gt 0 ] ||
		fail "lld laid out every segment at a page start"
	run "$QEMU_JITBPF" --profile="$D/p.folded" -F 499 -- "$(qemu_bin "$V" x86_64)" "$D/main" 300000000
	assert_success
	awk '{ n[$1 ~ /;lib_spin$/] += $NF } END { exit !(n[1] > n[0]) }' "$D/p.folded" ||
		fail "lib_spin not most samples' leaf: $(sort -t' ' -k2 -n "$D/p.folded" | tail -n 3)"
}
