"""docs/comparison.md: the figures its prose derives by hand for
examples/comparison's five layouts of one 2-block GPT on four ranks are
what tpsim comm counts (the page's tables are tpsim's own output, kept
current by tools/docs_sync.py; this checks the arithmetic beside them)."""
import json

import pytest

import tpsim
from conftest import cli, root_path

H, S, B, VOCAB, MLP, HEADS = 16, 8, 4, 64, 64, 4
# Per block 12h^2 + 13h (q, k, v, o with biases; fc1, fc2 with biases; two
# layer norms); the embedding and the projection VOCAB x H; the final norm.
BLOCK = 12 * H * H + 13 * H
PARAMS = 2 * BLOCK + 2 * VOCAB * H + 2 * H
F32 = 4


def ring_all_reduce(nbytes, n):
    return 2 * (n - 1) * nbytes // n


def ring_gather(nbytes, n):
    return (n - 1) * nbytes // n


def tp_local_params(t):
    """Per tp rank: the split matrices and colwise biases (q, k, v, fc1),
    the replicated layer norms and rowwise biases (6h per block), the
    vocabulary rows of the embedding and the projection, the final
    norm."""
    per_block = 12 * H * H // t + 7 * H // t + 6 * H
    return 2 * per_block + 2 * (VOCAB // t) * H + 2 * H


def saved_floats(b, t):
    """Per block, as docs/symbolic.md derives for tpsim: 4 sbh + 12 sbh/t
    (the layer norms', the attention's one input and fc1's whole; q, k,
    v, o's input, the gelu's and fc2's inputs split) and the softmax
    probabilities a s^2 b / t; then the ids, the final norm's and the
    projection's inputs, and the logits' tp shard."""
    sbh = S * b * H
    return (2 * (4 * sbh + 12 * sbh // t + HEADS * S * S * b // t) + S * b
            + 2 * sbh + S * b * VOCAB // t)


def point(name, **kw):
    return tpsim.comm(root_path("examples", "comparison", name + ".json"),
                      **kw)


def sent(p, phase, op=None):
    f = p["by_phase"]["training"][phase]
    if op is None:
        return f["bytes_per_rank"]
    return f["by_op"].get(op, {"bytes_per_rank": 0})["bytes_per_rank"]


def held(p, key):
    return p["memory"][key]["bytes"]


def test_the_model_has_8640_parameters():
    assert PARAMS == 8640
    assert held(point("ddp4")[0], "param_bytes") == PARAMS * F32


def test_tp_sends_activations_and_never_a_weight():
    (p,) = point("tp4")
    act = S * B * H * F32  # the (4, 8, 16) activation
    stats = S * B * F32  # loss_parallel's (4, 8) statistics
    assert sent(p, "forward") == (5 * ring_all_reduce(act, 4)
                                  + 3 * ring_all_reduce(stats, 4)) == 15936
    assert sent(p, "backward") == 5 * ring_all_reduce(act, 4) == 15360
    assert sent(p, "optimizer") == 0
    assert sent(p, "forward", "all_gather") == 0
    assert held(p, "param_bytes") == tp_local_params(4) * F32 == 9312
    assert held(p, "optimizer_state_bytes") == 2 * 9312
    assert held(p, "peak_activation_bytes") == saved_floats(B, 4) * F32


def test_zero3_gathers_each_weight_before_use():
    (ddp,) = point("ddp4")
    (z,) = point("zero3")
    every = PARAMS * F32
    assert sent(ddp, "optimizer", "all_reduce") == ring_all_reduce(
        every, 4) == 51840
    for phase, op in (("forward", "all_gather"), ("backward", "all_gather"),
                      ("backward", "reduce_scatter")):
        assert sent(z, phase, op) == ring_gather(every, 4) == 25920
    assert sent(z, "optimizer") == 0
    total = sum(sent(z, ph) for ph in ("forward", "backward", "optimizer"))
    assert total == 77760 and 2 * total == 3 * sent(ddp, "optimizer")
    # A quarter of each parameter between uses; fc1's 64 x 16 + 64 at once.
    assert held(z, "param_bytes") == every // 4 == 8640
    assert held(z, "gathered_param_bytes") == (MLP * H + MLP) * F32 == 4352
    assert held(z, "optimizer_state_bytes") == 2 * every // 4
    assert held(ddp, "optimizer_state_bytes") == 2 * every
    # ZeRO shards no activation: DDP's quarter of the batch.
    assert held(z, "peak_activation_bytes") == held(
        ddp, "peak_activation_bytes") == saved_floats(1, 1) * F32 == 21536


def test_dp_times_tp_does_both_on_halves():
    (p,) = point("dp2_tp2")
    act = S * (B // 2) * H * F32
    stats = S * (B // 2) * F32
    assert sent(p, "forward") == (5 * ring_all_reduce(act, 2)
                                  + 3 * ring_all_reduce(stats, 2)) == 5312
    assert sent(p, "backward") == 5 * ring_all_reduce(act, 2) == 5120
    local = tp_local_params(2) * F32
    assert local == 17728
    assert sent(p, "optimizer", "all_reduce") == ring_all_reduce(local, 2)
    assert held(p, "optimizer_state_bytes") == 2 * local
    assert held(p, "peak_activation_bytes") == saved_floats(2, 2) * F32


@pytest.mark.parametrize("zero,state,params", [
    ("ddp", 2, 1), ("1", 1, 1), ("distributed_optimizer", 1, 1),
    ("2", 1, 1), ("3", 1, 0.5)])
def test_zero_on_the_dp_dim_of_dp_times_tp(zero, state, params):
    """The page's last table (tpsim comm --zero, which the Python API
    does not take): ZeRO halves the optimizer state over dp 2 from stage
    1 on, and the parameters at stage 3; the tp traffic stays."""
    local = tp_local_params(2) * F32
    (plain,) = point("dp2_tp2")
    code, out, err = cli("comm", root_path("examples", "comparison",
                                           "dp2_tp2.json"),
                         "--zero", zero, "--json")
    assert code == 0, err
    (p,) = json.loads(out)["points"]
    assert held(p, "optimizer_state_bytes") == state * local
    assert held(p, "param_bytes") == params * local
    for phase in ("forward", "backward"):
        assert sent(p, phase, "all_reduce") == sent(plain, phase,
                                                    "all_reduce")


def test_pipeline_sends_the_stage_boundary_and_holds_its_stage():
    """pp2_tp2: stage 0 runs the embedding and block 0, stage 1 block 1,
    the final norm and the projection, each on tp 2, the batch in 2
    microbatches of 2 sequences. A rank sends only its stage's events:
    tpsim comm's per-rank figures are the busiest stage's, as the
    trace's comm.bytes_per_rank."""
    (p,) = point("pp2_tp2")
    act = S * (B // 2) * H * F32  # a microbatch's (2, 8, 16) activation
    stats = S * (B // 2) * F32
    # Stage 1, per microbatch: forward o's and fc2's all_reduces and
    # loss_parallel's three; backward the projection's, fc1's and q, k,
    # v's input gradients and the send of its input's gradient to stage 0.
    fwd1 = 2 * (2 * ring_all_reduce(act, 2) + 3 * ring_all_reduce(stats, 2))
    bwd1 = 2 * (3 * ring_all_reduce(act, 2) + act)
    # Stage 0: the embedding's, o's and fc2's, the send of its output;
    # backward fc1's and q, k, v's.
    fwd0 = 2 * (3 * ring_all_reduce(act, 2) + act)
    bwd0 = 2 * (2 * ring_all_reduce(act, 2))
    assert (fwd1, bwd1, fwd0, bwd0) == (4480, 8192, 8192, 4096)
    assert fwd1 + bwd1 == 12672 > fwd0 + bwd0 == 12288
    assert sent(p, "forward") == fwd1
    assert sent(p, "backward") == bwd1
    assert sent(p, "backward", "send") == 2 * act
    assert sent(p, "forward", "send") == 0
    assert sent(p, "optimizer") == 0
    assert p["total"]["training"]["bytes_per_rank"] == 12672
    # Stage 1's parameters (the most): block 1's tp shard, the final
    # norm, the projection's 32 vocabulary rows; stage 0's: the
    # embedding's 32 rows and block 0's shard.
    per_block = 12 * H * H // 2 + 7 * H // 2 + 6 * H
    assert held(p, "param_bytes") == (per_block + 2 * H
                                      + VOCAB // 2 * H) * F32 == 8928
    assert (per_block + VOCAB // 2 * H) * F32 == 8800
    assert held(p, "optimizer_state_bytes") == 2 * 8928


def test_pipeline_comm_total_is_the_traces(tmp_path):
    out = tmp_path / "pp.trace.json"
    code, _, err = cli("run", "--symbolic",
                       root_path("examples", "comparison", "pp2_tp2.json"),
                       "-o", str(out))
    assert code == 0, err
    trace = json.loads(out.read_text())
    (p,) = point("pp2_tp2")
    assert trace["comm"]["bytes_per_rank"] == 12672
    assert p["total"]["training"]["bytes_per_rank"] == 12672


def test_pipeline_holds_its_stages_microbatches_in_flight(tmp_path):
    """pp2_tp2 under 1F1B: stage 0 runs two forwards before its first
    backward (p - s - 1 = 1 warm-up forward, then one more), so it holds
    two microbatches' saved activations at its peak; stage 1 one, and
    the model output. A microbatch is b = 2 sequences at tp 2; per block
    4 sbh + 12 sbh/t and the probabilities a s^2 b / t, as without a
    pipeline."""
    out = tmp_path / "pp.trace.json"
    code, _, err = cli("run", "--symbolic",
                       root_path("examples", "comparison", "pp2_tp2.json"),
                       "-o", str(out))
    assert code == 0, err
    trace = json.loads(out.read_text())
    b, t = B // 2, 2
    sbh = S * b * H
    block = 4 * sbh + 12 * sbh // t + HEADS * S * S * b // t
    stage0 = (S * b + block) * F32  # the ids, block 0
    stage1 = (block + 2 * sbh) * F32  # block 1, the norm's, output's input
    logits = S * b * VOCAB // t * F32
    assert (stage0, stage1, logits) == (11328, 13312, 2048)
    by_stage = trace["result"]["pipeline"]["by_stage"]
    assert [s["saved_bytes_per_microbatch"] for s in by_stage] == [
        stage0, stage1]
    assert [s["peak_in_flight"] for s in by_stage] == [2, 1]
    assert [s["peak_activation_bytes"] for s in by_stage] == [
        2 * stage0, stage1 + logits]
    (p,) = point("pp2_tp2")
    assert held(p, "peak_activation_bytes") == 2 * stage0 == 22656
    # Each module saves what it saves without a pipeline, per microbatch:
    # dp2_tp2's rank holds the same b = 2 sequences at tp 2.
    plain = json.loads((tmp_path / "pp.trace.json").read_text())
    code, _, err = cli("run", "--symbolic",
                       root_path("examples", "comparison", "dp2_tp2.json"),
                       "-o", str(tmp_path / "dp.trace.json"))
    assert code == 0, err
    dp = json.loads((tmp_path / "dp.trace.json").read_text())
    key = "saved_activation_bytes_by_module"
    assert plain["result"]["symbolic"][key] == dp["result"]["symbolic"][key]
