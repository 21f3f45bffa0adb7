#!/usr/bin/env python3
"""docs/tpsim-config.schema.json against tpsim's own configs and its
bad-config table (tests/config/test_config.c).

  schema_check.py SOURCE_ROOT TEST_CONFIG_EXE

1. Every config under examples/ (at any depth), fixtures/, tools/bench/
   and tests/golden/ must be valid: the schema refuses nothing tpsim
   accepts.
2. The bad-config table, dumped by test_config (TPSIM_DUMP_BAD_CONFIGS),
   must be refused wherever a schema can say what is wrong: the rows whose
   message is about a key, a type, a choice or a plain range, and whose
   config uses no variables. The other rows (cross-field rules, limits,
   expressions) are left to tpsim; the counts are printed.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

import jsonschema

# Message fragments of errors a schema can express.
EXPRESSIBLE = (
    ": unknown key ",
    ": missing",
    ": expected an object",
    ": expected an array",
    ": expected a string",
    ": expected an integer",
    ": expected a number",
    ": expected true or false",
    ": unknown init method",
    ": unknown style",
    ": unknown mode",
    ": unknown values mode",
    ": unknown loss",
    ": unknown sampler",
    ": unknown uneven",
    ": unknown dp_grad",
    ": unknown input source",
    ": unknown optimizer",
    ": unknown module type",
    ": unsupported config version",
)


def main():
    root, test_config = sys.argv[1], sys.argv[2]
    with open(os.path.join(root, "docs", "tpsim-config.schema.json")) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)

    good = []
    for pattern in ("examples/**/*.json", "fixtures/*/config.json",
                    "tools/bench/*.json", "tests/golden/*.config.json"):
        good += sorted(glob.glob(os.path.join(root, pattern), recursive=True))
    bad_good = 0
    for path in good:
        with open(path) as f:
            errors = list(validator.iter_errors(json.load(f)))
        for e in errors[:3]:
            print("%s: /%s: %s" % (os.path.relpath(path, root),
                                   "/".join(map(str, e.absolute_path)),
                                   e.message))
        bad_good += bool(errors)
    print("%d of %d shipped configs valid" % (len(good) - bad_good,
                                              len(good)))

    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "bad.jsonl")
        env = dict(os.environ, TPSIM_DUMP_BAD_CONFIGS=dump,
                   CK_RUN_CASE="dump", CK_VERBOSITY="silent")
        subprocess.run([test_config], env=env, check=True)
        with open(dump) as f:
            rows = [json.loads(line) for line in f]
    expressible = accepted = 0
    for row in rows:
        if not any(m in row["message"] for m in EXPRESSIBLE):
            continue
        if "$" in row["config"] or "vars" in row["config"]:
            continue
        if ": /params/" in row["message"]:
            # A parameter's shape depends on its module's type (a linear's
            # weight is 2-D, a layernorm's 1-D): cross-field.
            continue
        try:
            config = json.loads(row["config"])
        except ValueError:
            continue  # not JSON at all: the parser's part
        expressible += 1
        if validator.is_valid(config):
            accepted += 1
            print("the schema accepts a bad config (tpsim: %s): %s"
                  % (row["message"], row["config"]))
    print("%d of %d bad-config rows are the schema's to refuse; it "
          "accepts %d of them" % (expressible, len(rows), accepted))
    if not rows or expressible == 0:
        print("no bad-config rows to check")
        return 1
    return 1 if bad_good or accepted else 0


if __name__ == "__main__":
    sys.exit(main())
