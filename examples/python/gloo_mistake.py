#!/usr/bin/python3
"""gloo_check.py's MLP with a classic mistake in the torch code: the
RowParallelLinear adds its bias on every rank, before the all_reduce
(seed 000's pitfall 2), so the output holds tp copies of it.

Each rank checks what it computed against two tpsim traces of the same
module: the correct code's, which the assertion shows it is not, naming
the tensor, the rank, the worst element and the bound, and the trace of
tpsim's own "inject": ["bias_every_rank"] (docs/config.md, "Mistakes"),
which it is, tensor for tensor; tpsim's diagnosis then names the mistake.

    /usr/bin/python3 examples/python/gloo_mistake.py --world 2

Exit status 0 when the example shows what it is for: every rank differs
from the correct trace and equals the injected one. 1 when not (the
check missed the mistake), 2 on trouble (a rank that died or hung).
"""
import argparse
import sys

import gloo_check


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--world", type=int, default=2,
                    help="processes, the tp size (default 2)")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds before a hung run is stopped (default 60)")
    args = ap.parse_args(argv)
    model, x, y = gloo_check.make_model()
    traces = {
        "correct": gloo_check.simulate(model, x, y, args.world, False),
        "bias_every_rank": gloo_check.simulate(model, x, y, args.world,
                                               False,
                                               inject="bias_every_rank")}
    matched, lines = gloo_check.run(args.world, traces,
                                    mistake="bias_every_rank",
                                    timeout=args.timeout)
    if matched is None:
        print("gloo_mistake: %s" % lines[0], file=sys.stderr)
        return 2
    for line in lines:
        print(line, file=sys.stderr)
    if matched["correct"]:
        print("gloo_mistake: the mistake went unnoticed", file=sys.stderr)
        return 1
    if not matched["bias_every_rank"]:
        print("gloo_mistake: the run is not tpsim's bias_every_rank either",
              file=sys.stderr)
        return 1
    print("tpsim's diagnosis of the trace that matches: %s"
          % traces["bias_every_rank"].result.diagnosis, file=sys.stderr)
    return 0

if __name__ == "__main__":
    sys.exit(main())
