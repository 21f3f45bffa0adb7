"""tpsim's Python API against the tpsim binary and the 2x4 example's
derivation by hand (fixtures/seed_2x4_rowwise_after_reduce/DERIVATION.md)."""
import json
import os

import numpy as np
import pytest

import tpsim
from conftest import EXAMPLE, cli, root_path


def test_run_writes_the_bytes_tpsim_run_writes(tmp_path):
    out = tmp_path / "t.json"
    code, _, _ = cli("run", os.path.join(EXAMPLE, "config.json"), "-o",
                     str(out))
    assert code == 0
    trace = tpsim.run(tpsim.Config.load(os.path.join(EXAMPLE, "config.json")),
                      threads=1)
    assert trace.text() == out.read_bytes()


def test_example_values_are_the_derivations(example_trace):
    # DERIVATION.md: each rank's partial X_i W_i^T, the all_reduce gives
    # [[30, 70], [70, 174]] on both ranks, and the bias once: [[31, 72],
    # [71, 176]].
    r = example_trace.result
    assert r.match is True
    assert r.max_abs_diff == 0
    assert r.loss == []
    np.testing.assert_array_equal(r.output, [[31, 72], [71, 176]])
    assert r.output.dtype == np.float32
    (ev,) = list(example_trace.events(op="all_reduce"))
    assert (ev.tensor, ev.kind, ev.phase, ev.step, ev.module) == \
        ("fc.out", "collective", "forward", 0, "fc")
    assert ev.placements == ["replicate"]
    assert ev.groups == [[0, 1]]
    assert ev.global_shape == (2, 2)
    # (n-1) c with n 2 and the whole 2x2 float32 buffer: 2 (n-1) 8 bytes.
    assert ev.bytes_per_rank == 16
    assert [s.rank for s in ev.ranks] == [0, 1]
    for s in ev.ranks:
        assert s.shape == (2, 2)
        assert s.values.dtype == np.float32
        np.testing.assert_array_equal(s.values, [[30, 70], [70, 174]])
    (w,) = list(example_trace.events(phase="setup", tensor="fc.weight"))
    assert w.step is None
    assert w.placements == ["shard(1)"]
    np.testing.assert_array_equal(w.ranks[0].values, [[1, 2], [5, 6]])
    np.testing.assert_array_equal(w.ranks[1].values, [[3, 4], [7, 8]])


def test_events_filter_by_every_key(example_trace):
    every = list(example_trace.events())
    assert [e.seq for e in every] == list(range(len(example_trace)))
    assert [e.seq for e in example_trace.events(step=0)] == \
        [e.seq for e in every if e.step == 0]
    assert [e.op for e in example_trace.events(kind="layout")] == \
        [e.op for e in every if e.kind == "layout"]
    assert list(example_trace.events(module="nothing")) == []
    assert list(example_trace.events(phase="backward")) == []


def test_training_result_is_the_traces(tmp_path):
    cfg = root_path("fixtures", "train_dp2_tp2_mse", "config.json")
    trace = tpsim.run(cfg)
    golden = json.load(open(root_path("tests", "golden",
                                      "train_dp2_tp2_mse.trace.json")))
    assert trace.result.loss == golden["result"]["loss"]
    assert list(trace.result.grads) == list(golden["result"]["grads"])
    for name, g in golden["result"]["grads"].items():
        np.testing.assert_array_equal(trace.result.grads[name],
                                      np.array(g["values"], np.float32))
    for name, p in golden["result"]["params_after"].items():
        np.testing.assert_array_equal(trace.result.params_after[name],
                                      np.array(p["values"], np.float32))
    with pytest.raises(KeyError, match="fc1.weight, fc1.bias"):
        trace.result.grads["fc3.weight"]


def test_load_trace_reads_a_golden():
    path = root_path("tests", "golden",
                     "seed_2x4_rowwise_after_reduce.trace.json")
    trace = tpsim.load_trace(path)
    assert trace.name == path
    assert trace.text() == open(path, "rb").read()
    assert trace.result.match is True
    assert trace.run_result is None


def test_config_error_is_the_cli_line(tmp_path):
    bad = {"tpsim": 1, "mesh": {"shape": [2], "dim_names": ["tp"]},
           "model": [{"name": "fc", "type": "linear", "in_features": 4,
                      "out_features": 2}],
           "plan": {"fc": "rowise"}, "input": {"shape": [2, 4]}}
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(bad))
    code, out, err = cli("run", str(path), "-o", str(tmp_path / "t.json"))
    assert code == 2 and out == b""
    with pytest.raises(tpsim.ConfigError) as e:
        tpsim.Config.from_dict(bad, name=str(path))
    assert "tpsim: " + str(e.value) + "\n" == err
    assert e.value.file == str(path)
    assert e.value.pointer == "/plan/fc"
    assert e.value.message.startswith('unknown style "rowise"')
    assert str(e.value) == "%s: /plan/fc: %s" % (path, e.value.message)
    with pytest.raises(tpsim.ConfigError) as e2:
        tpsim.Config.load(path)
    assert str(e2.value) == str(e.value)
    assert not (tmp_path / "t.json").exists()


def test_set_sets_the_configs_vars():
    cfg = tpsim.Config.load(root_path("examples", "comm_sweep",
                                      "config.json"))
    points = tpsim.comm(cfg, sweep={"hidden": [1024, 4096]})
    assert [p["vars"]["hidden"] for p in points] == [1024, 4096]
    assert cfg.set(hidden=4096).vars == {"hidden": 4096.0}
    with pytest.raises(tpsim.ConfigError) as e:
        cfg.set(hiden=3)
    assert e.value.pointer == "/vars"


def test_check_returns_the_mismatches(example_trace):
    fixture = json.load(open(os.path.join(EXAMPLE, "fixture.json")))
    assert example_trace.check(os.path.join(EXAMPLE, "fixture.json")) == []
    assert example_trace.check(fixture) == []
    fixture["params"]["fc.bias"]["values"] = [1, 3]
    (m,) = example_trace.check(fixture)
    assert (m.pointer, m.expected, m.got, m.seq) == \
        ("/params/fc.bias/values/1", "3", "2", None)
    with pytest.raises(tpsim.FixtureError):
        example_trace.check({"tolerance": {"atol": -1}})


def test_explain_picture_view_are_the_verbs_bytes(example_trace, tmp_path):
    path = tmp_path / "t.json"
    example_trace.save(path)
    for args, got in (
            (["explain", "--format", "md"],
             example_trace.explain(format="md")),
            (["explain"], example_trace.explain()),
            (["picture", "--tensor", "fc.weight"],
             example_trace.picture("fc.weight")),
            (["timeline"], example_trace.timeline()),
            (["view"], example_trace.view())):
        code, out, _ = cli(*(args[:1] + [str(path)] + args[1:]))
        assert code == 0, args
        assert got == out.decode("utf-8"), args


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_narrow_dtype_values_are_values_of_their_dtype(dtype):
    # Stored as float32 arrays of the dtype's values: each survives the
    # round trip through the dtype (bfloat16: the low 16 bits are 0).
    d = json.load(open(root_path("fixtures", "train_dp2_tp2_mse",
                                 "config.json")))
    d["dtype"] = dtype
    d["init"] = {"method": "uniform", "seed": 3}
    trace = tpsim.run(tpsim.Config.from_dict(d))
    seen = 0
    for ev in trace.events():
        assert ev.dtype in ("float32", dtype)
        for s in ev.ranks:
            v = s.values
            assert v.dtype == np.float32
            if ev.dtype == "bfloat16":
                assert not (v.view(np.uint32) & 0xFFFF).any(), ev
            elif ev.dtype == "float16":
                np.testing.assert_array_equal(
                    v.astype(np.float16).astype(np.float32), v)
            seen += v.size if ev.dtype == dtype else 0
    assert seen > 100
    for name in trace.result.params_after:
        p = trace.result.params_after[name]
        if dtype == "bfloat16":
            assert not (p.view(np.uint32) & 0xFFFF).any()
        else:
            np.testing.assert_array_equal(
                p.astype(np.float16).astype(np.float32), p)


def test_full_recompute_events_are_marked_and_results_unchanged():
    # One transformer block at tp 2 (docs/config.md, "Activation
    # recompute"): with "recompute": "full" its forward runs again in
    # backward, 20 events marked recompute, all in phase backward; the
    # loss and every parameter after the step are the same bytes.
    d = {"tpsim": 1, "mesh": {"shape": [2], "dim_names": ["tp"]},
         "model": [{"name": "b", "type": "transformer_block", "dim": 8,
                    "num_heads": 2}],
         "plan": {"b.attn.[qkv]": "colwise", "b.attn.o": "rowwise",
                  "b.mlp.fc1": "colwise", "b.mlp.fc2": "rowwise"},
         "input": {"shape": [2, 3, 8]}, "mode": "training"}
    plain = tpsim.run(tpsim.Config.from_dict(d, name="none.json"))
    d["recompute"] = "full"
    full = tpsim.run(tpsim.Config.from_dict(d, name="full.json"))
    marked = [ev for ev in full.events() if ev.recompute]
    assert len(marked) == 20
    assert {ev.phase for ev in marked} == {"backward"}
    assert not any(ev.recompute for ev in plain.events())
    assert full.result.match and plain.result.match
    assert full.result.loss == plain.result.loss
    for name in ("b.attn.q.weight", "b.mlp.fc2.weight"):
        a = [ev for ev in plain.events(phase="optimizer", tensor=name)]
        b = [ev for ev in full.events(phase="optimizer", tensor=name)]
        assert a and len(a) == len(b)
        for x, y in zip(a, b):
            for sx, sy in zip(x.ranks, y.ranks):
                assert sx.values.tobytes() == sy.values.tobytes()


def test_selective_recompute_marks_the_core_and_changes_no_byte():
    # The same block with "recompute": "selective": its attention keeps
    # no probabilities and runs its core again in backward, one event,
    # "b.attn.heads", marked recompute in phase backward, with the values
    # forward's core event had; the loss and the parameters after the
    # step are the bytes of the run without recompute.
    d = {"tpsim": 1, "mesh": {"shape": [2], "dim_names": ["tp"]},
         "model": [{"name": "b", "type": "transformer_block", "dim": 8,
                    "num_heads": 2}],
         "plan": {"b.attn.[qkv]": "colwise", "b.attn.o": "rowwise",
                  "b.mlp.fc1": "colwise", "b.mlp.fc2": "rowwise"},
         "input": {"shape": [2, 3, 8]}, "mode": "training"}
    plain = tpsim.run(tpsim.Config.from_dict(d, name="none.json"))
    d["recompute"] = "selective"
    sel = tpsim.run(tpsim.Config.from_dict(d, name="selective.json"))
    marked = [ev for ev in sel.events() if ev.recompute]
    assert [(ev.phase, ev.op, ev.tensor) for ev in marked] == [
        ("backward", "attention", "b.attn.heads")]
    core = list(sel.events(tensor="b.attn.heads"))
    assert [ev.phase for ev in core] == ["forward", "backward"]
    for sx, sy in zip(core[0].ranks, core[1].ranks):
        assert sx.values.tobytes() == sy.values.tobytes()
    assert sel.result.match and plain.result.match
    assert sel.result.loss == plain.result.loss
    for name in ("b.attn.q.weight", "b.attn.k.bias"):
        a = [ev for ev in plain.events(phase="optimizer", tensor=name)]
        b = [ev for ev in sel.events(phase="optimizer", tensor=name)]
        assert a and len(a) == len(b)
        for x, y in zip(a, b):
            for sx, sy in zip(x.ranks, y.ranks):
                assert sx.values.tobytes() == sy.values.tobytes()
