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
3. The module types, dumped by test_config (TPSIM_DUMP_MODULE_TYPES) from
   their descriptors (src/nn/module_type.c) and the config's shorthands,
   must be the schema's: the "type" enum, in order; per type, the keys it
   allows and requires, and per key its kind, its range and its default.
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
    ": unknown dtype",
    ": unknown schedule",
    ": unknown module type",
    ": unsupported config version",
    ": out of range (expected",
)


def resolve(schema, node):
    """node with a local $ref followed (one level is all the schema has)."""
    ref = node.get("$ref")
    if ref is None:
        return node
    assert ref.startswith("#/$defs/"), ref
    return schema["$defs"][ref[len("#/$defs/"):]]


def number_branch(node):
    """The number or integer branch of a size or positive ({"anyOf":
    [number, expression]})."""
    for branch in node.get("anyOf", [node]):
        if branch.get("type") in ("integer", "number"):
            return branch
    return {}


def type_branch(fields, name):
    """The allOf branch of module_fields whose "if" is about type `name`."""
    hits = []
    for branch in fields.get("allOf", []):
        cond = branch["if"]["properties"]["type"]
        if cond.get("const") == name or name in cond.get("enum", []):
            hits.append(branch["then"])
    return hits


def check_module_types(schema, dump):
    """The schema's module keys against the descriptors; a list of what
    disagrees."""
    problems = []
    fields = schema["$defs"]["module_fields"]
    props = fields["properties"]
    names = [t["name"] for t in dump["types"] + dump["shorthands"]]
    if props["type"].get("enum") != names:
        problems.append("type enum %s, the descriptors and shorthands %s"
                        % (props["type"].get("enum"), names))
    every_key = set(props) - {"name", "type"}
    for t in dump["types"] + dump["shorthands"]:
        name = t["name"]
        keys = [k if isinstance(k, dict) else {"name": k} for k in t["keys"]]
        branches = type_branch(fields, name)
        if len(branches) != 1:
            problems.append("%s: %d branches of module_fields' allOf"
                            % (name, len(branches)))
            continue
        then = branches[0]
        forbidden = {r for alt in then.get("not", {}).get("anyOf", [])
                     for r in alt["required"]}
        allowed = every_key - forbidden
        want = {k["name"] for k in keys}
        if allowed != want:
            problems.append("%s: the schema allows %s, tpsim %s"
                            % (name, sorted(allowed), sorted(want)))
        if name in [s["name"] for s in dump["shorthands"]]:
            continue  # expand_block reads its keys: no descriptor
        required = set(then.get("required", []))
        want = {k["name"] for k in keys if k["required"]}
        if required != want:
            problems.append("%s: the schema requires %s, tpsim %s"
                            % (name, sorted(required), sorted(want)))
        for k in keys:
            shared = props.get(k["name"], {})
            own = then.get("properties", {}).get(k["name"], {})
            where = "%s.%s" % (name, k["name"])
            if k["kind"] == "size":
                if shared.get("$ref") != "#/$defs/size":
                    problems.append("%s: not a size" % where)
                num = number_branch(resolve(schema, shared))
                lo = own.get("minimum", num.get("minimum"))
                hi = own.get("maximum", num.get("maximum"))
                if (lo, hi) != (k["min"], k["max"]):
                    problems.append("%s: the schema's range [%s, %s], "
                                    "tpsim's [%s, %s]" % (
                                        where, lo, hi, k["min"], k["max"]))
            elif k["kind"] == "positive":
                if shared.get("$ref") != "#/$defs/positive":
                    problems.append("%s: not a positive number" % where)
            elif k["kind"] == "unit":
                if shared.get("$ref") != "#/$defs/unit":
                    problems.append("%s: not a number in [0, 1)" % where)
            elif k["kind"] == "bool":
                if shared.get("type") != "boolean":
                    problems.append("%s: not a boolean" % where)
            elif k["kind"] == "module":
                if shared.get("type") != "string":
                    problems.append("%s: not a module name" % where)
            elif k["kind"] == "choice":
                if shared.get("enum") != k["choices"]:
                    problems.append("%s: the schema's choices %s, tpsim's %s"
                                    % (where, shared.get("enum"),
                                       k["choices"]))
            elif k["kind"] == "modules":
                if (shared.get("type") != "array"
                        or shared.get("minItems") != 1
                        or shared.get("items") != {"$ref": "#/$defs/item"}):
                    problems.append("%s: not a list of modules" % where)
            else:
                problems.append("%s: unknown kind %s" % (where, k["kind"]))
            default = own.get("default", shared.get("default"))
            if k.get("needs"):
                # given only with the key it needs
                needs = schema["$defs"]["module_fields"].get(
                    "dependentRequired", {}).get(k["name"])
                if needs != [k["needs"]]:
                    problems.append("%s: the schema's dependentRequired %s, "
                                    "tpsim needs %s"
                                    % (where, needs, k["needs"]))
            if k.get("off_when_absent"):
                # absent turns the feature off: no default to state
                if default is not None:
                    problems.append("%s: a default, but absent is off"
                                    % where)
            elif "same_as" in k:
                # its default is another key's value: only in the text
                if default is not None:
                    problems.append("%s: a default, but tpsim's is %s's"
                                    % (where, k["same_as"]))
            elif k["kind"] == "module":
                # absent: no module named: no default to state
                if default is not None:
                    problems.append("%s: a default, but tpsim has none"
                                    % where)
            elif k["required"] and default is not None:
                problems.append("%s: required, with a default" % where)
            elif (not k["required"]
                  and (default != k["default"]
                       or type(default) is not type(k["default"]))):
                problems.append("%s: the schema's default %r, tpsim's %r"
                                % (where, default, k["default"]))
    return problems


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
        types = os.path.join(tmp, "types.json")
        env = dict(os.environ, TPSIM_DUMP_BAD_CONFIGS=dump,
                   TPSIM_DUMP_MODULE_TYPES=types,
                   CK_RUN_CASE="dump", CK_VERBOSITY="silent")
        subprocess.run([test_config], env=env, check=True)
        with open(dump) as f:
            rows = [json.loads(line) for line in f]
        with open(types) as f:
            module_types = json.load(f)
    problems = check_module_types(schema, module_types)
    for p in problems:
        print("module types: " + p)
    print("%d module types and %d shorthands against the schema: %d "
          "disagreements" % (len(module_types["types"]),
                             len(module_types["shorthands"]),
                             len(problems)))
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
    return 1 if bad_good or accepted or problems else 0


if __name__ == "__main__":
    sys.exit(main())
