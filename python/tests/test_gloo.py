"""examples/python/gloo_check.py and gloo_mistake.py: real gloo
processes checked against tpsim's trace (docs/python.md, "Checking a
real run")."""
import multiprocessing.forkserver
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch.distributed as dist

from conftest import root_path

EXAMPLES = root_path("examples", "python")
sys.path.insert(0, EXAMPLES)
import gloo_check  # noqa: E402


def test_gloo_is_there():
    assert dist.is_available() and dist.is_gloo_available()


@pytest.mark.parametrize("world", [2, 4])
def test_every_rank_trains_as_tpsim_says(world, capsys):
    assert gloo_check.main(["--world", str(world), "--training",
                            "--timeout", "120"]) == 0
    out = capsys.readouterr().out.splitlines()
    # 3 weight shards, 2 matmul outputs, the relu, the all_reduce, the
    # output; 4 gradients and 4 updated shards: 16 tensors a rank.
    assert out[:world] == ["rank %d: tpsim: its 16 tensors are the trace's "
                           "shards" % r for r in range(world)]
    assert out[world].startswith("gloo_check: %d ranks trained one step as "
                                 "tpsim's trace says" % world)


def test_uneven_shards_are_tpsims_chunks(capsys):
    # 16 hidden features over 5 ranks: 4, 4, 4, 4 and an empty shard,
    # where torch.chunk gives 4 pieces.
    assert gloo_check.main(["--world", "5", "--training",
                            "--timeout", "120"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[4] == "rank 4: tpsim: its 16 tensors are the trace's shards"


@pytest.mark.parametrize("world", ["0", "17"])
def test_a_world_out_of_range_is_a_usage_error(world, capsys):
    with pytest.raises(SystemExit) as e:
        gloo_check.main(["--world", world])
    assert e.value.code == 2
    assert "--world: expected 1 to 16 processes, got %s" % world in \
        capsys.readouterr().err


def test_inference_checks_the_forward_only(capsys):
    assert gloo_check.main(["--world", "2", "--timeout", "120"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "rank 0: tpsim: its 8 tensors are the trace's shards"


def crashing_worker(rank, *args):
    if rank == 1:
        raise RuntimeError("rank 1 broke")
    time.sleep(60)


def hanging_worker(rank, *args):
    time.sleep(60)


def forkserver_children():
    """The processes the forkserver forked that are still there."""
    server = multiprocessing.forkserver._forkserver._forkserver_pid
    kids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                stat = f.read()
        except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
            continue
        # pid (comm) state ppid ...: comm may hold spaces.
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == server and state != "Z":
            kids.append(int(pid))
    return kids


# The crash must be reported whatever the machine's load: its ranks get
# 60 s to start (importing torch under a loaded sanitizer build took more
# than 3 s in CI) and report it well before; only the hang waits out its
# timeout, 3 s.
@pytest.mark.parametrize("worker, timeout, message", [
    (crashing_worker, 60, "RuntimeError: rank 1 broke"),
    (hanging_worker, 3, "the ranks did not finish in 3 s")])
def test_a_rank_that_crashes_or_hangs_is_trouble_and_leaves_nothing(
        worker, timeout, message):
    model, x, y = gloo_check.make_model()
    trace = gloo_check.simulate(model, x, y, 2, False)
    start = time.monotonic()
    matched, lines = gloo_check.run(2, {"t": trace}, timeout=timeout,
                                    worker=worker)
    assert time.monotonic() - start < timeout + 27
    assert matched is None
    assert message in lines[0]
    assert forkserver_children() == []


def run_script(name, *args, timeout=180):
    """An example as a script in a session of its own, so that a hang
    kills its ranks too: (exit code, stdout, stderr)."""
    p = subprocess.Popen([sys.executable, os.path.join(EXAMPLES, name)] +
                         list(args), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        pytest.fail("%s did not finish in %d s" % (name, timeout))
    return p.returncode, out.decode(), err.decode()


def test_the_bias_on_every_rank_fails_naming_tensor_rank_and_bias():
    code, out, err = run_script("gloo_mistake.py", "--world", "2",
                                "--timeout", "120")
    # It exits 0: the check caught the mistake on every rank, as it must.
    assert code == 0, err
    assert out == ""
    model, _, _ = gloo_check.make_model()
    bias = model[2].bias.detach().numpy()
    lines = err.splitlines()
    for rank in range(2):
        # The first tensor that differs is the all_reduce's result: the
        # sum of 2 partial sums that each added the bias, 2 b too much.
        m = re.fullmatch(
            r"rank %d: correct: 2\.out on rank %d \(event seq \d+: "
            r"collective all_reduce, forward, step 0\): element "
            r"\[(\d+)\]\[(\d+)\] is (\S+), the trace's (\S+): they differ "
            r"by (\S+), beyond .*" % (rank, rank), lines[2 * rank])
        assert m, lines[2 * rank]
        j = int(m.group(2))
        got, want, diff = (float(m.group(k)) for k in (3, 4, 5))
        assert got - want == pytest.approx(2 * bias[j], rel=1e-5)
        assert diff == pytest.approx(2 * abs(bias[j]), rel=1e-2)
        # It is tpsim's own injected mistake, tensor for tensor.
        assert lines[2 * rank + 1] == (
            "rank %d: bias_every_rank: its 8 tensors are the trace's shards"
            % rank)
    assert lines[4].startswith("tpsim's diagnosis of the trace that "
                               "matches: output is larger than the "
                               "reference by exactly (tp - 1) x bias")
    assert len(lines) == 5

