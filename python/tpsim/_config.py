"""Configs, runs and tpsim comm over the C API (docs/python.md)."""
import itertools
import json
import numbers
import os

from ._errors import ConfigError, UsageError, raise_error
from ._ffi import ffi, lib


def _escape_token(key):
    return str(key).replace("~", "~0").replace("/", "~1")


def _plain(obj, pointer, name):
    """obj as what json.dumps writes as tpsim reads it: numpy arrays and
    scalars, and anything with tolist() (a torch tensor), as lists and
    numbers; an infinite float as an integer out of every range (JSON has
    no Inf: tpsim then names its pointer, "got a number out of range").
    A NaN is a ConfigError at its pointer; a value JSON cannot hold, a
    TypeError."""
    if isinstance(obj, (str, bool, int)) or obj is None:
        return obj
    if isinstance(obj, float):
        if obj != obj:
            raise ConfigError(
                "%s: %s: expected a number, got NaN (JSON has none)"
                % (name, pointer or "(root)"), lib.TPSIM_ERR_INPUT, name,
                pointer, "expected a number, got NaN (JSON has none)")
        if obj in (float("inf"), float("-inf")):
            return 10 ** 400 if obj > 0 else -10 ** 400
        return obj
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, str):
                raise TypeError("%s: %s: a key must be a string, got %r"
                                % (name, pointer or "(root)", k))
            out[k] = _plain(v, pointer + "/" + _escape_token(k), name)
        return out
    if isinstance(obj, (list, tuple)):
        return [_plain(v, "%s/%d" % (pointer, i), name)
                for i, v in enumerate(obj)]
    tolist = getattr(obj, "tolist", None)
    if tolist is not None:
        return _plain(tolist(), pointer, name)
    raise TypeError("%s: %s: %s is not JSON: give dicts, lists, numbers, "
                    "strings and booleans" % (name, pointer or "(root)",
                                              type(obj).__name__))


class Config:
    """A config, read and validated by tpsim (docs/config.md). Immutable:
    set() returns a new one. Make one with Config.from_dict, Config.load
    or Config.from_json."""

    def __init__(self, _handle, _name, _path, _text, _vars):
        self._handle = _handle
        self.name = _name
        self.path = _path
        self._text = _text
        self.vars = dict(_vars)

    @classmethod
    def _make(cls, name, path, text, variables):
        names = [n.encode("utf-8") for n in variables]
        cvars = ffi.new("struct tpsim_var[]", max(len(names), 1))
        # The C strings must outlive the call: cvars holds bare pointers,
        # so keep their owners here (a temporary's buffer could be freed
        # before tpsim reads it).
        keep = [ffi.new("char[]", n) for n in names]
        for i, (c, v) in enumerate(zip(keep, variables.values())):
            cvars[i].name = c
            cvars[i].value = v
        out = ffi.new("struct tpsim_config **")
        errp = ffi.new("struct tpsim_error **")
        if path is not None:
            st = lib.tpsim_config_load(os.fsencode(path), cvars, len(names),
                                       out, errp)
        else:
            st = lib.tpsim_config_parse(text, len(text),
                                        name.encode("utf-8",
                                                    "surrogateescape"),
                                        cvars, len(names), out, errp)
        if st != lib.TPSIM_OK:
            raise_error(st, errp, ConfigError, reading_config=True)
        handle = ffi.gc(out[0], lib.tpsim_config_free)
        return cls(handle, name, path, text, variables)

    @classmethod
    def from_dict(cls, d, name="<dict>"):
        """The config a dict gives, as if json.dump'ed to a file called
        name (which messages name). numpy arrays and torch tensors may
        stand for lists."""
        text = json.dumps(_plain(d, "", name), separators=(",", ":"),
                          ensure_ascii=False)
        return cls._make(name, None, text.encode("utf-8", "surrogatepass"),
                         {})

    @classmethod
    def from_json(cls, text, name="<string>"):
        """The config of JSON text (str or bytes), named name."""
        if isinstance(text, str):
            text = text.encode("utf-8", "surrogatepass")
        return cls._make(name, None, bytes(text), {})

    @classmethod
    def load(cls, path):
        """The config in the file at path ("-": standard input)."""
        path = os.fspath(path)
        return cls._make(os.fsdecode(path), path, None, {})

    def set(self, **variables):
        """The same config with its "vars" set, as `tpsim run --set
        NAME=VALUE` does: config.set(hidden=4096). Each name must be one
        the config's "vars" defines; each value a finite number."""
        merged = dict(self.vars)
        for k, v in variables.items():
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise ConfigError(
                    "%s: /vars/%s: expected a number, got %s"
                    % (self.name, k, type(v).__name__),
                    lib.TPSIM_ERR_INPUT, self.name, "/vars/" + k,
                    "expected a number, got %s" % type(v).__name__)
            merged[k] = float(v)
        return Config._make(self.name, self.path, self._text, merged)

    def __repr__(self):
        vs = "".join(", %s=%g" % kv for kv in self.vars.items())
        return "tpsim.Config(%r%s)" % (self.name, vs)


def _config_of(config):
    if isinstance(config, Config):
        return config
    if isinstance(config, dict):
        return Config.from_dict(config)
    if isinstance(config, (str, bytes, os.PathLike)):
        return Config.load(config)
    raise TypeError("expected a tpsim.Config, a dict or a path, got %s"
                    % type(config).__name__)


class _Sink:
    """Collects what a tpsim_write_fn is given."""

    def __init__(self):
        self.chunks = []

    def bytes(self):
        return b"".join(self.chunks)


@ffi.callback("int(void *, const char *, size_t)", error=-1)
def _write(ctx, data, length):
    ffi.from_handle(ctx).chunks.append(ffi.buffer(data, length)[:])
    return 0


def _collect(call, input_class):
    """Runs call(write, ctx, errp) and returns the bytes it wrote."""
    sink = _Sink()
    handle = ffi.new_handle(sink)
    errp = ffi.new("struct tpsim_error **")
    st = call(_write, handle, errp)
    if st != lib.TPSIM_OK:
        raise_error(st, errp, input_class)
    return sink.bytes()


def _int_option(name, value, low, high):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or not low <= value <= high:
        raise UsageError("%s: expected an integer from %d to %d, got %r"
                         % (name, low, high, value), lib.TPSIM_ERR_USAGE)
    return int(value)


def run(config, threads=None, symbolic=False, max_memory=None,
        max_trace=None):
    """Runs a config (a Config, a dict or a path) as `tpsim run` does and
    returns its tpsim.Trace, whose .run_result has what the C API's
    result says (the verdict, the warnings). threads None: the machine's
    cores (the trace is the same bytes at any count); max_memory and
    max_trace in bytes, None: 8 GiB and 1 GiB. A config the run refuses
    raises ConfigError; a budget, LimitError; a NaN, NumericError. A run
    that differs from its reference returns (trace.result.match is
    False)."""
    from ._trace import RunResult, Trace

    cfg = _config_of(config)
    opts = ffi.new("struct tpsim_run_options *")
    lib.tpsim_run_options_init(opts)
    if threads is not None:
        opts.threads = _int_option("threads", threads, 1, 256)
    if max_memory is not None:
        opts.max_memory = _int_option("max_memory", max_memory, 1,
                                      2 ** 63 - 1)
    if max_trace is not None:
        opts.max_trace = _int_option("max_trace", max_trace, 1, 2 ** 63 - 1)
    opts.symbolic = 1 if symbolic else 0
    resp = ffi.new("struct tpsim_result **")
    text = _collect(lambda w, c, e: lib.tpsim_run(cfg._handle, opts, w, c,
                                                  resp, e), ConfigError)
    result = RunResult(ffi.gc(resp[0], lib.tpsim_result_free))
    return Trace._parse(text, cfg.name + " (trace)", result)


def comm(config, sweep=None, **variables):
    """`tpsim comm --json` of a config over a sweep: sweep maps each
    variable to its values ({"hidden": [1024, 4096]}), every combination
    a point, in the order `tpsim comm --set` gives them (the first
    variable slowest); variables sets others to one value. Returns a
    list of dicts, one per point: the "points" of
    docs/comm.md's JSON."""
    cfg = _config_of(config)
    if variables:
        cfg = cfg.set(**variables)
    sweep = dict(sweep or {})
    names = list(sweep)
    points = []
    for combo in itertools.product(*(list(sweep[n]) for n in names)):
        points.append(cfg.set(**dict(zip(names, combo))) if names else cfg)
    if not 1 <= len(points) <= 4096:
        raise UsageError("comm: %d points in the sweep (expected 1 to 4096)"
                         % len(points), lib.TPSIM_ERR_USAGE)
    handles = ffi.new("const struct tpsim_config *[]",
                      [p._handle for p in points])
    text = _collect(lambda w, c, e: lib.tpsim_comm(
        handles, len(points), lib.TPSIM_COMM_JSON, w, c, e), ConfigError)
    return json.loads(text)["points"]
