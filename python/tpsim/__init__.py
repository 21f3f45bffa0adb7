"""tpsim from Python: configs, runs, traces and their checks over
libtpsim's C API (include/tpsim.h), with numpy arrays for values.

    import tpsim
    trace = tpsim.run(tpsim.Config.load("config.json"))
    trace.result.match
    for ev in trace.events(op="all_reduce"):
        ev.ranks[0].values          # a numpy float32 array

docs/python.md is the guide; docs/design.md the contract a config and a
trace follow.
"""
from ._config import Config, comm, run
from ._errors import (ConfigError, Error, FileError, FixtureError,
                      LimitError, NumericError, TraceError, UsageError)
from ._ffi import ffi as _ffi_ffi, lib as _lib
from ._trace import (Event, Mismatch, Picture, Result, RunResult, Shard,
                     Trace, load_trace)

__version__ = _ffi_ffi.string(_lib.tpsim_version()).decode()

__all__ = [
    "Config", "ConfigError", "Error", "Event", "FileError", "FixtureError",
    "LimitError", "Mismatch", "NumericError", "Picture", "Result",
    "RunResult", "Shard", "Trace", "TraceError", "UsageError", "comm",
    "load_trace", "run",
]
