"""Every ```python block of docs/python.md runs, in order, in one
namespace, from a directory whose fixtures/ and examples/ are the
repository's; a block followed by an indented block after "which prints"
must print the first line of it."""
import contextlib
import io
import os
import re

from conftest import root_path


def blocks(text):
    return re.findall(r"^```python\n(.*?)^```\n", text, flags=re.S | re.M)


def test_every_snippet_of_python_md_runs(tmp_path, monkeypatch):
    text = open(root_path("docs", "python.md"), encoding="utf-8").read()
    code = blocks(text)
    assert len(code) >= 8
    for d in ("fixtures", "examples"):
        os.symlink(root_path(d), tmp_path / d)
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "python_md"}
    out = io.StringIO()
    for i, block in enumerate(code):
        with contextlib.redirect_stdout(out):
            exec(compile(block, "docs/python.md block %d" % (i + 1), "exec"),
                 namespace)
    # What the page says the failing assertion prints, it prints.
    printed = re.search(r"which prints\n\n    (.*)\n", text).group(1)
    assert printed in out.getvalue().splitlines()
    # The page's test passes with the page's trace.
    namespace["test_output"](namespace["trace"])
