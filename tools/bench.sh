#!/bin/sh
# Speed and memory of `tpsim run`, measured, not asserted: prints wall time,
# user time and peak resident memory for a 4-layer MLP (hidden 1024, batch 64,
# values: summary) at tp = 1, 2, 4, 8, inference and one training step, and
# the trace size.
#   tools/bench.sh [BUILD_DIR]     (default: build; an optimised build)
#   BENCH_QUICK=1 tools/bench.sh   (without the 150 MB values=full trace)
# Needs /usr/bin/time (Debian package "time").
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
tpsim=$build/src/tpsim
[ -x "$tpsim" ] || { echo "bench: build first ($tpsim missing)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# mlp TP HIDDEN BATCH VALUES MODE: colwise -> relu -> rowwise, twice (4
# linears); MODE training is one step of mse against zeros, sgd.
mlp() {
	cat <<JSON
{"tpsim": 1, "mesh": {"shape": [$1], "dim_names": ["tp"]},
 "model": [
  {"name": "fc1", "type": "linear", "in_features": $2, "out_features": $2},
  {"name": "act1", "type": "relu"},
  {"name": "fc2", "type": "linear", "in_features": $2, "out_features": $2},
  {"name": "fc3", "type": "linear", "in_features": $2, "out_features": $2},
  {"name": "act2", "type": "relu"},
  {"name": "fc4", "type": "linear", "in_features": $2, "out_features": $2}],
 "plan": {"fc1": "colwise", "fc2": "rowwise", "fc3": "colwise", "fc4": "rowwise"},
 "input": {"shape": [$3, $2], "seed": 1}, "init": {"method": "uniform", "seed": 2},
 "trace": {"values": "$4"}, "mode": "$5"}
JSON
}

printf '%-40s %9s %9s %11s %12s\n' config wall_s user_s peak_rss_MiB trace_bytes
for tp in 1 2 4 8; do
	for run in "summary inference" "summary training" "full inference"; do
		set -- $run
		values=$1 mode=$2
		[ "$values" = full ] && { [ "$tp" != 8 ] || [ -n "${BENCH_QUICK:-}" ]; } && continue
		cfg=$work/mlp_tp$tp.json
		mlp "$tp" 1024 64 "$values" "$mode" >"$cfg"
		/usr/bin/time -f '%e %U %M' -o "$work/time" \
			"$tpsim" run "$cfg" -o "$work/trace.json" 2>/dev/null
		read -r wall user rss <"$work/time"
		printf '%-40s %9s %9s %11.1f %12s\n' \
			"mlp4 h1024 b64 tp$tp $mode values=$values" "$wall" \
			"$user" "$(echo "$rss / 1024" | bc -l)" \
			"$(wc -c <"$work/trace.json")"
	done
done
