#!/usr/bin/python3
"""Checks a real torch.distributed run against tpsim's trace.

A Megatron-style MLP, written by hand in torch: a ColumnParallelLinear
(gather_output=False), ReLU on each rank's columns, a RowParallelLinear
(input_is_parallel=True) whose bias is added once, after the all_reduce.
It runs on WORLD real processes (gloo, CPU), each holding its shard of
the weights of one nn.Sequential; tpsim simulates the same module under
{"0": "colwise", "2": "rowwise"} (config_from_module, so both start from
the same weights), and every rank asserts with tpsim.testing that its
weight shards, its matmul outputs, the all_reduce's result, its output
and, with --training (one SGD step on an MSE loss), its weight
gradients and updated shards are the shards tpsim's trace holds.

    /usr/bin/python3 examples/python/gloo_check.py --world 2 --training

Exit status: 0 when every rank's tensors are tpsim's, 1 when one is not
(each failing rank's message on stderr), 2 on trouble (a process that
died or hung past --timeout). gloo_mistake.py runs it on torch code with
a classic mistake. docs/python.md, "Checking a real run", explains it.
"""
import argparse
import datetime
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn

import tpsim
from tpsim.testing import assert_shard_close
from tpsim.torch import config_from_module

FEATURES, HIDDEN, BATCH = 8, 16, 4
LR = 0.1


def make_model(seed=0):
    """The module, its input and the training target."""
    torch.manual_seed(seed)
    # ReLU, not GELU: torch's float32 gelu kernel is a few ulps from
    # tpsim's, beyond the bound, which covers reordered sums only
    # (docs/python.md, "Checking a real run").
    model = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(),
                          nn.Linear(HIDDEN, FEATURES))
    return model, torch.randn(BATCH, FEATURES), torch.randn(BATCH, FEATURES)


def simulate(model, x, y, world, training, inject=None):
    """tpsim's trace of the module on a tp mesh of world ranks: Megatron's
    plan, the bias of the rowwise linear added after the all_reduce."""
    kw = {}
    if training:
        kw = dict(loss=nn.MSELoss(), target=y, steps=1,
                  optimizer=torch.optim.SGD(model.parameters(), lr=LR))
    if inject:
        kw["inject"] = [inject]
    config = config_from_module(model, {"0": "colwise", "2": "rowwise"},
                                (world,), ("tp",), input=x, **kw)
    return tpsim.run(tpsim.Config.from_dict(config, name="gloo_check"))


class CopyToTP(torch.autograd.Function):
    """Megatron's f: the identity forward, an all_reduce of the input's
    gradient backward."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad)
        return grad


class ReduceFromTP(torch.autograd.Function):
    """Megatron's g: an all_reduce forward, the identity backward."""

    @staticmethod
    def forward(ctx, x):
        x = x.clone()
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


def megatron_mlp(model, x, y, rank, world, training, mistake):
    """Runs this rank's part of the MLP; returns what it saw, each as
    (tensor, phase, op, value) in tpsim's names (docs/trace.md): op None
    is the tensor's last event in that phase."""
    fc1, fc2 = model[0], model[2]

    def shard(t, dim):
        # torch.chunk's rule, with DTensor's empty trailing shards (16
        # over 5: 4, 4, 4, 4, 0) where chunk would give fewer pieces.
        n = t.shape[dim]
        size = -(-n // world)
        start = min(rank * size, n)
        piece = t.detach().narrow(dim, start, min(size, n - start))
        return piece.clone().requires_grad_()

    w1, b1 = shard(fc1.weight, 0), shard(fc1.bias, 0)  # (hidden/tp, in)
    w2 = shard(fc2.weight, 1)  # (out, hidden/tp)
    b2 = fc2.bias.detach().clone().requires_grad_()  # replicated
    seen = []

    def see(tensor, phase, op, value):
        seen.append((tensor, phase, op, value.detach().clone()))

    see("0.weight", "setup", None, w1)
    see("0.bias", "setup", None, b1)
    see("2.weight", "setup", None, w2)
    # ColumnParallelLinear: Y_i = X W_i^T + b_i, no communication.
    h = F.linear(CopyToTP.apply(x), w1)
    see("0.out", "forward", "matmul", h)
    a = F.relu(h + b1)
    see("1.out", "forward", "relu", a)
    # RowParallelLinear: partial sums X_i W_i^T, all-reduced.
    p = F.linear(a, w2)
    see("2.out", "forward", "matmul", p)
    if mistake == "bias_every_rank":
        p = p + b2
    out = ReduceFromTP.apply(p)
    see("2.out", "forward", "all_reduce", out)
    if mistake != "bias_every_rank":
        out = out + b2  # once, after the reduction
    see("2.out", "forward", None, out)
    if training:
        F.mse_loss(out, y).backward()
        for name, param in (("0.weight", w1), ("0.bias", b1),
                            ("2.weight", w2), ("2.bias", b2)):
            see(name + ".grad", "backward", None, param.grad)
        with torch.no_grad():
            for name, param in (("0.weight", w1), ("0.bias", b1),
                                ("2.weight", w2), ("2.bias", b2)):
                param -= LR * param.grad
                see(name, "optimizer", None, param)
    return seen


def worker(rank, world, tmp, training, mistake, names, timeout):
    """One rank: runs the MLP, then checks what it saw against each trace
    named in names. Writes a line per trace to tmp/rank<N>.txt, "match"
    or "differs" and what it found: a mismatch is an answer, not a
    crash, so that every rank reports."""
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method="file://" + os.path.join(tmp, "store"),
        rank=rank, world_size=world,
        timeout=datetime.timedelta(seconds=timeout))
    try:
        saved = torch.load(os.path.join(tmp, "inputs.pt"))
        model, _, _ = make_model()
        model.load_state_dict(saved["model"])
        seen = megatron_mlp(model, saved["x"], saved["y"], rank, world,
                            training, mistake)
    finally:
        dist.destroy_process_group()
    lines = []
    for name in names:
        trace = tpsim.load_trace(os.path.join(tmp, name + ".json"))
        try:
            for tensor, phase, op, value in seen:
                assert_shard_close(trace, tensor, rank, value, phase=phase,
                                   op=op)
        except AssertionError as e:
            lines.append("differs\trank %d: %s: %s" % (rank, name, e))
        else:
            lines.append("match\trank %d: %s: its %d tensors are the "
                         "trace's shards" % (rank, name, len(seen)))
    with open(os.path.join(tmp, "rank%d.txt" % rank), "w") as f:
        f.write("\n".join(lines) + "\n")


def run(world, traces, training=False, mistake=None, timeout=60.0,
        worker=worker):
    """Spawns world processes of the MLP (worker) and checks each rank
    against each of traces ({name: tpsim trace}). Returns ({name: whether
    every rank matched it}, the ranks' lines, rank by rank), or (None,
    [what went wrong]) when a rank crashed or was still running after
    timeout seconds; either way no rank is left running."""
    model, x, y = make_model()
    with tempfile.TemporaryDirectory(prefix="gloo_check.") as tmp:
        for name, trace in traces.items():
            trace.save(os.path.join(tmp, name + ".json"))
        torch.save({"model": model.state_dict(), "x": x, "y": y},
                   os.path.join(tmp, "inputs.pt"))
        # A fresh server process imports torch once and forks the ranks
        # from it: spawn would import torch in every rank, and fork
        # from this process would copy its OpenMP threads' state.
        mp.set_forkserver_preload(["torch", "tpsim.torch"])
        ctx = mp.start_processes(
            worker, args=(world, tmp, training, mistake, list(traces),
                          timeout),
            nprocs=world, join=False, start_method="forkserver")
        trouble = None
        deadline = time.monotonic() + timeout
        try:
            while not ctx.join(timeout=0.5):
                if time.monotonic() > deadline:
                    trouble = "the ranks did not finish in %g s" % timeout
                    break
        except (mp.ProcessRaisedException,
                mp.ProcessExitedException) as e:
            # A rank crashed: join stopped the others.
            trouble = str(e).strip()
        finally:
            # A rank left behind by a timeout ends here.
            for p in ctx.processes:
                if p.is_alive():
                    p.terminate()
                p.join()
        if trouble is not None:
            return None, [trouble]
        matched = dict.fromkeys(traces, True)
        lines = []
        for rank in range(world):
            with open(os.path.join(tmp, "rank%d.txt" % rank)) as f:
                for name, line in zip(traces, f.read().splitlines()):
                    verdict, text = line.split("\t", 1)
                    matched[name] = matched[name] and verdict == "match"
                    lines.append(text)
    return matched, lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--world", type=int, default=2,
                    help="processes, the tp size (default 2)")
    ap.add_argument("--training", action="store_true",
                    help="one SGD step: check gradients and the update too")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds before a hung run is stopped (default 60)")
    args = ap.parse_args(argv)
    if not 1 <= args.world <= 16:
        ap.error("--world: expected 1 to 16 processes, got %d" % args.world)
    start = time.monotonic()
    model, x, y = make_model()
    trace = simulate(model, x, y, args.world, args.training)
    matched, lines = run(args.world, {"tpsim": trace}, args.training,
                         timeout=args.timeout)
    if matched is None:
        print("gloo_check: %s" % lines[0], file=sys.stderr)
        return 2
    for line in lines:
        print(line, file=sys.stdout if matched["tpsim"] else sys.stderr)
    if not matched["tpsim"]:
        return 1
    print("gloo_check: %d ranks %s as tpsim's trace says (%.1f s)"
          % (args.world, "trained one step" if args.training else "ran",
             time.monotonic() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
