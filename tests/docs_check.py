#!/usr/bin/env python3
"""README.md and docs/config.md against what tpsim is.

  docs_check.py TPSIM SOURCE_ROOT

- Its layout table names each path once, has a row for every layer folder
  of src/, and that row names every source file of the folder (so a new
  file is not left out, nor described twice).
- Its "Not yet" paragraph names no module type or style that tpsim runs:
  the lists come from tpsim's own unknown-type and unknown-style messages.
- docs/config.md's module table has a row for every module type, and its
  init table one for every init method (from tpsim's messages too).
- The seeds (seed 000, seed 004, "the seed's"): in every Markdown file,
  the paragraph of the first mention links to the section that names
  them, docs/tutorial/README.md#the-seeds (or is that section).
- The project owns its design: docs/design.md exists, README.md links it,
  every "design.md section N" names one of its sections, and no file
  cites the contributors' contract outside the repository (the design
  file or the shared folder that live beside it, not in it: see
  `outside` below).
"""
import fnmatch
import glob
import os
import re
import subprocess
import sys

CONFIG = ('{"tpsim": 1, "mesh": {"shape": [2], "dim_names": ["tp"]}, '
          '"model": [{"name": "fc", "type": %s, "in_features": 4, '
          '"out_features": 2}], "plan": {"fc": %s}, '
          '"input": {"shape": [2, 4]}}')


def expected_list(tpsim, config):
    """The names of tpsim's "(expected one of a, b, c)" for a config."""
    r = subprocess.run([tpsim, "run", "-", "-o", os.devnull],
                       input=config.encode(), stderr=subprocess.PIPE,
                       stdout=subprocess.DEVNULL)
    m = re.search(r"\(expected one of ([^)]*)\)", r.stderr.decode())
    if not m:
        sys.exit("readme_check: no list in %r" % r.stderr.decode())
    return [n.strip() for n in m.group(1).split(",")]


SEED = re.compile(r"(?i)\bseeds? 00[0-9]|\bthe seed's|\bthe seeds\b")
MARKDOWN = ("README.md", "docs/**/*.md", "examples/**/README.md",
            "fixtures/**/DERIVATION.md", "tests/**/README.md")


def seed_mentions(root):
    """Files whose first mention of a seed is not explained on the spot."""
    bad = []
    paths = set()
    for pattern in MARKDOWN:
        paths.update(p for p in glob.glob(os.path.join(root, pattern),
                                          recursive=True)
                     if "node_modules" not in p)
    for path in sorted(paths):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        # Paragraphs of prose: no headings, code or generated output.
        text = re.sub(r"(?s)```.*?```", "", text)
        text = re.sub(r"(?s)<!-- tpsim .*?<!-- end tpsim -->", "", text)
        heading = ""
        for para in re.split(r"\n\s*\n", text):
            lines = [l for l in para.split("\n")
                     if not l.startswith("    ")]
            if lines and lines[0].startswith("#"):
                heading = lines[0]
                lines = lines[1:]
            para = "\n".join(lines)
            if not SEED.search(para):
                continue
            if "the-seeds" not in para and heading != "## The seeds":
                bad.append("%s: the first mention of a seed does not "
                           "link to tutorial/README.md#the-seeds: %s"
                           % (os.path.relpath(path, root),
                              SEED.search(para).group(0)))
            break
    return bad


SOURCES = (".md", ".c", ".h", ".py", ".sh", ".js", ".build", ".txt")
SKIP_DIRS = {".git", "node_modules"}


def design_citations(root):
    """Problems with docs/design.md and the citations of the design."""
    bad = []
    path = os.path.join(root, "docs", "design.md")
    if not os.path.exists(path):
        return ["docs/design.md is missing"]
    with open(path, encoding="utf-8") as f:
        sections = set(re.findall(r"(?m)^## ([0-9]+)\. ", f.read()))
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        if "(docs/design.md)" not in f.read():
            bad.append("README.md: no link to docs/design.md")
    outside = re.compile(r"DESIGN\.md|\bDESIGN [0-9]|\.\./shared\b")
    cited = re.compile(r"design\.md\)? sections? ([0-9]+)(?: and ([0-9]+))?")
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs
                   if d not in SKIP_DIRS and not d.startswith("build")]
        for name in files:
            if not name.endswith(SOURCES) or name == "docs_check.py":
                continue
            p = os.path.join(top, name)
            rel = os.path.relpath(p, root)
            with open(p, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for m in outside.finditer(text):
                bad.append("%s: cites %r, outside the repository (cite "
                           "docs/design.md)" % (rel, m.group(0)))
            for m in cited.finditer(text):
                for n in m.groups():
                    if n and n not in sections:
                        bad.append("%s: cites design.md section %s, which "
                                   "it does not have" % (rel, n))
    return bad


def table_rows(text, heading):
    """The first cells of the first table under `## heading`."""
    section = text[text.index("\n## %s\n" % heading) + 1:]
    section = section[:section.find("\n## ", 1)]
    return [line.split("|")[1].strip() for line in section.split("\n")
            if line.startswith("| ")]


def main():
    tpsim, root = sys.argv[1], sys.argv[2]
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        text = f.read()
    errors = []

    layout = text[text.index("## Layout"):]
    layout = layout[:layout.index("\n## ")]
    firsts = [line.split("|")[1].strip() for line in layout.split("\n")
              if line.startswith("| ") and not line.startswith("| path")]
    for path in sorted(set(p for p in firsts if firsts.count(p) > 1)):
        errors.append("the layout table lists %s %d times"
                      % (path, firsts.count(path)))
    rows = {line.split("|")[1].strip().strip("`"): line
            for line in layout.split("\n") if line.startswith("| ")}
    for folder in sorted(glob.glob(os.path.join(root, "src", "*", ""))):
        layer = os.path.basename(os.path.dirname(folder))
        row = rows.get("src/%s/" % layer)
        if row is None:
            errors.append("the layout table has no row for src/%s/" % layer)
            continue
        named = re.findall(r"`([^`]+)`", row)
        for src in sorted(glob.glob(os.path.join(folder, "*.c"))):
            name = os.path.basename(src)
            if not any(fnmatch.fnmatchcase(name, n) or n == name[:-2]
                       or n.endswith("/" + name) for n in named):
                errors.append("the layout table's row of src/%s/ does not "
                              "name %s" % (layer, name))

    types = expected_list(tpsim, CONFIG % ('"no-such-type"', '"colwise"'))
    styles = expected_list(tpsim, CONFIG % ('"linear"', '"no-such-style"'))
    not_yet = re.search(r"\nNot yet:(.*?)\n\n", text, re.S)
    if not_yet:
        words = set(re.findall(r"[a-z_]+", not_yet.group(1).lower()))
        for name in types + styles:
            if name in words:
                errors.append("\"Not yet\" names %s, which tpsim runs"
                              % name)
    for e in errors:
        print("README.md: " + e)
    config_errors = []
    with open(os.path.join(root, "docs", "config.md"), encoding="utf-8") as f:
        config = f.read()
    methods = expected_list(tpsim, CONFIG.replace(
        '"input": {"shape": [2, 4]}',
        '"input": {"shape": [2, 4], "init": "no-such-method"}')
        % ('"linear"', '"colwise"'))
    for heading, names in (("Modules", types), ("Init methods", methods)):
        if "\n## %s\n" % heading not in config:
            config_errors.append("no section \"%s\"" % heading)
            continue
        cells = " ".join(table_rows(config, heading))
        for name in names:
            if "`%s`" % name not in cells:
                config_errors.append("the table of \"%s\" has no row for "
                                     "%s" % (heading, name))
    for e in config_errors:
        print("docs/config.md: " + e)
    errors += config_errors
    for e in seed_mentions(root) + design_citations(root):
        print(e)
        errors.append(e)
    print("%d module types, %d styles and %d init methods checked, %d "
          "problems" % (len(types), len(styles), len(methods), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
