#!/bin/sh
# Writes to stdout a tpsim config whose "params" give every value of one big
# linear explicitly: the input-heavy case of the JSON reader and the config
# loader (issue 6). With the defaults (in_features 1024, out_features 1200)
# the file is about 15.9 MiB, just under the 16 MiB config limit.
#   tools/bench/make_params_config.sh [OUT_FEATURES [IN_FEATURES [SEED]]] >cfg.json
# tools/bench/time_config_load.c times loading it.
# Values are float32-sized decimals in (-1, 1) printed with "%.9g" (so some
# come out as "1.23456791e-05"), from a Park-Miller generator: the same
# bytes on every machine and awk.
set -eu
out=${1:-1200}
in=${2:-1024}
seed=${3:-1}
cat <<JSON
{"tpsim": 1, "mesh": {"shape": [2], "dim_names": ["tp"]},
 "model": [{"name": "fc1", "type": "linear", "in_features": $in, "out_features": $out, "bias": false}],
 "plan": {"fc1": "colwise"},
 "input": {"shape": [2, $in], "init": "arange"},
 "trace": {"values": "none"},
JSON
awk -v rows="$out" -v cols="$in" -v seed="$seed" 'BEGIN {
	m = 2147483647
	x = seed % m
	if (x <= 0) { x = 1 }
	printf " \"params\": {\"fc1.weight\": [\n"
	for (r = 0; r < rows; r++) {
		printf "  ["
		for (c = 0; c < cols; c++) {
			x = (x * 16807) % m
			v = 2 * x / m - 1
			# One value in 64 is tiny, to exercise exponents.
			if (x % 64 == 0) { v = v / 65536 }
			printf "%s%.9g", (c ? ", " : ""), v
		}
		printf "]%s\n", (r + 1 < rows ? "," : "")
	}
	printf " ]}}\n"
}'
