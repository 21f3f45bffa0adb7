"""The LLaMA examples (issue 19): examples/llama3_8b at its real sizes in
symbolic mode, examples/llama3_tiny training against its reference, and
torchtitan's plan written as a tpsim plan (docs/transformer.md)."""
import json
import sys

import pytest

import tpsim
from conftest import root_path

sys.path.insert(0, root_path("examples", "llama3_tiny"))
import torchtitan_plan  # noqa: E402

# One block's collectives in one training step, as Megatron counts them
# (Korthikanti et al. 2022, table 1): plain tensor parallelism
# all-reduces the attention's and the MLP's outputs forward (the g of
# o and w2) and their inputs' gradients backward (the f before q, k, v
# and before w1, w3); sequence parallelism turns each all_reduce into an
# all_gather and a reduce_scatter, both ways, and all-reduces the two
# RMSNorm weight gradients, which each rank computes from its own
# sequence shard.
PLAIN = {("forward", "all_reduce"): 2, ("backward", "all_reduce"): 2}
SP = {("forward", "all_gather"): 2, ("forward", "reduce_scatter"): 2,
      ("backward", "all_gather"): 2, ("backward", "reduce_scatter"): 2,
      ("backward", "all_reduce"): 2}


@pytest.mark.parametrize("config,expected", [("config.json", PLAIN),
                                             ("config_sp.json", SP)])
@pytest.mark.parametrize("tp", [1, 2, 3, 4])
def test_tiny_llama_trains_like_its_reference(config, expected, tp):
    path = root_path("examples", "llama3_tiny", config)
    trace = tpsim.run(tpsim.Config.load(path).set(tp=tp))
    assert trace.result.match, trace.run_result.verdict
    losses = trace.events(phase="forward", module="loss", op="cross_entropy")
    assert [ev.step for ev in losses] == [0, 1, 2]
    for block in ("layers.0.", "layers.1."):
        got = torchtitan_plan.block_collectives(trace, block)
        assert got == (expected if tp > 1 else {}), (block, got)


def test_torchtitan_plan_is_the_sequence_parallel_config():
    with open(root_path("examples", "llama3_tiny", "config_sp.json")) as f:
        assert torchtitan_plan.TORCHTITAN_PLAN == json.load(f)["plan"]


def test_torchtitan_plan_runs_at_tp_1_to_4(capsys):
    assert torchtitan_plan.main([]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == ["tp 1", "tp 2", "tp 3",
                                                    "tp 4"]
    assert out[1].endswith("one block's collectives: backward all_gather "
                           "2, backward all_reduce 2, backward "
                           "reduce_scatter 2, forward all_gather 2, "
                           "forward reduce_scatter 2")


@pytest.mark.parametrize("config,expected", [("config.json", PLAIN),
                                             ("config_sp.json", SP)])
def test_llama3_8b_collectives_per_block(config, expected):
    path = root_path("examples", "llama3_8b", config)
    trace = tpsim.run(tpsim.Config.load(path).set(layers=2))
    for block in ("layers.0.", "layers.1."):
        assert torchtitan_plan.block_collectives(trace, block) == expected
