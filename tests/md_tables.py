#!/usr/bin/env python3
"""Every Markdown table of the documentation renders as a table.

  md_tables.py CMARK_GFM SOURCE_ROOT
  md_tables.py CMARK_GFM --self-test

Renders README.md, every .md under docs/, examples/**/README.md,
fixtures/**/DERIVATION.md, tests/**/README.md and tpsim diff's Markdown
goldens (tests/golden/diff/*.md) with a real GFM renderer
(Debian's cmark-gfm with its table extension, as GitHub renders them) and
fails on every source line that looks like a table row (it starts with
'|' and holds another '|') but is not inside a rendered <table> or a code
block. A blank line inside a table, or a row before its delimiter row,
leaves such lines in a paragraph of pipes.

--self-test checks that a table cut by a blank line is found and that a
whole table, a table in a list and a row in a code block are not.
"""
import glob
import os
import re
import subprocess
import sys

ROW = re.compile(r"^\s*\|.*\|")
# cmark-gfm's --sourcepos: <table data-sourcepos="3:1-7:228">.
BLOCK = re.compile(r'<(table|pre|code)[^>]*data-sourcepos="(\d+):\d+-(\d+):\d+"')
PATTERNS = ("README.md", "docs/**/*.md", "examples/**/README.md",
            "fixtures/**/DERIVATION.md", "tests/**/README.md",
            "tests/golden/diff/*.md")


def stray_rows(cmark, text):
    """(line number, line) of each table-like line outside a table or a
    code block, once rendered."""
    html = subprocess.run([cmark, "-e", "table", "--sourcepos"],
                          input=text.encode(), stdout=subprocess.PIPE,
                          check=True).stdout.decode()
    covered = set()
    for m in BLOCK.finditer(html):
        covered.update(range(int(m.group(2)), int(m.group(3)) + 1))
    return [(n, line) for n, line in enumerate(text.split("\n"), 1)
            if ROW.match(line) and n not in covered]


def files(root):
    found = set()
    for pattern in PATTERNS:
        for path in glob.glob(os.path.join(root, pattern), recursive=True):
            if "node_modules" not in path.split(os.sep):
                found.add(path)
    return sorted(found)


def self_test(cmark):
    cut = "| a | b |\n|---|---|\n| 1 | 2 |\n\n| 3 | 4 |\n"
    whole = "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n"
    in_list = "- item\n\n  | a | b |\n  |---|---|\n  | 1 | 2 |\n"
    no_delim = "| a | b |\n| 1 | 2 |\n"
    fenced = "```\n| a | b |\n```\n\n    | c | d |\n"
    checks = [(cut, [5]), (whole, []), (in_list, []), (no_delim, [1, 2]),
              (fenced, [])]
    failed = 0
    for text, want in checks:
        got = [n for n, _ in stray_rows(cmark, text)]
        if got != want:
            print("self-test: %r: stray rows %s, want %s" % (text, got, want))
            failed += 1
    return 1 if failed else 0


def main():
    cmark = sys.argv[1]
    if sys.argv[2] == "--self-test":
        return self_test(cmark)
    root = sys.argv[2]
    paths = files(root)
    bad = 0
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for n, line in stray_rows(cmark, text):
            print("%s:%d: a table row outside a table (a blank line in "
                  "the table, or no delimiter row?): %s"
                  % (os.path.relpath(path, root), n, line.strip()[:80]))
            bad += 1
    print("%d Markdown files rendered with %s, %d stray table rows"
          % (len(paths), cmark, bad))
    if not paths:
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
