"""tpsim.testing.assert_shard_close on the 2x4 example, whose values are
derived by hand (fixtures/seed_2x4_rowwise_after_reduce/DERIVATION.md)."""
import numpy as np
import pytest

import tpsim
from tpsim.testing import assert_shard_close


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
