"""tpsim's exceptions: one class per kind of trouble, each carrying what
the C API's error has (include/tpsim.h, "status, errors, version").

str(e) is the line `tpsim` prints after "tpsim: " for the same problem
(tpsim_error_message): "cfg.json: /model/0/in_features: expected 8, got
6". For an error at a place in a JSON document, e.file is the document's
name, e.pointer its JSON Pointer (RFC 6901, "" for the whole document)
and e.message the words without the place; elsewhere file and pointer
are None and message is the whole line.
"""
from ._ffi import ffi, lib


class Error(Exception):
    """Every error tpsim raises. status is the C API's enum tpsim_status
    value (1 to 9), status_name its short name ("bad input")."""

    def __init__(self, line, status=0, file=None, pointer=None,
                 message=None):
        super().__init__(line)
        self.line = line
        self.status = status
        self.status_name = _string(lib.tpsim_status_name(status))
        self.file = file
        self.pointer = pointer
        self.message = line if message is None else message

    def __str__(self):
        return self.line


class ConfigError(Error, ValueError):
    """A config tpsim refuses: bad JSON, an unknown key, a value out of
    range, a plan that cannot run, a variable it does not define."""


class TraceError(Error, ValueError):
    """A file or text that is not a tpsim trace (docs/trace.md)."""


class FixtureError(Error, ValueError):
    """A fixture that is not one (docs/design.md section 6)."""


class UsageError(Error, ValueError):
    """An option out of its range (threads, max_memory, explain's
    step), or a tensor or event a trace does not have."""


class LimitError(Error):
    """A size, memory or trace budget (max_memory) refused the run."""


class NumericError(Error, ArithmeticError):
    """The run produced a NaN or an Inf (the message names the event)."""


class FileError(Error, OSError):
    """A file could not be read or written. As an OSError: errno None,
    strerror the line, filename the file when the error names one."""

    def __init__(self, line, *args, **kw):
        Error.__init__(self, line, *args, **kw)
        # OSError read the constructor's arguments as (errno, strerror,
        # filename, ...): set them to what they are here.
        self.errno = None
        self.strerror = line
        self.filename = self.file


def _string(p, default=None):
    """A C string (UTF-8; a file name may be any bytes) as str."""
    if p == ffi.NULL:
        return default
    return ffi.string(p).decode("utf-8", "surrogateescape")


# The C API's statuses (enum tpsim_status) and the class of each; bad
# input (1) is the class of the document being read, given by the caller.
_BY_STATUS = {
    lib.TPSIM_ERR_IO: FileError,
    lib.TPSIM_ERR_LIMIT: LimitError,
    lib.TPSIM_ERR_NOMEM: None,  # MemoryError
    lib.TPSIM_ERR_NUMERIC: NumericError,
    lib.TPSIM_ERR_USAGE: UsageError,
}


def raise_error(status, errp, input_class, reading_config=False):
    """Raises the exception of a failed call: status it returned, errp
    the struct tpsim_error ** it filled (freed here). input_class is the
    class for bad input (TPSIM_ERR_INPUT, a shape or an unsupported
    feature). reading_config: every status but I/O and memory is a
    ConfigError (a config over a limit is a bad config)."""
    err = errp[0]
    try:
        line = _string(lib.tpsim_error_message(err), "")
        file = _string(lib.tpsim_error_file(err))
        pointer = _string(lib.tpsim_error_pointer(err))
        what = _string(lib.tpsim_error_what(err), line)
    finally:
        lib.tpsim_error_free(err)
        errp[0] = ffi.NULL
    if status == lib.TPSIM_ERR_NOMEM:
        raise MemoryError(line)
    if status == lib.TPSIM_ERR_MISUSE:
        # The package passed NULL: a bug here, not the user's.
        raise AssertionError("tpsim: misuse of the C API: " + line)
    if reading_config and status != lib.TPSIM_ERR_IO:
        cls = ConfigError
    else:
        cls = _BY_STATUS.get(status) or input_class
    raise cls(line, status, file, pointer, what)
