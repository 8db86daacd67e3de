#!/bin/bash
# Run fuzz targets: fuzz/run.sh DIR TARGET...  (make fuzz)
# Each target FUZZ_BIN/TARGET (DIR/bin by default) runs FUZZ_TIME seconds
# (default 300) on its
# checked-in seeds (fuzz/corpus/TARGET) and what earlier runs kept in
# DIR/corpus/TARGET, where new inputs go.  A crash, leak, hang or
# sanitizer report lands in DIR/findings/TARGET/ and fails the run.
# One line per target says what it did: executions, coverage, findings.
set -u
dir=$1
shift
top=$(cd "$(dirname "$0")/.." && pwd)
time=${FUZZ_TIME:-300}
bin=${FUZZ_BIN:-$dir/bin}
status=0
for t in "$@"; do
	corpus=$dir/corpus/$t
	found=$dir/findings/$t
	log=$dir/logs/$t.log
	mkdir -p "$corpus" "$found" "$dir/logs"
	before=$(find "$found" -type f | wc -l)
	"$bin/$t" -max_total_time="$time" -timeout=10 -rss_limit_mb=4096 \
		-print_final_stats=1 -artifact_prefix="$found/" \
		"$corpus" "$top/fuzz/corpus/$t" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1)
	new=$(($(find "$found" -type f | wc -l) - before))
	echo "$t: ${runs:-?} runs in ${time} s, ${cov:-cov: ?}, corpus $(find "$corpus" -type f | wc -l), $new findings"
	if [ "$rc" != 0 ] || [ "$new" != 0 ]; then
		echo "$t: exit $rc; $log says:" >&2
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -n 5 >&2
		ls "$found" >&2
		status=1
	fi
done
exit $status
