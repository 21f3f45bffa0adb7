#!/usr/bin/env python3
"""Out of memory at every allocation point (docs/reliability.md).

  oom_sweep.py TPSIM SOURCE_ROOT [--every K]

TPSIM is the fault-injection build (meson -Dfault_injection=true, with
address,undefined sanitizers so LeakSanitizer sees leaks). For each case (a
`tpsim run` of a config, or a `tpsim check`), the allocations of one clean
run are counted (TPSIM_COUNT_ALLOC); then the case runs once per N, with
the Nth allocation failing (TPSIM_FAIL_ALLOC=N), and must

  - exit 2 with "out of memory" in its one-line message, leave no output
    file and no temporary file, and report no leak; or
  - where tpsim has a fallback for that allocation (the GEMM's packing
    buffer: the naive loop sums in the same order), exit 0 with an output
    byte-identical to the clean run's.

Anything else (another exit status, a sanitizer report, a crash, a partial
or different output) fails the sweep, naming N and the case. --every K
tries every Kth N only (a quicker pass); the default is every N.
"""
import os
import subprocess
import sys
import tempfile

CASES = [
    # (name, config, verb): run cases write a trace; check reads one.
    ("inference", "fixtures/seed_2x4_rowwise_after_reduce/config.json", "run"),
    ("training", "fixtures/train_dp2_tp2_mse/config.json", "run"),
    ("mesh_2d", "fixtures/mesh_2d_dp_tp/config.json", "run"),
    ("transformer_block", "tests/oom/transformer_block.json", "run"),
    ("check", "fixtures/seed_2x4_colwise_gather/config.json", "check"),
]


def run(tpsim, root, args, env_extra):
    env = dict(os.environ)
    env.update(env_extra)
    env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=0:exitcode=99"
    env["UBSAN_OPTIONS"] = "halt_on_error=1:exitcode=98"
    p = subprocess.run([tpsim] + args, cwd=root, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stderr.decode(errors="replace")


def sweep(tpsim, root, name, config, verb, every, tmp):
    out = os.path.join(tmp, "out.json")
    clean = os.path.join(tmp, "clean.json")
    count_file = os.path.join(tmp, "count")
    fixture = os.path.join(os.path.dirname(config), "fixture.json")
    base = ["run", config, "-o", clean, "--threads", "1"]
    rc, err = run(tpsim, root, base, {})
    if rc != 0:
        return ["%s: the clean run failed (%d): %s" % (name, rc, err)]
    if verb == "run":
        args = ["run", config, "-o", out, "--threads", "1"]
    else:
        args = ["check", clean, fixture]
    for f in (count_file,):
        if os.path.exists(f):
            os.remove(f)
    rc, err = run(tpsim, root, args, {"TPSIM_COUNT_ALLOC": count_file})
    if rc != 0:
        return ["%s: the counting run failed (%d): %s" % (name, rc, err)]
    with open(count_file) as f:
        total = int(f.read())
    with open(clean, "rb") as f:
        clean_bytes = f.read()
    failures = []
    fallbacks = 0
    for n in range(1, total + 1, every):
        if os.path.exists(out):
            os.remove(out)
        rc, err = run(tpsim, root, args, {"TPSIM_FAIL_ALLOC": str(n)})
        stray = [f for f in os.listdir(tmp)
                 if f not in ("clean.json", "count", "out.json")]
        what = "%s: allocation %d of %d" % (name, n, total)
        if rc == 2 and "out of memory" in err and len(err.splitlines()) == 1:
            if os.path.exists(out):
                failures.append("%s: exit 2 but %s was written" % (what, out))
        elif rc == 0 and verb == "run":
            with open(out, "rb") as f:
                if f.read() != clean_bytes:
                    failures.append("%s: exit 0 with a different trace"
                                    % what)
            fallbacks += 1
        elif rc == 0 and verb == "check":
            fallbacks += 1
        else:
            failures.append("%s: exit %d: %s" % (what, rc,
                                                  err.strip()[:600]))
        if stray:
            failures.append("%s: left %s" % (what, stray))
            for f in stray:
                os.remove(os.path.join(tmp, f))
        if len(failures) > 20:
            break
    print("%s: %d allocation points, %d tried, %d recovered by a fallback"
          % (name, total, len(range(1, total + 1, every)), fallbacks))
    return failures


def main():
    tpsim, root = sys.argv[1], sys.argv[2]
    every = 1
    if len(sys.argv) > 4 and sys.argv[3] == "--every":
        every = int(sys.argv[4])
    failures = []
    for name, config, verb in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            failures += sweep(tpsim, root, name, config, verb, every, tmp)
    for f in failures:
        print(f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
