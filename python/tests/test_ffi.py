"""python/tpsim/_ffi.py's declarations are include/tpsim.h's, token for
token (comments, preprocessor lines, extern "C" and TPS_API aside), so
the Python side cannot drift from the C API."""
import re

from tpsim import _ffi
from conftest import root_path

TOKEN = re.compile(r"[A-Za-z_]\w*|\d+|\S")


def declarations(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    lines = [line for line in text.split("\n")
             if not line.strip().startswith("#")]
    tokens = TOKEN.findall("\n".join(lines))
    # extern "C" { ... } around the declarations, for C++.
    out = []
    i = 0
    while i < len(tokens):
        if tokens[i:i + 2] == ["extern", '"']:
            i += 5  # extern " C " {
            continue
        out.append(tokens[i])
        i += 1
    if out and "extern" in tokens:
        out.pop()  # the closing brace of extern "C"
    return [t for t in out if t != "TPS_API"]


def test_cdef_is_the_headers_declarations():
    header = open(root_path("include", "tpsim.h"), encoding="utf-8").read()
    want = declarations(header)
    got = declarations(_ffi.CDEF)
    assert len(want) > 1000
    if got != want:
        for i, (a, b) in enumerate(zip(got, want)):
            if a != b:
                raise AssertionError(
                    "_ffi.CDEF drifts from include/tpsim.h at token %d: "
                    "%r, the header has %r (around: %s)"
                    % (i, a, b, " ".join(want[max(0, i - 12):i + 12])))
        raise AssertionError("_ffi.CDEF has %d tokens, the header %d"
                             % (len(got), len(want)))


def test_max_dims_is_the_headers():
    header = open(root_path("include", "tpsim.h"), encoding="utf-8").read()
    assert re.search(r"#define TPSIM_MAX_DIMS (\d+)", header).group(1) == \
        re.search(r"#define TPSIM_MAX_DIMS (\d+)", _ffi.CDEF).group(1)


def test_every_function_is_callable():
    header = open(root_path("include", "tpsim.h"), encoding="utf-8").read()
    names = re.findall(r"TPS_API\b[^;(]*?\b(tpsim_\w+)\s*\(", header)
    assert len(names) > 50
    for n in names:
        assert callable(getattr(_ffi.lib, n)), n
