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
# sequence shard. Backward also all-gathers again the two input shards
# that Megatron keeps for the weight gradients of the fused QKV and of w1,
# w3 (section 4.2.2; "sequence_parallel_save": "shard", the default);
# torchtitan's DTensor autograd keeps the gathered inputs instead
# ("gathered"), without those 2.
PLAIN = {("forward", "all_reduce"): 2, ("backward", "all_reduce"): 2}
SP = {("forward", "all_gather"): 2, ("forward", "reduce_scatter"): 2,
      ("backward", "all_gather"): 4, ("backward", "reduce_scatter"): 2,
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


def _tiny(config, tp, dp, training):
    """examples/llama3_tiny's config on a dp x tp mesh (dp 1: 1-D), one
    block of 16 heads and 8 kv heads, in training (2 SGD steps) or
    inference."""
    with open(root_path("examples", "llama3_tiny", config)) as f:
        d = json.load(f)
    d["vars"].update(layers=1, heads=16, kv_heads=8, tp=tp,
                     batch=2 * dp, seq=tp + 3)
    if dp > 1:
        d["mesh"] = {"shape": [dp, "$tp"], "dim_names": ["dp", "tp"]}
        d["dp_dim"] = "dp"
    if training:
        d["steps"] = 2
        d["optimizer"] = {"type": "sgd", "lr": 0.1}
    else:
        d["mode"] = "inference"
        for key in ("steps", "optimizer", "loss", "loss_parallel"):
            d.pop(key)
    return tpsim.Config.from_dict(d, name=config)


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("config", ["config.json", "config_sp.json"])
@pytest.mark.parametrize("dp", [1, 2])
@pytest.mark.parametrize("tp", range(1, 9))
def test_llama_blocks_match_at_every_tp(tp, dp, config, training):
    # 8 kv heads over tp 1 to 8: whole groups per rank, uneven from tp 3
    # (3, 3, 2 kv heads with their query pairs; an empty rank from tp
    # 5); a sequence of tp + 3 tokens, uneven sequence shards under SP;
    # RoPE, RMSNorm, SwiGLU and a vocab-parallel embedding and head, as
    # the example has them.
    trace = tpsim.run(_tiny(config, tp, dp, training))
    assert trace.result.match, trace.run_result.verdict
    assert trace.mesh["shape"] == ([dp, tp] if dp > 1 else [tp])
    heads = [ev for ev in trace.events(phase="setup",
                                       tensor="layers.0.attn.k.weight")]
    # dim 32 over 16 heads: head_dim 2; k's weight (8 kv heads x 2, 32)
    # is split in whole kv heads by torch.chunk's rule, ceil(8 / tp)
    # heads a rank until they run out (tp 5: 2, 2, 2, 2, 0), a copy on
    # each dp rank.
    chunk = -(-8 // tp)
    expected = [2 * max(0, min(chunk, 8 - chunk * r)) for r in range(tp)]
    got = [r.shape[0] for r in heads[-1].ranks]
    assert got == expected * dp
