#!/bin/sh
# Runs one fuzz target (tests/fuzz/README.md) for SECONDS:
#   tools/fuzz.sh config|check|trace SECONDS [LIBFUZZER_OPTION...]
# Builds build-fuzz (clang, -Dfuzz=true, address,undefined) when needed,
# makes the seed corpus (tools/fuzz_corpus.py) once, and fuzzes with the
# target's dictionary. New inputs collect in build-fuzz/fuzz/work/TARGET,
# findings in build-fuzz/fuzz/findings/TARGET. Prints executions,
# coverage (libFuzzer's "cov:", edges), features and findings; exits
# non-zero on a crash, leak, timeout or sanitizer report.
# Extra options go to libFuzzer (e.g. -runs=10000000: stop after that many
# executions, or at SECONDS, whichever comes first).
set -eu
cd "$(dirname "$0")/.."

usage() {
	echo "usage: tools/fuzz.sh config|check|trace SECONDS [LIBFUZZER_OPTION...]" >&2
	exit 2
}
[ $# -ge 2 ] || usage
target=$1
seconds=$2
shift 2
case $target in
config | check | trace) ;;
*) usage ;;
esac
case $seconds in
'' | *[!0-9]*) usage ;;
esac

dir=${TPSIM_FUZZ_BUILD:-build-fuzz}
if [ ! -f "$dir/build.ninja" ]; then
	# The fuzzed readers run in one process: no MPI backend.
	CC=clang meson setup "$dir" -Dfuzz=true --buildtype=debugoptimized \
		-Db_sanitize=address,undefined -Db_lundef=false \
		-Dmpi=disabled >/dev/null
fi
ninja -C "$dir" "tests/fuzz/fuzz_$target" src/tpsim tests/test_config \
	>/dev/null

seeds=$dir/fuzz/seeds
if [ ! -d "$seeds/$target" ]; then
	rm -rf "$seeds"
	ASAN_OPTIONS=detect_leaks=0 python3 tools/fuzz_corpus.py . \
		"$dir/src/tpsim" "$dir/tests/test_config" "$seeds.tmp" >/dev/null
	mv "$seeds.tmp" "$seeds"
fi
work=$dir/fuzz/work/$target
findings=$dir/fuzz/findings/$target
mkdir -p "$work" "$findings"
log=$dir/fuzz/$target.log
before=$(ls "$findings" | wc -l)

# UBSan reports abort (libFuzzer then saves the input); -timeout: one
# input taking over 10 s is a hang; inputs up to 64 KiB (the seeds' cap).
rc=0
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
	"$dir/tests/fuzz/fuzz_$target" -max_total_time="$seconds" \
	-timeout=10 -rss_limit_mb=2048 -max_len=65536 \
	-dict="tests/fuzz/$target.dict" -print_final_stats=1 \
	-artifact_prefix="$findings/" "$@" \
	"$work" "$seeds/$target" "tests/fuzz/regression/$target" \
	>"$log" 2>&1 || rc=$?

after=$(ls "$findings" | wc -l)
# The last status line: "#N  DONE  cov: C ft: F corp: K/SIZE ... exec/s: E"
status=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
field() {
	echo "$status" | sed -n "s/.* $1: \([^ ]*\).*/\1/p"
}
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
echo "fuzz: $target: ${runs:-?} executions in ${seconds} s or less" \
	"(${speed:-?}/s), cov: $(field cov) edges, ft: $(field ft)," \
	"corpus $(field corp) (files/bytes), $((after - before)) new findings" \
	"in $findings (log: $log)"
if [ "$rc" -ne 0 ] || [ "$after" -ne "$before" ]; then
	grep -E 'ERROR: |runtime error|broken contract|SUMMARY' "$log" |
		head -n 5 >&2 || true
	echo "fuzz: $target: FAILED (libFuzzer exit $rc)" >&2
	exit 1
fi
