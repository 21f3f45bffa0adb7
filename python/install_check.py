#!/usr/bin/env python3
"""The Python package from a DESTDIR install, with only the installed
files (issue 18): `meson install --destdir` into a temporary directory,
then, in a fresh interpreter whose path holds the installed package's
directory and nothing of the source or build tree (no TPSIM_LIBRARY,
no PYTHONPATH into them, run from elsewhere): `import tpsim` finds the
installed package and the installed libtpsim.so beside it, runs the 2x4
example and gets its hand-derived values
(fixtures/seed_2x4_rowwise_after_reduce/DERIVATION.md); then every
examples/python/*.py runs the same way.

  install_check.py SOURCE_ROOT BUILD_DIR MESON
"""
import glob
import os
import subprocess
import sys
import tempfile

SNIPPET = r"""
import os, sys
import numpy as np
import tpsim
from tpsim import _ffi
dest, root, build = sys.argv[1], sys.argv[3], sys.argv[4]
for p in sys.path:
    assert not p.startswith((root, build)), "sys.path has " + p
for what, path in (("tpsim", tpsim.__file__),
                   ("libtpsim", os.path.realpath(_ffi.LIBRARY_PATH))):
    assert path.startswith(dest), "%s is %s, not under %s" % (what, path, dest)
trace = tpsim.run(tpsim.Config.load(sys.argv[2]))
(ev,) = trace.events(op="all_reduce")
for s in ev.ranks:
    np.testing.assert_array_equal(s.values, [[30, 70], [70, 174]])
np.testing.assert_array_equal(trace.result.output, [[31, 72], [71, 176]])
from tpsim.testing import assert_shard_close
assert_shard_close(trace, "fc.out", 1, [[31, 72], [71, 176]])
print("python install: tpsim %s from %s" % (tpsim.__version__, tpsim.__file__))
"""


def clean_env(root, build, pythonpath):
    # Nothing that names the source or build tree: TPSIM_LIBRARY,
    # PYTHONPATH, meson test's variables, PWD.
    env = {k: v for k, v in os.environ.items()
           if root not in v and build not in v and k not in (
               "TPSIM_LIBRARY", "PYTHONPATH", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = pythonpath
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def main():
    root, build, meson = sys.argv[1:4]
    root, build = os.path.realpath(root), os.path.realpath(build)
    problems = 0
    with tempfile.TemporaryDirectory() as dest:
        r = subprocess.run([meson, "install", "-C", build, "--destdir", dest,
                            "--no-rebuild", "--quiet"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        if r.returncode != 0:
            print("python install: meson install failed: " + r.stdout)
            return 1
        inits = glob.glob(os.path.join(dest, "**", "tpsim", "__init__.py"),
                          recursive=True)
        if len(inits) != 1:
            print("python install: expected one tpsim/__init__.py, found %s"
                  % inits)
            return 1
        package = os.path.dirname(inits[0])
        # Installed under /usr/local (the default prefix), the package is
        # where this python3 looks without PYTHONPATH.
        site = "/" + os.path.relpath(os.path.dirname(package), dest)
        search = subprocess.run([sys.executable, "-c",
                                 "import sys; print(chr(10).join(sys.path))"],
                                stdout=subprocess.PIPE, text=True).stdout
        if site.startswith("/usr/local/") and site not in search.split("\n"):
            print("python install: tpsim goes to %s, which %s does not "
                  "search" % (site, sys.executable))
            problems += 1
        installed = sorted(os.listdir(package))
        # Every module of python/tpsim (python/meson.build lists them).
        want = sorted([os.path.basename(f) for f in glob.glob(
            os.path.join(root, "python", "tpsim", "*.py"))] + ["_paths.py"])
        if installed != want:
            print("python install: installed %s, python/tpsim has %s"
                  % (installed, want))
            problems += 1
        for f in installed:
            text = open(os.path.join(package, f), "rb").read()
            if root.encode() in text or build.encode() in text:
                print("python install: %s names the source or build tree"
                      % f)
                problems += 1
        env = clean_env(root, build, os.path.dirname(package))
        example = os.path.join(root, "fixtures",
                               "seed_2x4_rowwise_after_reduce",
                               "config.json")
        with tempfile.TemporaryDirectory() as cwd:
            r = subprocess.run([sys.executable, "-c", SNIPPET, dest, example,
                                root, build],
                               cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               timeout=300)
            print(r.stdout.strip())
            if r.returncode != 0:
                problems += 1
            for ex in sorted(glob.glob(os.path.join(root, "examples",
                                                    "python", "*.py"))):
                r = subprocess.run([sys.executable, ex], cwd=cwd, env=env,
                                   stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True,
                                   timeout=600)
                print("python install: %s exited %d" % (
                    os.path.relpath(ex, root), r.returncode))
                if r.returncode != 0:
                    print(r.stdout)
                    problems += 1
    print("python install: %s installed; %d problems"
          % (", ".join(installed), problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
