"""tpsim.testing.assert_shard_close on the 2x4 example, whose values are
derived by hand (fixtures/seed_2x4_rowwise_after_reduce/DERIVATION.md)."""
import numpy as np
import pytest

import tpsim
import tpsim.testing
from tpsim.testing import assert_shard_close
from conftest import root_path


def test_the_derived_shards_pass(example_trace):
    # The all_reduce's result on either rank, the weight's column shards
    # at setup, and each rank's partial product X_i W_i^T: rank 0 has
    # columns 0-1 of X = [[1,2],[5,6]] and of W = [[1,2],[5,6]].
    for rank in (0, 1):
        assert_shard_close(example_trace, "fc.out", rank,
                           [[30, 70], [70, 174]], op="all_reduce")
    assert_shard_close(example_trace, "fc.weight", 1, [[3, 4], [7, 8]],
                       phase="setup")
    assert_shard_close(example_trace, "fc.out", 0,
                       np.array([[5, 17], [17, 61]], np.float32), op="matmul")


def test_a_wrong_shard_fails_naming_tensor_rank_element_and_bound(
        example_trace):
    with pytest.raises(AssertionError) as e:
        assert_shard_close(example_trace, "fc.out", 1,
                           [[30, 70], [71, 174]], op="all_reduce")
    msg = str(e.value)
    assert msg.startswith("fc.out on rank 1 (event seq 4: collective "
                          "all_reduce, forward, step 0): element [1][0] is "
                          "71.0, the trace's 70.0: they differ by 1")
    assert "(1 of 4 elements outside)" in msg


def test_shape_and_missing_events_are_told(example_trace):
    with pytest.raises(AssertionError, match=r"shape \(4,\), but the "
                       r"trace's shard is \(2, 2\)"):
        assert_shard_close(example_trace, "fc.out", 0, [30, 70, 70, 174],
                           op="all_reduce")
    with pytest.raises(tpsim.UsageError, match="no event of fc.outt in the "
                       "forward of step 0 .its tensors there: fc.in, "
                       "fc.out"):
        assert_shard_close(example_trace, "fc.outt", 0, [[0]])
    with pytest.raises(tpsim.UsageError, match="rank 2 out of range"):
        assert_shard_close(example_trace, "fc.out", 2, [[0]])


def test_an_exact_value_allows_no_difference(example_trace):
    # Integers below 2^24: the trace's bound is 0 everywhere, so 1e-3 off
    # fails where the config's tolerance (1e-5 + 1e-5 x 176) would pass.
    ev = example_trace.event(5)
    assert (ev.tensor, ev.op) == ("fc.out", "add_bias")
    np.testing.assert_array_equal(example_trace.bound(ev, 0), np.zeros((2, 2)))
    with pytest.raises(AssertionError) as e:
        assert_shard_close(example_trace, "fc.out", 0,
                           [[31, 72], [71, 176.001]])
    assert str(e.value).startswith(
        "fc.out on rank 0 (event seq 5: compute add_bias, forward, step 0): "
        "element [1][1] is 176.001, the trace's 176.0: they differ by "
        "0.001, beyond the trace's bound 0 (1 of 4 elements outside)")


def test_a_rounded_value_is_held_to_its_bound():
    trace = tpsim.run(tpsim.Config.load(root_path(
        "fixtures", "train_dp2_tp2_mse", "config.json")))
    (ev,) = list(trace.events(phase="optimizer", op="all_reduce",
                              tensor="fc1.weight.grad"))
    for rank in range(len(ev.ranks)):
        b = trace.bound(ev, rank)
        assert b.shape == ev.ranks[rank].shape and (b > 0).all()
        want = ev.ranks[rank].values.astype(np.float64)
        # Within the bound everywhere: passes.
        assert_shard_close(trace, "fc1.weight.grad", rank, want + 0.5 * b,
                           phase="optimizer")
        off = want.copy()
        off[1, 2] += 3 * b[1, 2]
        with pytest.raises(AssertionError) as e:
            assert_shard_close(trace, "fc1.weight.grad", rank, off,
                               phase="optimizer")
        assert "element [1][2]" in str(e.value)
        assert "beyond the trace's bound %.3g" % b[1, 2] in str(e.value)
    # The backward's weight gradient is each dp rank's partial sum: no
    # bound, the tolerance, and the failure says why.
    (bw,) = list(trace.events(phase="backward", tensor="fc1.weight.grad"))
    with pytest.raises(AssertionError, match="the config's tolerance .*"
                       "it is partial"):
        assert_shard_close(trace, "fc1.weight.grad", 0,
                           bw.ranks[0].values + 1, phase="backward")


example_once = tpsim.testing.trace_fixture(
    root_path("fixtures", "seed_2x4_rowwise_after_reduce", "config.json"),
    threads=1)


def test_trace_fixture_runs_the_config_once(example_once, request):
    assert example_once.result.match
    np.testing.assert_array_equal(example_once.result.output,
                                  [[31, 72], [71, 176]])
    # The session's one run: asking again gives the same trace.
    assert request.getfixturevalue("example_once") is example_once


def test_a_given_tolerance_is_slack_on_top_of_the_bound():
    # The 2x4 example's bound is 0 (integers): with "tolerance" given,
    # atol + rtol |value| of slack is allowed, as tpsim run allows it
    # (docs/config.md); without, nothing.
    path = root_path("fixtures", "seed_2x4_rowwise_after_reduce",
                     "config.json")
    import json
    with open(path) as f:
        d = json.load(f)
    d["tolerance"] = {"atol": 0.01}
    trace = tpsim.run(tpsim.Config.from_dict(d))
    bound, words = trace.shard_bound(trace.event(5), 0)
    np.testing.assert_allclose(bound, np.full((2, 2), 0.01), rtol=1e-6)
    assert words.startswith("the trace's bound + the config's tolerance")
    assert_shard_close(trace, "fc.out", 0, [[31, 72], [71, 176.005]])
    with pytest.raises(AssertionError):
        assert_shard_close(trace, "fc.out", 0, [[31, 72], [71, 176.02]])


def test_the_fallback_takes_the_dtype_s_default_tolerance():
    # A partial value has no bound: the fallback's rtol is bfloat16's
    # 1.6e-2 when a role is bfloat16, as tpsim run takes it.
    import json
    with open(root_path("fixtures", "train_dp2_tp2_mse",
                        "config.json")) as f:
        d = json.load(f)
    d["dtype"] = "bfloat16"
    trace = tpsim.run(tpsim.Config.from_dict(d))
    (bw,) = list(trace.events(phase="backward", tensor="fc1.weight.grad"))
    bound, words = trace.shard_bound(bw, 0)
    top = float(np.max(np.abs(bw.ranks[0].values)))
    assert bound == pytest.approx(1e-5 + 1.6e-2 * top)
    assert "rtol 0.016" in words
