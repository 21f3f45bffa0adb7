#!/usr/bin/env python3
"""torchtitan's Llama 3 tensor-parallel plan (apply_tp in
torchtitan/models/llama3/infra/parallelize.py), line by line as a tpsim
plan, run on the two-layer tiny LLaMA of config.json at tp 1 to 4.

torchtitan's module names are on the left of each comment; tpsim's
transformer_block names its parts ln1, attn.{q,k,v,o}, ln2 and
mlp.{w1,w3,w2} (docs/transformer.md). PyTorch's Shard(1) is tpsim's
shard(1): the sequence dim of (batch, seq, dim) activations.

    PYTHONPATH=python TPSIM_LIBRARY=build/src/libtpsim.so \\
        /usr/bin/python3 examples/llama3_tiny/torchtitan_plan.py
"""
import argparse
import json
import os
import sys

import tpsim

HERE = os.path.dirname(os.path.abspath(__file__))

TORCHTITAN_PLAN = {
    # "tok_embeddings": RowwiseParallel(input_layouts=Replicate(),
    #                                   output_layouts=Shard(1))
    # an embedding's rows are its vocabulary: tpsim's "vocab" style,
    # its output reduce-scattered onto sequence shards.
    "tok_embeddings": {"style": "vocab", "output": "shard(1)"},
    # "attention_norm": SequenceParallel()
    "layers.*.ln1": "sequence",
    # "attention": PrepareModuleInput(input_layouts=(Shard(1), ...),
    #                                 desired_input_layouts=(Replicate(), ...))
    # is what tpsim's attention does with a sequence-sharded input: one
    # all_gather before q, k and v, which are then plain colwise:
    # "attention.wq", "attention.wk", "attention.wv": ColwiseParallel()
    "layers.*.attn.[qkv]": "colwise",
    # "attention.wo": RowwiseParallel(output_layouts=Shard(1))
    "layers.*.attn.o": {"style": "rowwise", "output": "shard(1)"},
    # "ffn_norm": SequenceParallel()
    "layers.*.ln2": "sequence",
    # "feed_forward": PrepareModuleInput(input_layouts=(Shard(1),),
    #                                    desired_input_layouts=(Replicate(),))
    # is the gather the SwiGLU product's two branches share, then
    # "feed_forward.w1", "feed_forward.w3": ColwiseParallel()
    "layers.*.mlp.w[13]": "colwise",
    # "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1))
    "layers.*.mlp.w2": {"style": "rowwise", "output": "shard(1)"},
    # "norm": SequenceParallel()
    "norm": "sequence",
    # "output": ColwiseParallel(input_layouts=Shard(1),
    #                           output_layouts=Shard(-1))  # loss_parallel
    # with "loss_parallel": true in the config (torchtitan's default).
    "output": {"style": "colwise", "input": "shard(1)"},
}


def config_with_torchtitan_plan(tp):
    """config.json with torchtitan's plan in place of its own, at tp."""
    with open(os.path.join(HERE, "config.json")) as f:
        d = json.load(f)
    d["plan"] = TORCHTITAN_PLAN
    # torchtitan's autograd (DTensor's) keeps the input of wq, wk, wv,
    # w1 and w3 as the matmul read it, all-gathered; Megatron, tpsim's
    # default, keeps the sequence shard and gathers it again in backward
    # (docs/config.md, "Sequence parallel: what backward keeps").
    d["sequence_parallel_save"] = "gathered"
    return tpsim.Config.from_dict(d, name="torchtitan_plan.py").set(tp=tp)


def block_collectives(trace, block="layers.0."):
    """{(phase, op): count} of the collectives of one block's modules in
    the first training step."""
    counts = {}
    for ev in trace.events(step=0, kind="collective"):
        if ev.module.startswith(block):
            key = (ev.phase, ev.op)
            counts[key] = counts.get(key, 0) + 1
    return counts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tp", type=int, nargs="+", default=[1, 2, 3, 4])
    args = ap.parse_args(argv)
    ok = True
    for tp in args.tp:
        trace = tpsim.run(config_with_torchtitan_plan(tp))
        counts = block_collectives(trace)
        print("tp %d: %s; one block's collectives: %s" % (
            tp, trace.run_result.verdict,
            ", ".join("%s %s %d" % (p, o, n)
                      for (p, o), n in sorted(counts.items())) or "none"))
        ok = ok and trace.result.match
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
