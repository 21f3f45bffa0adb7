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
# reference (same shapes, same threads). Then issue 22's figures, each
# beside its aim: the MLP tp 8's wall time and tensors over its unique
# tensor bytes, the worst tp/ref of the MLPs, the GPT-2-small block step's
# GFLOP/s over the GEMM's (tools/bench/gemm_rate, same threads), the 16 MiB
# params config's RSS over its tensors, and the peak RSS of `timeline` of
# GPT-3 175B and of `view` of two full traces (53 MB: the viewer's
# tools/viewer/mlp4_h544_b64_tp8_full.json; 150 MB). Then the GEMM against
# single-thread OpenBLAS (tools/bench/gemm.sh), when the build has it.
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
				for (i = 1; i <= NF; i++) {
					if ($i == "writing") trace_s = $(i + 1)
					if ($i == "steps") tp_s = $(i + 1)
					if ($i == "reference") ref_s = $(i + 1)
				}
			}
			/flops on the simulated ranks/ {
				for (i = 1; i <= NF; i++)
					if ($i == "flops") flops = $(i - 1)
			}
			/stats: tp steps \/ reference:/ { ratio = $7 }
			/tensors at peak/ {
				for (i = 1; i <= NF; i++)
					# "312 bytes," or "452 MiB (474169344
					# bytes)"
					if ($i == "peak" && $(i - 1) == "at")
						tensors = $(i + 2) ~ /^bytes/ ? $(i + 1) : $(i + 3)
				gsub("[(]", "", tensors)
			}
			END {
				gsub(",", "", trace_s)
				if (trace_s == "") trace_s = wall
				if (tensors == "") tensors = 0
				if (ratio == "") ratio = "-"
				gsub(",", "", tp_s)
				gsub(",", "", ref_s)
				if (tp_s == "") tp_s = 0
				if (ref_s == "") ref_s = 0
				if (flops == "") flops = 0
				print name, wall, rss, tensors, bytes, \
					trace_s, ratio, tp_s + ref_s, flops
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

# Issue 22's figures, from the medians above and a few more runs.
med() { # med NAME COLUMN: the median of a column of one config's runs
	awk -v name="$1" '$1 == name' "$work/runs" | sort -g -k"$2" |
		awk -v c="$2" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'
}
# peak RSS (KiB) of a command, its output to /dev/null or a file
peak_kib() {
	/usr/bin/time -f '%M' -o "$work/time" "$@" >/dev/null 2>"$work/err" ||
		{ cat "$work/err" >&2; exit 2; }
	cat "$work/time"
}
echo
echo "issue 22's figures (each against its aim):"
if [ -n "$stats" ]; then
	# Unique tensor bytes of the MLP: its global parameters, and the
	# activations (input and every module's output) of the simulation
	# and of the reference, float32.
	unique=$(python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))
rows = c["input"]["shape"][0]
feats = c["input"]["shape"][-1]
params = acts = 0
acts = rows * feats
for m in c["model"]:
    if m["type"] == "linear":
        params += m["in_features"] * m["out_features"] + m["out_features"]
        feats = m["out_features"]
    acts += rows * feats
print(4 * (params + 2 * acts))' "$here/mlp2_h4096_b32_tp8.json")
	awk -v w="$(med mlp2_h4096_b32_tp8 2)" \
		-v t="$(med mlp2_h4096_b32_tp8 4)" -v u="$unique" 'BEGIN {
		printf "  MLP 2x4096 b32 tp8: whole process %.3f s (aim <= " \
			"0.12), tensors at peak %.2fx the unique %.1f MiB " \
			"(aim <= 1.15)\n", w, t / u, u / 1048576 }'
	worst=0
	for cfg in mlp2_h4096_b32_tp2 mlp2_h4096_b32_tp4 mlp2_h4096_b32_tp8 \
		mlp4_h1024_b64_tp8 mlp4_h1024_b64_tp8_train; do
		r=$(med "$cfg" 7)
		worst=$(awk -v a="$worst" -v b="$r" \
			'BEGIN { print (b > a ? b : a) }')
	done
	echo "  tp steps / reference, the MLPs at tp 2-8: at most $worst" \
		"(aim <= 1.2)"
	rate=$("$build/tools/bench/gemm_rate" | awk '{ print $1 }')
	awk -v s="$(med gpt2_small_block_tp4_train 8)" \
		-v f="$(med gpt2_small_block_tp4_train 9)" -v g="$rate" 'BEGIN {
		a = 2 * f / s / 1e9
		printf "  GPT-2-small block step: %.1f GFLOP/s (%.1f GFLOP: " \
			"the simulated ranks'"'"' and the reference'"'"'s, in " \
			"%.2f s of tp steps and reference) = %.0f%% of the " \
			"GEMM'"'"'s %.1f GFLOP/s (aim >= 50%%)\n", a, 2 * f / 1e9, \
			s, 100 * a / g, g }'
	awk -v r="$(med params_16MiB 3)" -v t="$(med params_16MiB 4)" 'BEGIN {
		printf "  16 MiB params config: peak RSS %.2fx its tensor " \
			"bytes (aim <= 1.5)\n", r * 1024 / t }'
fi
"$tpsim" run "$root/examples/gpt3_175b/config.json" -o "$work/gpt3.json" \
	2>/dev/null
kib=$(peak_kib "$tpsim" timeline "$work/gpt3.json" -o "$work/timeline.json")
size=$(wc -c <"$work/timeline.json")
rm -f "$work/timeline.json" "$work/gpt3.json"
awk -v k="$kib" -v b="$size" 'BEGIN {
	printf "  timeline of GPT-3 175B on 512 ranks (%.0f MB): peak RSS " \
		"%.0f MB (aim < 100)\n", b / 1e6, k * 1024 / 1e6 }'
for cfg in "$root/tools/viewer/mlp4_h544_b64_tp8_full.json" \
	"$here/mlp4_h1024_b64_tp8_full.json"; do
	"$tpsim" run "$cfg" -o "$work/full.json" 2>/dev/null || true
	kib=$(peak_kib "$tpsim" view "$work/full.json" -o "$work/page.html")
	size=$(wc -c <"$work/full.json")
	rm -f "$work/page.html" "$work/full.json"
	awk -v k="$kib" -v b="$size" 'BEGIN {
		printf "  view of a %.0f MB trace: peak RSS %.0f MB (aim < " \
			"100 for 53 MB)\n", b / 1e6, k * 1024 / 1e6 }'
done

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
