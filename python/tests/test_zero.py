"""ZeRO and FSDP with TP (issue 20 item 1, docs/zero.md): the five runs of
examples/zero_tp give DDP's values bit for bit, and their per-rank bytes
and traffic are the figures examples/zero_tp/README.md derives by hand."""
import json

import pytest

import tpsim
from conftest import root_path

CONFIGS = ["ddp", "stage1", "distributed_optimizer", "stage2", "fsdp"]

# README.md's tables: rank 0's param, grad and optimizer-state bytes, and
# the bytes per rank of 3 steps by phase (forward, backward, optimizer).
FOOTPRINT = {
    "ddp": (140, 140, 280),
    "stage1": (140, 140, 120),
    "distributed_optimizer": (140, 140, 120),
    "stage2": (140, 60, 120),
    "fsdp": (60, 60, 120),
}
# FSDP's parameters gathered at once, besides the shards: fc1's tp-local
# weight and bias on tp 0 (20 floats, rank 0) and on tp 1 (15, rank 1);
# without reshard_after_forward fc2's too (15 and 12 more). The others
# gather nothing and write no figure.
GATHERED = {"fsdp": (80, 0, 60, 1)}
GATHERED_KEEP = (140, 0, 108, 1)
TRAFFIC = {
    "ddp": (72, 0, 624),
    "stage1": (72, 0, 984),
    "distributed_optimizer": (72, 0, 720),
    "stage2": (72, 0, 720),
    "fsdp": (432, 720, 0),
}
# Per step, the collectives over dp by (phase, op), one per parameter.
DP_OPS = {
    "ddp": {("optimizer", "all_reduce"): 4},
    "stage1": {("optimizer", "all_reduce"): 4, ("optimizer", "all_gather"): 4},
    "distributed_optimizer": {("optimizer", "reduce_scatter"): 4,
                              ("optimizer", "all_gather"): 4},
    "stage2": {("optimizer", "reduce_scatter"): 4,
               ("optimizer", "all_gather"): 4},
    "fsdp": {("forward", "all_gather"): 4, ("backward", "all_gather"): 4,
             ("backward", "reduce_scatter"): 4},
}


def _path(name):
    return root_path("examples", "zero_tp", name + ".json")


@pytest.mark.parametrize("name", CONFIGS)
def test_zero_example_figures_are_the_readmes(name):
    s = tpsim.run(_path(name), symbolic=True)._json()["result"]["symbolic"]
    params, grads, state = FOOTPRINT[name]
    assert (s["param_bytes"]["bytes"], s["grad_bytes"]["bytes"],
            s["optimizer_state_bytes"]["bytes"]) == (params, grads, state)
    assert s["param_bytes"]["rank"] == 0
    c = s["comm_bytes_per_rank"]
    assert (c["forward"], c["backward"], c["optimizer"]) == TRAFFIC[name]
    if name in GATHERED:
        g = s["gathered_param_bytes"]
        assert (g["bytes"], g["rank"], g["min_bytes"],
                g["min_rank"]) == GATHERED[name]
    else:
        assert "gathered_param_bytes" not in s


def test_fsdp_without_resharding_keeps_every_parameter_gathered():
    with open(_path("fsdp"), encoding="utf-8") as f:
        d = json.load(f)
    d["zero"]["reshard_after_forward"] = False
    s = tpsim.run(tpsim.Config.from_dict(d, "keep.json"),
                  symbolic=True)._json()["result"]["symbolic"]
    g = s["gathered_param_bytes"]
    assert (g["bytes"], g["rank"], g["min_bytes"],
            g["min_rank"]) == GATHERED_KEEP
    assert s["param_bytes"]["bytes"] == 60


@pytest.mark.parametrize("name", CONFIGS)
def test_zero_example_trains_as_ddp_does(name):
    ddp = tpsim.run(_path("ddp")).result
    trace = tpsim.run(_path(name))
    r = trace.result
    assert r.match, trace.run_result.verdict
    assert r.loss == ddp.loss
    for k in ddp.params_after.keys():
        assert (r.params_after[k] == ddp.params_after[k]).all(), k
        assert (r.grads[k] == ddp.grads[k]).all(), k
    ops = {}
    for ev in trace.events(step=0):
        if ev.kind == "collective" and ev.mesh_dim == "dp":
            ops[(ev.phase, ev.op)] = ops.get((ev.phase, ev.op), 0) + 1
    assert ops == DP_OPS[name]
