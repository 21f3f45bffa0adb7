"""pytest helpers: is a real run's tensor the shard tpsim predicts?

    from tpsim.testing import assert_shard_close
    assert_shard_close(trace, "fc1.out", rank, my_local_output)

docs/python.md, "Testing a real run", says how the bound is chosen.
"""
import numpy as np

from ._errors import UsageError
from ._ffi import lib


def _as_array(actual):
    """A numpy array of a numpy array, a torch tensor (detached, on the
    CPU) or nested lists."""
    detach = getattr(actual, "detach", None)
    if detach is not None:
        actual = detach().cpu().numpy()
    return np.asarray(actual)


def trace_fixture(config, scope="session", **run_options):
    """A pytest fixture that runs config (a tpsim.Config, a dict or a
    path) once per scope ("session": once for every test that asks) and
    gives its Trace:

        example = tpsim.testing.trace_fixture("config.json", threads=1)

        def test_output(example):
            assert example.result.match
    """
    import pytest

    from ._config import run

    @pytest.fixture(scope=scope)
    def _trace():
        return run(config, **run_options)

    return _trace


def _usage(msg):
    return UsageError(msg, lib.TPSIM_ERR_USAGE)


def find_event(trace, tensor, step=0, phase="forward", op=None, seq=None):
    """The event assert_shard_close compares with: the one with seq
    seq, or else the last event of tensor in that step and phase (op
    given: the last with that op). Raises UsageError naming the tensors
    that are there when there is none."""
    if seq is not None:
        ev = trace.event(seq)
        if ev.tensor != tensor:
            raise _usage("event seq %d is of %s, not %s"
                         % (seq, ev.tensor, tensor))
        return ev
    if phase == "setup":
        step = None
    found = None
    names = []
    for ev in trace.events(step=step, phase=phase):
        if ev.tensor not in names:
            names.append(ev.tensor)
        if ev.tensor == tensor and (op is None or ev.op == op):
            found = ev
    if found is None:
        where = "%s%s" % (phase, "" if step is None else " of step %d" % step)
        raise _usage("%s: no event of %s%s in the %s (its tensors there: %s)"
                     % (trace.name, tensor,
                        "" if op is None else " by %s" % op, where,
                        ", ".join(names) or "none"))
    return found


def _index(flat, shape):
    return "[%s]" % "][".join(str(int(i)) for i in np.unravel_index(flat,
                                                                    shape))


def assert_shard_close(trace, tensor, rank, actual, step=0, phase="forward",
                       op=None, seq=None):
    """Asserts that actual (numpy, torch or lists) is rank's shard of
    tensor in trace, at the event find_event picks, element by element
    within the bound the trace gives that element (Trace.shard_bound:
    twice its error bound, what computing the same sums in another
    order can explain; 0 where the value is exact), or, where the trace
    has no bound for the tensor, within its config's tolerance
    (atol + rtol x the shard's largest magnitude).

    Fails with an AssertionError that names the tensor, the rank, the
    event, the worst element, the values there, their difference and
    the bound."""
    ev = find_event(trace, tensor, step, phase, op, seq)
    if not 0 <= rank < len(ev.ranks):
        raise _usage("%s: rank %r out of range: event seq %d has ranks 0 "
                     "to %d" % (trace.name, rank, ev.seq, len(ev.ranks) - 1))
    shard = ev.ranks[rank]
    if shard.values is None:
        raise _usage("%s has no values to compare with (a summary, none or "
                     "symbolic trace)" % trace.name)
    got = _as_array(actual)
    where = "%s on rank %d (event seq %d: %s %s, %s%s)" % (
        tensor, rank, ev.seq, ev.kind, ev.op, ev.phase,
        "" if ev.step is None else ", step %d" % ev.step)
    if got.shape != shard.shape:
        raise AssertionError("%s: shape %s, but the trace's shard is %s"
                             % (where, tuple(got.shape), shard.shape))
    want = shard.values.astype(np.float64)
    got = got.astype(np.float64)
    bound, how = trace.shard_bound(ev, rank)
    diff = np.abs(got - want)
    # NaN compares false: a NaN element is outside whatever the bound.
    outside = ~(diff <= bound)
    if not outside.any():
        return
    # The worst element: the largest difference beyond its bound.
    excess = np.where(outside, np.nan_to_num(diff - bound, nan=np.inf),
                      -np.inf)
    worst = int(np.argmax(excess))
    at = _index(worst, shard.shape)
    b = np.broadcast_to(bound, shard.shape).flat[worst]
    raise AssertionError(
        "%s: element %s is %r, the trace's %r: they differ by %.3g, "
        "beyond %s %.3g (%d of %d elements outside)"
        % (where, at, float(got.flat[worst]), float(want.flat[worst]),
           diff.flat[worst], how, b, int(outside.sum()), outside.size))
