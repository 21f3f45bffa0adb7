#!/usr/bin/env python3
"""`meson install` into a DESTDIR gives a library the way C libraries are
given (issue 16): libtpsim.so.N and its links, libtpsim.a, the one header
include/tpsim.h, tpsim.pc, bin/tpsim, tpsim(1), the schema and the docs;
examples/embed builds against it with `pkg-config --cflags --libs tpsim`
alone (no path into the source tree), runs, and prints the 2x4 example's
hand-derived values (fixtures/seed_2x4_rowwise_after_reduce/DERIVATION.md);
it links statically against libtpsim.a too; and `nm -D --defined-only` of
the installed shared library lists exactly the TPS_API functions of the
installed header.

  install_check.py SOURCE_ROOT BUILD_DIR MESON CC NM HELP2MAN_FOUND
"""
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

EXAMPLE = "fixtures/seed_2x4_rowwise_after_reduce/config.json"
# DERIVATION.md: the all_reduce gives [[30, 70], [70, 174]] on both ranks;
# the output is [[31, 72], [71, 176]].
WANT = [
    r"tpsim \d+\.\d+\.\d+: mesh tp=2 \(world 2\), 1 module, .* "
    r"matches the reference bit for bit, as it must: no sum rounds \(bound 0\)",
    r"all_reduce of fc\.out \(seq \d+\), rank 0: \[\[30, 70\], \[70, 174\]\]",
    r"all_reduce of fc\.out \(seq \d+\), rank 1: \[\[30, 70\], \[70, 174\]\]",
    r"output: \[\[31, 72\], \[71, 176\]\]",
]
VERBS = ["run", "comm", "check", "explain", "picture", "timeline", "view",
         "mesh"]

problems = []


def problem(what):
    problems.append(what)
    print("install: " + what)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, **kw)


def api_functions(header):
    text = open(header, encoding="utf-8").read()
    return set(re.findall(r"TPS_API\b[^;(]*?\b(tpsim_\w+)\s*\(", text))


def check_output(what, r):
    lines = r.stdout.splitlines()
    if r.returncode != 0:
        problem("%s exited %d: %s" % (what, r.returncode, r.stdout))
        return
    if len(lines) != len(WANT):
        problem("%s printed %d lines, want %d: %s" % (what, len(lines),
                                                      len(WANT), r.stdout))
        return
    for line, want in zip(lines, WANT):
        if not re.fullmatch(want, line):
            problem("%s printed %r, want /%s/" % (what, line, want))


def main():
    root, build, meson, cc, nm, help2man_found = sys.argv[1:7]
    cc = shlex.split(cc)
    with tempfile.TemporaryDirectory() as dest:
        r = run([meson, "install", "-C", build, "--destdir", dest,
                 "--no-rebuild", "--quiet"])
        if r.returncode != 0:
            problem("meson install failed: " + r.stdout)
            return 1
        pcs = glob.glob(os.path.join(dest, "**", "pkgconfig", "tpsim.pc"),
                        recursive=True)
        if len(pcs) != 1:
            problem("expected one tpsim.pc, found %s" % pcs)
            return 1
        libdir = os.path.dirname(os.path.dirname(pcs[0]))
        prefix = os.path.dirname(os.path.dirname(glob.glob(
            os.path.join(dest, "**", "bin", "tpsim"), recursive=True)[0]))
        headers = [h for h in glob.glob(os.path.join(dest, "**", "*.h"),
                                        recursive=True)]
        if [os.path.relpath(h, prefix) for h in headers] != \
                ["include/tpsim.h"]:
            problem("the installed headers are %s, want include/tpsim.h "
                    "alone" % [os.path.relpath(h, dest) for h in headers])
        sonames = sorted(os.path.basename(p) for p in
                         glob.glob(os.path.join(libdir, "libtpsim.so*")))
        if len(sonames) != 3 or not os.path.islink(
                os.path.join(libdir, "libtpsim.so")):
            problem("libtpsim.so, its soname link and the library: got %s"
                    % sonames)
        for rel in ["bin/tpsim", "include/tpsim.h",
                    "share/tpsim/tpsim-config.schema.json",
                    "share/doc/tpsim/README.md",
                    "share/doc/tpsim/design.md",
                    "share/doc/tpsim/api.md"]:
            if not os.path.exists(os.path.join(prefix, rel)):
                problem("%s is not installed" % rel)
        if not os.path.exists(os.path.join(libdir, "libtpsim.a")):
            problem("libtpsim.a is not installed")
        man = os.path.join(prefix, "share", "man", "man1", "tpsim.1")
        if help2man_found != "true":
            problem("help2man is missing, so tpsim(1) is not made: run "
                    "tools/quickstart.sh test")
        elif not os.path.exists(man):
            problem("share/man/man1/tpsim.1 is not installed")
        else:
            page = open(man, encoding="utf-8").read().replace("\\-", "-")
            for verb in VERBS:
                if not re.search(r"^%s " % verb, page, re.M):
                    problem("tpsim(1) has no line for %s" % verb)

        # What the shared library exports: exactly the header's API.
        so = os.path.join(libdir, "libtpsim.so")
        r = run([nm, "-D", "--defined-only", so])
        exported = set(line.split()[-1] for line in r.stdout.splitlines()
                       if line.strip())
        declared = api_functions(os.path.join(prefix, "include", "tpsim.h"))
        if r.returncode != 0 or exported != declared:
            problem("nm -D --defined-only: exported but not in tpsim.h: %s; "
                    "in tpsim.h but not exported: %s"
                    % (sorted(exported - declared),
                       sorted(declared - exported)))
        print("install: %d functions exported, as tpsim.h declares"
              % len(exported & declared))

        # examples/embed against the installed library, pkg-config alone.
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pcs[0]),
                   PKG_CONFIG_SYSROOT_DIR=dest)
        env.pop("PKG_CONFIG_LIBDIR", None)
        flags = run(["pkg-config", "--cflags", "--libs", "tpsim"], env=env)
        static_flags = run(["pkg-config", "--static", "--cflags", "--libs",
                            "tpsim"], env=env)
        if flags.returncode != 0 or static_flags.returncode != 0:
            problem("pkg-config: " + flags.stdout + static_flags.stdout)
            return 1
        if root in flags.stdout:
            problem("pkg-config's flags reach into the source tree: "
                    + flags.stdout)
        embed = os.path.join(dest, "embed")
        source = os.path.join(root, "examples", "embed", "embed.c")
        r = run(cc + ["-std=c17", "-Wall", "-Wextra", "-Wpedantic", "-Werror",
                      source, "-o", embed] + shlex.split(flags.stdout),
                env=env)
        if r.returncode != 0:
            problem("building examples/embed: " + r.stdout)
            return 1
        r = run([embed, os.path.join(root, EXAMPLE)],
                env=dict(os.environ, LD_LIBRARY_PATH=libdir))
        check_output("examples/embed", r)

        # The same linked against libtpsim.a: the whole engine is in it.
        static = [f if f != "-ltpsim" else os.path.join(libdir, "libtpsim.a")
                  for f in shlex.split(static_flags.stdout)]
        r = run(cc + ["-std=c17", source, "-o", embed + "_static"] + static,
                env=env)
        if r.returncode != 0:
            problem("building examples/embed against libtpsim.a: "
                    + r.stdout)
            return 1
        r = run([embed + "_static", os.path.join(root, EXAMPLE)],
                env={k: v for k, v in os.environ.items()
                     if k != "LD_LIBRARY_PATH"})
        check_output("examples/embed (static)", r)
    print("install: %d problems" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
