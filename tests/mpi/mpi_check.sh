#!/bin/bash
# The MPI backend (docs/mpi.md) on this machine's loopback:
#
#  1. Byte identity: every fixture, seed 004's example, LLaMA blocks at
#     dp 2 x tp 4 in float32 and bfloat16 (transformer blocks and dp x tp
#     training), a GPT block with sequence parallelism and ZeRO-3 at
#     dp 2 x tp 4, an MLP at tp 8 in training, GPT blocks at tp 4, FSDP
#     on TP, a pipeline and an injected mistake, at 2, 4 and 8 processes
#     (each count that divides the config's world size), against the
#     one-process trace: the same bytes after the `generator` line, and
#     the same exit code.
#  2. Faults: a bad config and a process count that does not divide the
#     world (every process exits 2, one line from process 0, no trace);
#     one process out of memory (ulimit -v on process 1 alone: exit 2,
#     the line names process 1, no trace); one process killed (the others
#     exit within a minute, no trace and no temporary file left).
#
# usage: mpi_check.sh SOURCE_ROOT TPSIM MPIRUN
set -u
src=$1
tpsim=$2
mpirun=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Open MPI refuses root without these; more processes than cores are
# fine for a test (--oversubscribe).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=("$mpirun" --oversubscribe)
failures=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

world_of() {
	python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))
v = c.get("vars", {})
n = 1
for s in c["mesh"]["shape"]:
    n *= v[s[1:]] if isinstance(s, str) else s
print(n)' "$1"
}

# 1. Byte identity.
declare -A compared
configs=("$src"/fixtures/*/config.json
	"$src"/examples/seed004_ddp_tp/config.json
	"$src"/tests/mpi/llama_block_dp2_tp4.json
	"$src"/tests/mpi/llama_block_dp2_tp4_bf16.json
	"$src"/tests/mpi/gpt_sp_zero3_dp2_tp4.json
	"$src"/tools/bench/mlp4_h1024_b64_tp8_train.json
	"$src"/examples/gpt_2block/config_sp.json
	"$src"/examples/zero_tp/fsdp.json
	"$src"/examples/comparison/pp2_tp2.json
	"$src"/examples/mistakes/same_dropout_seed.json)
for cfg in "${configs[@]}"; do
	world=$(world_of "$cfg")
	"$tpsim" run "$cfg" -o "$out/one.json" --threads 1 2>/dev/null
	rc_one=$?
	for np in 2 4 8; do
		[ $((world % np)) -eq 0 ] || continue
		rm -f "$out/mpi.json"
		timeout 300 "${mpi[@]}" -np "$np" "$tpsim" run "$cfg" \
			--backend mpi -o "$out/mpi.json" --threads 2 \
			>"$out/log" 2>&1
		rc=$?
		if [ "$rc" -ne "$rc_one" ]; then
			fail "$cfg at $np processes: exit $rc, one process $rc_one"
			sed -n 1,5p "$out/log"
		elif ! cmp -s <(tail -n +3 "$out/one.json") \
			<(tail -n +3 "$out/mpi.json"); then
			fail "$cfg at $np processes: the trace differs"
		fi
		compared[$np]=$((${compared[$np]:-0} + 1))
	done
done
for np in 2 4 8; do
	echo "byte identity at $np processes: ${compared[$np]:-0} configs"
	[ "${compared[$np]:-0}" -ge 2 ] || fail "too few configs at $np"
done

# 2. Faults. $1: what; expects exit 2, exactly one "tpsim:" line
# matching $2 on stderr, and no trace or temporary file in $out/f.
expect_trouble() {
	local what=$1 pattern=$2 rc=$3
	local lines
	lines=$(grep -c '^tpsim:' "$out/log")
	if [ "$rc" -ne 2 ]; then
		fail "$what: exit $rc, expected 2"
	fi
	if [ "$lines" -ne 1 ] || ! grep -q "$pattern" "$out/log"; then
		fail "$what: expected one line matching '$pattern', got:"
		grep '^tpsim:' "$out/log"
	fi
	if [ -n "$(ls -A "$out/f")" ]; then
		fail "$what: left $(ls -A "$out/f")"
	fi
}
mkdir -p "$out/f"

printf '{"tpsim": 1, "mesh": {"shape": [2, 0], "dim_names": ["dp", "tp"]}}' \
	>"$out/bad.json"
"${mpi[@]}" -np 4 "$tpsim" run "$out/bad.json" --backend mpi \
	-o "$out/f/t.json" >"$out/log" 2>&1
expect_trouble "bad config" "/mesh/shape/1" $?

"${mpi[@]}" -np 4 "$tpsim" run "$src/fixtures/bf16_all_reduce_3_ranks/config.json" \
	--backend mpi -o "$out/f/t.json" >"$out/log" 2>&1
expect_trouble "4 processes for 3 ranks" "4 processes cannot share" $?

# Process 1 runs short of memory: it may map no more than 110 MB (its
# Open MPI runtime alone maps most of it), or,
# in an AddressSanitizer build (whose shadow memory needs terabytes of
# address space), no allocation may pass 4 MiB: its ranks' 8 MiB shards
# of the MLP's weights do not fit.
mlp=$src/tools/bench/mlp2_h4096_b32_tp8.json
if ldd "$tpsim" | grep -q libasan; then
	short=(env "ASAN_OPTIONS=${ASAN_OPTIONS:-}:allocator_may_return_null=1:max_allocation_size_mb=4"
		"$tpsim" run "$mlp" --backend mpi -o "$out/f/t.json")
else
	short=(sh -c "ulimit -v 110000; exec '$tpsim' run '$mlp' \
		--backend mpi -o '$out/f/t.json' --threads 1")
fi
"${mpi[@]}" -np 1 "$tpsim" run "$mlp" --backend mpi -o "$out/f/t.json" : \
	-np 1 "${short[@]}" >"$out/log" 2>&1
expect_trouble "process 1 out of memory" \
	"process 1 (ranks 4 to 7).*out of memory" $?

# Kill process 2 of 4 while the run goes on: mpirun stops the others.
long=$src/tests/mpi/long_train_tp8.json
"${mpi[@]}" -np 4 "$tpsim" run "$long" --backend mpi --no-reference \
	-o "$out/f/t.json" >"$out/log" 2>&1 &
job=$!
victim=""
for _ in $(seq 100); do
	sleep 0.1
	for pid in $(pgrep -f "tpsim run $long"); do
		if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
			grep -qx 'OMPI_COMM_WORLD_RANK=2'; then
			victim=$pid
		fi
	done
	[ -n "$victim" ] && break
done
if [ -z "$victim" ]; then
	fail "kill: process 2 not found"
else
	sleep 1
	kill -9 "$victim"
	start=$(date +%s)
	while kill -0 "$job" 2>/dev/null && [ $(($(date +%s) - start)) -lt 60 ]; do
		sleep 0.2
	done
	if kill -0 "$job" 2>/dev/null; then
		fail "kill: mpirun still runs a minute after process 2 died"
		pkill -9 -f "tpsim run $long"
	fi
	wait "$job"
	rc=$?
	[ "$rc" -ne 0 ] || fail "kill: mpirun exited 0"
	sleep 1
	if pgrep -f "tpsim run $long" >/dev/null; then
		fail "kill: a process of the run still lives"
		pkill -9 -f "tpsim run $long"
	fi
	[ -z "$(ls -A "$out/f")" ] || fail "kill: left $(ls -A "$out/f")"
	echo "kill: mpirun exited $rc in $(($(date +%s) - start)) s"
fi

if [ "$failures" -ne 0 ]; then
	echo "$failures failures"
	exit 1
fi
echo "mpi: all checks passed"
