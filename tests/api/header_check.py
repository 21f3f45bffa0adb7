#!/usr/bin/env python3
"""include/tpsim.h compiles alone, as C17 and as C++17, with warnings as
errors (issue 16): a file that includes it and nothing else, and one that
also takes the address of every TPS_API function the header declares (so
that each declaration is a complete prototype in both languages).

  header_check.py SOURCE_ROOT CC CXX
"""
import os
import re
import subprocess
import sys
import tempfile

FLAGS = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"]


def api_functions(header):
    text = open(header, encoding="utf-8").read()
    return re.findall(r"TPS_API\b[^;(]*?\b(tpsim_\w+)\s*\(", text)


def compile_ok(compiler, std, suffix, source, include):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "h" + suffix)
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        r = subprocess.run([compiler, "-std=" + std, "-fsyntax-only",
                            "-I", include, path] + FLAGS,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        return r.returncode == 0, r.stdout


def main():
    root, cc, cxx = sys.argv[1:4]
    include = os.path.join(root, "include")
    names = api_functions(os.path.join(include, "tpsim.h"))
    if len(names) < 10:
        print("header_check: found only %d TPS_API functions" % len(names))
        return 1
    alone = "#include <tpsim.h>\n"
    every = alone + "void (*tps_header_check[])(void) = {\n%s};\n" % "".join(
        "\t(void (*)(void))%s,\n" % n for n in names)
    problems = 0
    for compiler, std, suffix in ((cc, "c17", ".c"), (cxx, "c++17", ".cpp")):
        for what, source in (("alone", alone), ("every function", every)):
            ok, out = compile_ok(compiler, std, suffix, source, include)
            if not ok:
                problems += 1
                print("tpsim.h, %s, as %s (%s): %s" % (what, std, compiler,
                                                       out))
    print("tpsim.h: %d functions, as c17 and c++17, %d problems"
          % (len(names), problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
