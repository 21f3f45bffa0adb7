"""What the Python tests share: the source tree, the tpsim binary and
the test_config binary that meson test names (python/meson.build)."""
import os
import subprocess

import pytest

ROOT = os.environ.get("TPSIM_SOURCE_ROOT",
                      os.path.dirname(os.path.dirname(os.path.dirname(
                          os.path.abspath(__file__)))))
EXAMPLE = os.path.join(ROOT, "fixtures", "seed_2x4_rowwise_after_reduce")


def root_path(*parts):
    return os.path.join(ROOT, *parts)


def tpsim_exe():
    exe = os.environ.get("TPSIM_EXE")
    if not exe:
        pytest.fail("TPSIM_EXE is not set: run the tests with meson test")
    return exe


def cli(*args, **kw):
    """The tpsim binary with args: (exit code, stdout bytes, stderr str)."""
    r = subprocess.run([tpsim_exe()] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, **kw)
    return r.returncode, r.stdout, r.stderr.decode("utf-8", "replace")


@pytest.fixture(scope="session")
def example_trace():
    """The 2x4 example's trace, run once per session."""
    import tpsim
    return tpsim.run(tpsim.Config.load(os.path.join(EXAMPLE, "config.json")))
