# Helpers shared by the benchmarks; source it.

# W1 (shared/reference/qemu-build.md): python3 importing a few modules,
# translation-heavy.  Python randomizes string hashing per run, and with it
# how much code W1 translates (50-60 k TBs): the seed is fixed so that every
# run does the same guest work.  BENCH_HASHSEED=random restores Python's
# default.
W1='import json,decimal,email.parser,http.client; print(sum(range(10**6)))'
export PYTHONHASHSEED=${BENCH_HASHSEED:-0}

# Exit unless every named file exists.
need() { # HINT FILE...
	local hint=$1 f
	shift
	for f in "$@"; do
		[ -e "$f" ] || { echo "bench: $f missing ($hint)" >&2; exit 1; }
	done
}

need_rounds() {
	[ "$ROUNDS" -ge 5 ] || { echo "bench: ROUNDS must be >= 5" >&2; exit 1; }
}

need_root() {
	[ "$(id -u)" = 0 ] || { echo "bench: qemu-jitbpf needs root" >&2; exit 1; }
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# The space-separated numbers in $1, one a line.
lines_of() { tr ' ' '\n' <<<"$1" | grep .; }

# Median of the space-separated numbers in $1.
median_of() { lines_of "$1" | median; }

# A 95 % confidence interval of the median of the numbers on stdin, "LO HI":
# the order statistics the sign test gives, n/2 -+ 0.98 sqrt(n) (normal
# approximation of the binomial), which assumes nothing of the spread: on
# this machine a run's time is bimodal.
median_ci() {
	sort -g | awk '{ a[NR] = $1 } END {
		d = 0.98 * sqrt(NR); lo = int(NR / 2 - d); hi = int(NR / 2 + d + 0.999) + 1
		if (lo < 1) lo = 1; if (hi > NR) hi = NR
		print a[lo], a[hi] }'
}

# Wait until no qemu-jitbpf is left detaching from an earlier run: it would
# slow the next run's attach (docs/design/engine.md, "Stopping").
settle() {
	while pgrep -x qemu-jitbpf >/dev/null; do sleep 0.05; done
}
