#!/bin/sh
# The viewer's load times for docs/viewer.md: the 2x4 example and a
# ~50 MB trace (mlp4_h544_b64_tp8_full.json beside this script: four
# 544-wide linears at tp 8, "values": "full"), each made with tpsim run
# and tpsim view, then timed in headless chromium by load_time.js.
#   tools/viewer/measure.sh [BUILD_DIR]    (default build)
set -eu
cd "$(dirname "$0")/../.."
tpsim=${1:-build}/src/tpsim
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
$tpsim run fixtures/seed_2x4_rowwise_after_reduce/config.json \
	-o "$out/seed_2x4.json" 2>/dev/null
$tpsim run tools/viewer/mlp4_h544_b64_tp8_full.json \
	-o "$out/mlp4_h544_full.json" 2>/dev/null
for t in seed_2x4 mlp4_h544_full; do
	ls -l "$out/$t.json" | awk -v t="$t" '{ printf "%s trace: %.1f MB\n", t, $5 / 1e6 }'
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f "tpsim view $t: %e s, %M KB peak RSS" \
			$tpsim view "$out/$t.json" -o "$out/$t.html"
	else
		$tpsim view "$out/$t.json" -o "$out/$t.html"
	fi
done
node tools/viewer/load_time.js "$out/seed_2x4.html" "$out/mlp4_h544_full.html"
