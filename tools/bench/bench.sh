#!/bin/sh
# tpsim's benchmark: figures, never assertions (tests never time anything).
#
#   tools/bench/bench.sh [BUILD_DIR]   (default: build, an optimised build)
#   BENCH_ROUNDS=1 tools/bench/bench.sh   (one round: quick, not a median)
#   TPSIM=/path/to/tpsim tools/bench/bench.sh   (another binary, e.g. an
#        older release; without --stats, MB/s is over the whole run)
#
# For every config in tools/bench/ (and the 16 MiB config of explicit params
# that make_params_config.sh writes, and the symbolic GPT-3 175B runs of
# examples/gpt3_175b/: 512 ranks, no values), it runs `tpsim run CONFIG --stats` in
# BENCH_ROUNDS rounds (default 5), one config after another in each round so
# that a slow spell of the machine hits every config alike, and prints the
# median of each figure: whole-process wall time, peak RSS, the tensor bytes
# held at peak, their ratio, trace size and trace MB/s, and TP steps over the
# reference (same shapes, same threads). Then the GEMM against single-thread
# OpenBLAS (tools/bench/gemm.sh), when the build has it.
# Needs /usr/bin/time (Debian package "time").
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
tpsim=${TPSIM:-$build/src/tpsim}
rounds=${BENCH_ROUNDS:-5}
[ -x "$tpsim" ] || { echo "bench: build first ($tpsim missing)" >&2; exit 2; }
[ -x /usr/bin/time ] || {
	echo "bench: needs /usr/bin/time (apt-get install time)" >&2
	exit 2
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stats=--stats
"$tpsim" run --help 2>&1 | grep -q -- --stats || stats=

"$here/make_params_config.sh" >"$work/params_16MiB.json"
configs="$here/mlp2_h4096_b32_tp2.json $here/mlp2_h4096_b32_tp4.json
$here/mlp2_h4096_b32_tp8.json $here/mlp4_h1024_b64_tp8.json
$here/mlp4_h1024_b64_tp8_train.json $here/seed_2x4.json
$here/mlp4_h1024_b64_tp8_full.json $work/params_16MiB.json
$here/llama_block_d2048_tp4_train.json $here/gpt2_small_block_tp4_train.json
$root/examples/gpt3_175b/config.json $root/examples/gpt3_175b/config_sp.json"

# A config's name in the table: its file name, with its directory for the
# examples (examples/gpt3_175b/config.json is gpt3_175b_config).
bench_name() {
	case $1 in
	"$root"/examples/*)
		echo "$(basename "$(dirname "$1")")_$(basename "$1" .json)" ;;
	*) basename "$1" .json ;;
	esac
}

# One line per run in $work/runs: name wall_s rss_kib tensor_bytes
# trace_bytes trace_s tp_over_reference
round=0
while [ "$round" -lt "$rounds" ]; do
	for cfg in $configs; do
		name=$(bench_name "$cfg")
		/usr/bin/time -f '%e %M' -o "$work/time" \
			"$tpsim" run "$cfg" -o "$work/trace.json" $stats \
			2>"$work/err" || {
			rc=$?
			[ "$rc" = 1 ] || { cat "$work/err" >&2; exit 2; }
		}
		read -r wall rss <"$work/time"
		bytes=$(wc -c <"$work/trace.json")
		awk -v name="$name" -v wall="$wall" -v rss="$rss" \
			-v bytes="$bytes" '
			/stats: seconds:/ {
				for (i = 1; i <= NF; i++)
					if ($i == "writing") trace_s = $(i + 1)
			}
			/stats: tp steps \/ reference:/ { ratio = $7 }
			/tensors at peak/ {
				for (i = 1; i <= NF; i++)
					if ($i == "peak" && $(i - 1) == "at")
						tensors = $(i + 1)
			}
			END {
				gsub(",", "", trace_s)
				if (trace_s == "") trace_s = wall
				if (tensors == "") tensors = 0
				if (ratio == "") ratio = "-"
				print name, wall, rss, tensors, bytes, \
					trace_s, ratio
			}' "$work/err" >>"$work/runs"
	done
	round=$((round + 1))
done

# The median of each column per config (the middle of the sorted values).
printf '%-28s %8s %9s %11s %9s %10s %10s %7s\n' config wall_s \
	rss_MiB tensors_MiB rss/tens trace_MB trace_MB/s tp/ref
for cfg in $configs; do
	name=$(bench_name "$cfg")
	awk -v name="$name" '$1 == name' "$work/runs" >"$work/one"
	median() {
		sort -g -k"$1" "$work/one" |
			awk -v c="$1" '{ v[NR] = $c }
				END { print v[int((NR + 1) / 2)] }'
	}
	wall=$(median 2)
	rss=$(median 3)
	tensors=$(median 4)
	bytes=$(median 5)
	trace_s=$(median 6)
	ratio=$(median 7)
	awk -v n="$name" -v w="$wall" -v r="$rss" -v t="$tensors" \
		-v b="$bytes" -v s="$trace_s" -v q="$ratio" 'BEGIN {
		rm = r / 1024; tm = t / 1048576
		printf "%-28s %8.3f %9.1f %11s %9s %10.2f %10s %7s\n", \
			n, w, rm, (t > 0 ? sprintf("%.1f", tm) : "-"), \
			(t > 0 ? sprintf("%.2f", rm / tm) : "-"), \
			b / 1e6, (s > 0 ? sprintf("%.1f", b / 1e6 / s) : "-"), q
	}'
done
if [ -n "$stats" ]; then
	echo "(median of $rounds rounds; trace_MB/s: trace bytes over the" \
		"trace-writing seconds of --stats)"
else
	echo "(median of $rounds rounds; this binary has no --stats:" \
		"trace_MB/s is over the whole run, tensors and tp/ref unknown)"
fi

echo
gemm=$build/tools/bench/gemm_bench
if [ -n "${TPSIM:-}" ]; then
	echo "GEMM vs OpenBLAS: skipped (TPSIM names another binary)"
elif [ -x "$gemm" ]; then
	"$here/gemm.sh" "$build"
else
	echo "GEMM vs OpenBLAS: not built (install libopenblas-dev and" \
		"reconfigure the build)"
fi
