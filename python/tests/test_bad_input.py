"""Bad input through the Python API raises the documented exceptions and
never crashes the interpreter: every row of the bad-config table
(tests/config/test_config.c, dumped by test_config as for
tests/schema_check.py), and the fuzz regression corpus and mutated
traces through load_trace."""
import glob
import json
import os
import random
import subprocess

import numpy as np
import pytest

import tpsim
from conftest import EXAMPLE, root_path


def dumped_rows(tmp_path_factory):
    exe = os.environ.get("TPSIM_TEST_CONFIG")
    if not exe:
        pytest.fail("TPSIM_TEST_CONFIG is not set: run the tests with "
                    "meson test")
    d = tmp_path_factory.mktemp("bad")
    configs, texts = d / "configs.jsonl", d / "json.jsonl"
    subprocess.run([exe], check=True, env=dict(
        os.environ, TPSIM_DUMP_BAD_CONFIGS=str(configs),
        TPSIM_DUMP_BAD_JSON=str(texts), CK_RUN_CASE="dump",
        CK_VERBOSITY="silent"))
    return ([json.loads(line) for line in open(configs)],
            [json.loads(line) for line in open(texts)])


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    return dumped_rows(tmp_path_factory)


def assert_config_error(e, message):
    assert str(e) == message
    assert e.file == "cfg.json"
    where = e.pointer if e.pointer else "(root)"
    assert message.startswith("cfg.json: ")
    assert message.endswith(": " + e.message)
    if "\\u" not in message:  # a pointer with control characters is escaped
        assert message == "cfg.json: %s: %s" % (where, e.message)


def test_every_bad_config_row_through_from_dict(rows):
    configs, _ = rows
    assert len(configs) > 300
    for row in configs:
        d = json.loads(row["config"])
        with pytest.raises(tpsim.ConfigError) as e:
            tpsim.Config.from_dict(d, name="cfg.json")
        assert_config_error(e.value, row["message"])


def test_every_bad_json_row_through_from_json_or_from_dict(rows):
    _, texts = rows
    assert len(texts) > 5
    for row in texts:
        with pytest.raises(tpsim.ConfigError) as e:
            tpsim.Config.from_json(row["text"], name="cfg.json")
        assert_config_error(e.value, row["message"])
        # A row a dict can hold as it is (null): from_dict says the same.
        try:
            d = json.loads(row["text"])
        except ValueError:
            continue
        if json.dumps(d, separators=(",", ":")) == row["text"]:
            with pytest.raises(tpsim.ConfigError) as e:
                tpsim.Config.from_dict(d, name="cfg.json")
            assert_config_error(e.value, row["message"])


def base_config():
    return json.load(open(os.path.join(EXAMPLE, "config.json")))


@pytest.mark.parametrize("value, pointer, words", [
    (float("nan"), "/init/seed", "expected a number, got NaN"),
    (float("inf"), "/init/seed", "got a number out of range"),
    (np.float32("-inf"), "/init/seed", "got a number out of range"),
])
def test_non_finite_numbers_name_their_pointer(value, pointer, words):
    d = base_config()
    d["init"]["seed"] = value
    with pytest.raises(tpsim.ConfigError) as e:
        tpsim.Config.from_dict(d, name="cfg.json")
    assert e.value.pointer == pointer
    assert words in e.value.message


def test_numpy_params_are_lists():
    d = base_config()
    d["params"] = {"fc.bias": np.array([0.5, -2], np.float32)}
    trace = tpsim.run(tpsim.Config.from_dict(d))
    np.testing.assert_array_equal(trace.result.output,
                                  [[30.5, 68], [70.5, 172]])


def test_what_json_cannot_hold_is_a_type_error():
    with pytest.raises(TypeError, match="a key must be a string"):
        tpsim.Config.from_dict({1: 2})
    with pytest.raises(TypeError, match="/tpsim: object is not JSON"):
        tpsim.Config.from_dict({"tpsim": object()})
    with pytest.raises(TypeError):
        tpsim.run(1)


def test_set_refuses_what_is_not_a_number():
    cfg = tpsim.Config.load(root_path("examples", "comm_sweep",
                                      "config.json"))
    for bad in ("4096", None, True):
        with pytest.raises(tpsim.ConfigError, match="/vars/hidden"):
            cfg.set(hidden=bad)
    with pytest.raises(tpsim.ConfigError):
        cfg.set(hidden=float("nan"))


def test_run_options_out_of_range_are_usage_errors():
    for kw in ({"threads": 0}, {"threads": 257}, {"threads": 1.5},
               {"max_memory": -1}, {"max_trace": 0}):
        with pytest.raises(tpsim.UsageError):
            tpsim.run(os.path.join(EXAMPLE, "config.json"), **kw)
    with pytest.raises(tpsim.LimitError, match="memory"):
        tpsim.run(os.path.join(EXAMPLE, "config.json"), max_memory=16)


def test_missing_files_are_file_errors(tmp_path):
    with pytest.raises(tpsim.FileError) as e:
        tpsim.Config.load(tmp_path / "none.json")
    assert isinstance(e.value, OSError) and e.value.errno is None
    assert e.value.strerror == str(e.value)
    assert str(tmp_path / "none.json") in str(e.value)
    with pytest.raises(tpsim.FileError):
        tpsim.load_trace(tmp_path / "none.json")
    with pytest.raises(tpsim.FileError):
        tpsim.load_trace(tmp_path)


def corpus():
    files = sorted(glob.glob(root_path("tests", "fuzz", "regression", "*",
                                       "*")))
    return [f for f in files if os.path.isfile(f)]


def test_fuzz_regression_corpus_through_load_trace_and_load():
    files = corpus()
    assert files, "tests/fuzz/regression is empty"
    for path in files:
        try:
            tpsim.load_trace(path)
        except tpsim.TraceError as e:
            assert e.file == path and e.pointer is not None
        try:
            tpsim.Config.load(path)
        except tpsim.ConfigError as e:
            assert e.file == path


def test_mutated_traces_are_trace_errors_or_traces(tmp_path):
    """Truncations and byte edits of a golden trace, seeded: each loads
    or raises TraceError (naming the file and a pointer) and, when it
    loads, its events, result and verbs work."""
    src = open(root_path("tests", "golden",
                         "train_dp2_tp2_mse.trace.json"), "rb").read()
    rng = random.Random(18)
    mutants = [src[:n] for n in sorted(rng.sample(range(len(src)), 60))]
    for _ in range(240):
        b = bytearray(src)
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] = rng.choice(b'{}[]",:0-9.eE \x00\xff')
        mutants.append(bytes(b))
    loaded = 0
    path = tmp_path / "t.json"
    for m in mutants:
        path.write_bytes(m)
        try:
            t = tpsim.load_trace(path)
        except tpsim.TraceError as e:
            assert e.file == str(path)
            assert e.pointer is not None
            assert str(e).startswith(str(path) + ": ")
            continue
        loaded += 1
        for ev in t.events():
            for s in ev.ranks:
                assert s.values is None or s.values.shape == s.shape
        t.result.match
        t.explain()
        t.view()
    assert loaded < len(mutants)
