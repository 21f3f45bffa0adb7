"""Issue 20's features together (docs/zero.md, docs/symbolic.md): ZeRO
stages and FSDP over dp, sequence parallelism keeping the shard or the
gathered input, and full recompute, on one LLaMA block of
examples/llama3_tiny at dp 2 x tp 2. Each changes what a rank holds and
what it sends, never a value: every combination gives the plain run's
loss, gradients and parameters bit for bit, and its own collectives."""
import json

import pytest

import tpsim
from conftest import root_path


def _config(zero, save, recompute):
    with open(root_path("examples", "llama3_tiny", "config_sp.json")) as f:
        d = json.load(f)
    # dim 32, 8 heads over 4 kv heads, a sequence of 5 (uneven shards
    # over tp 2), a batch of 4 over dp 2.
    d["vars"].update(layers=1, tp=2, batch=4, seq=5)
    d["mesh"] = {"shape": [2, "$tp"], "dim_names": ["dp", "tp"]}
    d["dp_dim"] = "dp"
    d["steps"] = 2
    if zero:
        d["zero"] = zero
    d["sequence_parallel_save"] = save
    d["recompute"] = recompute
    return tpsim.Config.from_dict(d, name="llama3_tiny combined")


def _counts(trace):
    ops = {}
    for ev in trace.events(step=0):
        if ev.kind == "collective":
            key = (ev.phase, ev.op, ev.mesh_dim)
            ops[key] = ops.get(key, 0) + 1
    return ops


@pytest.fixture(scope="module")
def plain():
    return tpsim.run(_config(None, "shard", "none"))


ZEROS = [None, {"stage": 1}, {"stage": 1, "distributed_optimizer": True},
         {"stage": 2}, {"stage": 3},
         {"stage": 3, "reshard_after_forward": False}]


@pytest.mark.parametrize("recompute", ["none", "full"])
@pytest.mark.parametrize("save", ["shard", "gathered"])
@pytest.mark.parametrize("zero", ZEROS, ids=json.dumps)
def test_zero_sp_and_recompute_together_change_no_value(plain, zero, save,
                                                         recompute):
    trace = tpsim.run(_config(zero, save, recompute))
    r, p = trace.result, plain.result
    assert r.match, trace.run_result.verdict
    assert r.loss == p.loss
    assert (r.output == p.output).all()
    for k in p.params_after.keys():
        assert (r.params_after[k] == p.params_after[k]).all(), k
        assert (r.grads[k] == p.grads[k]).all(), k
    got, base = _counts(trace), _counts(plain)
    # The tp collectives (the plain run's are test_llama.py's SP counts
    # for the block, plus the head's and the loss's): ZeRO changes none
    # of them. "gathered" keeps the three colwise inputs all-gathered from
    # sequence shards (q, k, v's; w1, w3's; the output head's), so
    # backward does not gather them again (3 all_gathers fewer); full
    # recompute runs the block's forward again in backward, with its
    # 2 all_gathers and 2 reduce_scatters over tp, marked "recompute".
    tp = {k[:2]: v for k, v in got.items() if k[2] == "tp"}
    expected = {k[:2]: v for k, v in base.items() if k[2] == "tp"}
    if save == "gathered":
        expected[("backward", "all_gather")] -= 3
    recomputed = {}
    for ev in trace.events(step=0):
        if ev.recompute and ev.kind == "collective" and ev.mesh_dim == "tp":
            recomputed[ev.op] = recomputed.get(ev.op, 0) + 1
    if recompute == "full":
        assert recomputed == {"all_gather": 2, "reduce_scatter": 2}
        expected[("backward", "all_gather")] += 2
        expected[("backward", "reduce_scatter")] += 2
    else:
        assert recomputed == {}
        assert not [ev for ev in trace.events(step=0) if ev.recompute]
    assert tp == expected
    # The dp collectives are the zero stage's alone: one per parameter
    # in the phases of docs/zero.md's table, whatever SP or recompute do.
    n_params = len(p.params_after.keys())
    dp = {k[:2]: v for k, v in got.items() if k[2] == "dp"}
    stage = (zero or {}).get("stage", 0)
    if stage == 0:
        expected = {("optimizer", "all_reduce"): n_params}
    elif stage == 1 and not zero.get("distributed_optimizer"):
        expected = {("optimizer", "all_reduce"): n_params,
                    ("optimizer", "all_gather"): n_params}
    elif stage in (1, 2):
        expected = {("optimizer", "reduce_scatter"): n_params,
                    ("optimizer", "all_gather"): n_params}
    else:
        expected = {("forward", "all_gather"): n_params,
                    ("backward", "reduce_scatter"): n_params}
        if zero.get("reshard_after_forward", True):
            expected[("backward", "all_gather")] = n_params
    assert dp == expected
