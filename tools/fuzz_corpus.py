#!/usr/bin/env python3
"""The fuzz harnesses' seed corpus (tests/fuzz/README.md), made from the
repository, so it is reproducible and nothing generated is committed.

  fuzz_corpus.py SOURCE_ROOT TPSIM TEST_CONFIG OUTDIR

OUTDIR/config: every shipped config (fixtures/, examples/, tools/bench/,
  tests/golden/) and every JSON row of the bad-config table
  (tests/config/test_config.c, dumped with TPSIM_DUMP_BAD_CONFIGS).
OUTDIR/check: every fixture (fixtures/*/fixture.json) and the traces below
  that are at most MAX_BYTES.
OUTDIR/trace: the traces TPSIM writes for every shipped config that runs
  in a second, each at most MAX_BYTES (values full as the config says,
  and again with --symbolic), and the small golden traces.
Files are named by content hash, so reruns add nothing twice.
"""
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile

MAX_BYTES = 64 << 10


def put(outdir, data, prefix):
    if isinstance(data, str):
        data = data.encode()
    name = "%s-%s" % (prefix, hashlib.sha1(data).hexdigest()[:16])
    with open(os.path.join(outdir, name), "wb") as f:
        f.write(data)


def main():
    root, tpsim, test_config, outdir = sys.argv[1:5]
    dirs = {t: os.path.join(outdir, t) for t in ("config", "check", "trace")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)

    configs = []
    for pattern in ("fixtures/*/config.json", "examples/**/*.json",
                    "tools/bench/*.json", "tests/golden/*.config.json"):
        configs += sorted(glob.glob(os.path.join(root, pattern),
                                    recursive=True))
    for path in configs:
        with open(path, "rb") as f:
            put(dirs["config"], f.read(), "shipped")

    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "bad.jsonl")
        env = dict(os.environ, TPSIM_DUMP_BAD_CONFIGS=dump,
                   CK_RUN_CASE="dump", CK_VERBOSITY="silent")
        subprocess.run([test_config], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        with open(dump) as f:
            rows = [json.loads(line) for line in f]
        for row in rows:
            put(dirs["config"], row["config"], "bad")

        traces = []
        for path in configs:
            for extra in ([], ["--symbolic"]):
                out = os.path.join(tmp, "t.json")
                try:
                    r = subprocess.run(
                        [tpsim, "run", path, "-o", out, "--threads", "1",
                         "--max-memory", "64M"] + extra,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        timeout=10)
                except subprocess.TimeoutExpired:
                    continue
                if r.returncode in (0, 1) and os.path.exists(out) and \
                        os.path.getsize(out) <= MAX_BYTES:
                    with open(out, "rb") as f:
                        traces.append(f.read())
                if os.path.exists(out):
                    os.unlink(out)
    for path in sorted(glob.glob(os.path.join(root, "tests/golden/*.trace.json"))):
        if os.path.getsize(path) <= MAX_BYTES:
            with open(path, "rb") as f:
                traces.append(f.read())
    for t in traces:
        put(dirs["trace"], t, "trace")
        put(dirs["check"], t, "trace")
    for path in sorted(glob.glob(os.path.join(root, "fixtures/*/fixture.json"))):
        with open(path, "rb") as f:
            put(dirs["check"], f.read(), "fixture")
    for t, d in sorted(dirs.items()):
        print("fuzz_corpus: %s: %d seeds" % (t, len(os.listdir(d))))


if __name__ == "__main__":
    main()
