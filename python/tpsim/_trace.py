"""Traces: read by the C API's one reader (every check of docs/trace.md),
their events and values through its accessors, their result through
Python's json (docs/python.md)."""
import html
import json
import os

import numpy as np

from ._config import _collect
from ._errors import (FixtureError, TraceError, UsageError, _string,
                      raise_error)
from ._ffi import ffi, lib


def _shape(fn, handle):
    dims = ffi.new("int64_t[4]")
    n = fn(handle, dims)
    return tuple(int(dims[i]) for i in range(n))


def _values(tensor, shape):
    """A trace tensor's values as a float32 array of its shape, or None
    when the trace has none (summary, none, symbolic)."""
    if not lib.tpsim_tensor_has_values(tensor):
        return None
    n = lib.tpsim_tensor_numel(tensor)
    out = np.empty(n, dtype=np.float32)
    got = ffi.new("size_t *")
    errp = ffi.new("struct tpsim_error **")
    st = lib.tpsim_tensor_values(tensor, ffi.from_buffer("float[]", out),
                                 n, got, errp)
    if st != lib.TPSIM_OK:
        raise_error(st, errp, TraceError)
    return out.reshape(shape)


def _equals(p, value):
    return p != ffi.NULL and ffi.string(p) == value


class Shard:
    """A rank's part of an event: .rank, .shape and .values (a numpy
    float32 array of that shape, None in a trace without values)."""

    __slots__ = ("rank", "shape", "values")

    def __init__(self, rank, shape, values):
        self.rank = rank
        self.shape = shape
        self.values = values

    def __repr__(self):
        return "tpsim.Shard(rank=%d, shape=%s)" % (self.rank, self.shape)


class Event:
    """One event of a trace (docs/trace.md, "Events"): .seq, .step (None
    at setup), .phase, .module, .kind, .op, .tensor, .mesh_dim (None for
    a compute event), .placements (one string per mesh dim), .groups (a
    list of lists of ranks; [] without "groups"), .global_shape,
    .bytes_per_rank, .dtype ("float32", "bfloat16" or "float16") and
    .ranks (Shards, in rank order; [] in a symbolic trace)."""

    def __init__(self, trace, handle):
        self._trace = trace  # keeps the C trace, which handle views, alive
        self._handle = handle
        ev = handle
        self.seq = int(lib.tpsim_event_seq(ev))
        step = int(lib.tpsim_event_step(ev))
        self.step = None if step < 0 else step
        self.phase = _string(lib.tpsim_event_phase(ev))
        self.module = _string(lib.tpsim_event_module(ev))
        self.kind = _string(lib.tpsim_event_kind(ev))
        self.op = _string(lib.tpsim_event_op(ev))
        self.tensor = _string(lib.tpsim_event_tensor(ev))
        self.mesh_dim = _string(lib.tpsim_event_mesh_dim(ev))
        self.placements = [
            _string(lib.tpsim_event_placement(ev, i))
            for i in range(lib.tpsim_event_placement_count(ev))]
        self.groups = [
            [int(lib.tpsim_event_group_rank(ev, g, k))
             for k in range(lib.tpsim_event_group_size(ev, g))]
            for g in range(lib.tpsim_event_group_count(ev))]
        self.global_shape = _shape(lib.tpsim_event_global_shape, ev)
        self.bytes_per_rank = int(lib.tpsim_event_bytes_per_rank(ev))
        self._ranks = None

    @property
    def dtype(self):
        return self._trace._event_json(self.seq).get("dtype", "float32")

    @property
    def note(self):
        return self._trace._event_json(self.seq).get("note")

    @property
    def recompute(self):
        """True for an event of a forward run again in backward
        ("recompute": "full"), False otherwise."""
        return self._trace._event_json(self.seq).get("recompute", False)

    @property
    def pipeline(self):
        """Under a pipeline (docs/pipeline.md), a dict of the event's
        "stage" (whose ranks ran it), "chunk", and when it has them
        "microbatch", "peer" (a send's or recv's other stage) and "slot"
        ([start, end] of the schedule's operation); None otherwise."""
        ev = self._trace._event_json(self.seq)
        if "stage" not in ev:
            return None
        return {k: ev[k] for k in ("stage", "chunk", "microbatch", "peer",
                                   "slot") if k in ev}

    @property
    def ranks(self):
        if self._ranks is None:
            ranks = []
            for r in range(lib.tpsim_event_rank_count(self._handle)):
                t = lib.tpsim_event_rank(self._handle, r)
                shape = _shape(lib.tpsim_tensor_shape, t)
                ranks.append(Shard(r, shape, _values(t, shape)))
            self._ranks = ranks
        return self._ranks

    def __repr__(self):
        return ("tpsim.Event(seq=%d, step=%s, phase=%r, module=%r, kind=%r, "
                "op=%r, tensor=%r)" % (self.seq, self.step, self.phase,
                                       self.module, self.kind, self.op,
                                       self.tensor))


class Mismatch:
    """One mismatch of trace.check (docs/design.md section 6): .pointer
    (the fixture's JSON Pointer; None for the closing "N more"), .expected
    and .got (the values as `tpsim check` writes them; None where there
    is no value), .seq (the trace event's; None outside events), .what
    and .line (what `tpsim check` prints after "FIXTURE: ")."""

    __slots__ = ("pointer", "expected", "got", "seq", "what", "line")

    def __init__(self, m):
        self.pointer = _string(m.pointer)
        self.expected = _string(m.expected)
        self.got = _string(m.got)
        self.seq = None if m.seq < 0 else int(m.seq)
        self.what = _string(m.what)
        self.line = _string(m.line)

    def __str__(self):
        return self.line

    def __repr__(self):
        return "tpsim.Mismatch(%r)" % self.line


@ffi.callback("void(void *, const struct tpsim_mismatch *)")
def _report(ctx, m):
    ffi.from_handle(ctx).append(Mismatch(m))


class Picture(str):
    """SVG text (`tpsim picture`'s) that Jupyter shows as a picture."""

    def _repr_svg_(self):
        return str(self)


class _Sections:
    """A result section by name (grads, params_after, ...): a read-only
    mapping from each name to its global numpy array."""

    def __init__(self, trace, section):
        self._trace = trace
        self._section = section
        self._cache = {}

    def keys(self):
        t = self._trace._handle
        s = self._section.encode()
        return [_string(lib.tpsim_trace_result_name(t, s, i))
                for i in range(lib.tpsim_trace_result_count(t, s))]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self.keys())

    def __contains__(self, name):
        return name in self.keys()

    def items(self):
        return [(k, self[k]) for k in self.keys()]

    def values(self):
        return [self[k] for k in self.keys()]

    def __getitem__(self, name):
        if name not in self._cache:
            t = lib.tpsim_trace_result_tensor(
                self._trace._handle, self._section.encode(),
                name.encode("utf-8"))
            if t == ffi.NULL:
                raise KeyError("%s has no %s[%r] (it has %s)"
                               % (self._trace.name, self._section, name,
                                  ", ".join(self.keys()) or "none"))
            self._cache[name] = _values(t, _shape(lib.tpsim_tensor_shape, t))
        return self._cache[name]

    def __repr__(self):
        return "{%s}" % ", ".join("%r: array%s" % (k, self[k].shape)
                                  for k in self.keys())


class Result:
    """A trace's "result" (docs/trace.md, "Result"): .match,
    .max_abs_diff (None when absent), .loss and .reference_loss (a list,
    one per step; [] in inference), .output and .reference_output (numpy
    arrays; None when absent), .grads, .reference_grads, .params_after
    and .reference_params_after (name -> numpy array), .comparison,
    .bounds (the figures, as the trace's dicts), .verdict, .diagnosis,
    .stopped."""

    def __init__(self, trace):
        r = trace._json()["result"]
        self._r = r
        self.match = bool(r.get("match", False))
        self.max_abs_diff = r.get("max_abs_diff")
        if self.max_abs_diff is not None:
            self.max_abs_diff = float(self.max_abs_diff)
        self.loss = [float(x) for x in r.get("loss", [])]
        self.reference_loss = [float(x) for x in r.get("reference_loss", [])]
        self.comparison = r.get("comparison")
        self.bounds = r.get("bounds")
        self.verdict = r.get("verdict")
        self.diagnosis = r.get("diagnosis")
        self.stopped = r.get("stopped")
        self.diverged_at = r.get("diverged_at")
        self.grads = _Sections(trace, "grads")
        self.reference_grads = _Sections(trace, "reference_grads")
        self.params_after = _Sections(trace, "params_after")
        self.reference_params_after = _Sections(trace,
                                                "reference_params_after")
        self._trace = trace

    def _output(self, section):
        t = lib.tpsim_trace_result_tensor(self._trace._handle,
                                          section.encode(), ffi.NULL)
        if t == ffi.NULL:
            return None
        return _values(t, _shape(lib.tpsim_tensor_shape, t))

    @property
    def output(self):
        return self._output("output")

    @property
    def reference_output(self):
        return self._output("reference_output")

    def __repr__(self):
        return "tpsim.Result(match=%r, max_abs_diff=%r)" % (
            self.match, self.max_abs_diff)


class RunResult:
    """What the C API's result of a run says (tpsim_result_*), beyond
    the trace: .verdict (tpsim run's summary line), .warnings,
    .tensor_peak_bytes."""

    def __init__(self, handle):
        self._handle = handle
        h = handle
        self.match = bool(lib.tpsim_result_match(h))
        self.max_abs_diff = float(lib.tpsim_result_max_abs_diff(h))
        self.verdict = _string(lib.tpsim_result_verdict(h))
        self.warnings = [_string(lib.tpsim_result_warning(h, i))
                         for i in range(lib.tpsim_result_warning_count(h))]
        self.tensor_peak_bytes = int(lib.tpsim_result_tensor_peak_bytes(h))


_EXPLAIN_FORMATS = ("text", "md")


def _default_tolerance(config):
    """The fallback's atol and rtol when the config gives none, as tpsim
    run takes them (docs/config.md): 1e-5 each, rtol 1.6e-2 with a
    bfloat16 role and 1e-3 with a float16 one."""
    dtype = config.get("dtype", {})
    roles = set(dtype.values()) if isinstance(dtype, dict) else {dtype}
    if "bfloat16" in roles:
        return 1e-5, 1.6e-2
    if "float16" in roles:
        return 1e-5, 1e-3
    return 1e-5, 1e-5


class Trace:
    """A tpsim trace (docs/trace.md), from tpsim.run or tpsim.load_trace.
    Immutable."""

    def __init__(self, handle, name, run_result=None):
        self._handle = handle
        self.name = name
        self.run_result = run_result
        self._tree = None
        self._bounds = None

    @classmethod
    def _parse(cls, text, name, run_result=None):
        out = ffi.new("struct tpsim_trace **")
        errp = ffi.new("struct tpsim_error **")
        st = lib.tpsim_trace_parse(text, len(text),
                                   name.encode("utf-8", "surrogateescape"),
                                   out, errp)
        if st != lib.TPSIM_OK:
                raise_error(st, errp, TraceError)
        return cls(ffi.gc(out[0], lib.tpsim_trace_free), name, run_result)

    def text(self):
        """The trace's bytes, as tpsim wrote them."""
        n = ffi.new("size_t *")
        p = lib.tpsim_trace_text(self._handle, n)
        return ffi.buffer(p, n[0])[:]

    def save(self, path):
        """Writes the trace's bytes to path."""
        with open(path, "wb") as f:
            f.write(self.text())

    def _json(self):
        if self._tree is None:
            self._tree = json.loads(self.text())
        return self._tree

    def _event_json(self, seq):
        return self._json()["events"][seq]

    @property
    def config(self):
        """The normalised config the trace embeds, as a dict."""
        return self._json()["config"]

    @property
    def mesh(self):
        return self._json()["mesh"]

    @property
    def comm_counts(self):
        """The trace's "comm": counts and bytes by op, phase, module and
        mesh dim."""
        return self._json()["comm"]

    @property
    def result(self):
        return Result(self)

    def __len__(self):
        return lib.tpsim_trace_event_count(self._handle)

    def event(self, seq):
        """The event with this seq."""
        if not 0 <= seq < len(self):
            raise IndexError("%s has events 0 to %d, not %r"
                             % (self.name, len(self) - 1, seq))
        return Event(self, lib.tpsim_trace_event(self._handle, seq))

    def events(self, step=None, phase=None, module=None, kind=None, op=None,
               tensor=None):
        """Yields the events, in order, that have each given value (None:
        any): step (an int; setup events have none), phase ("setup",
        "forward", "backward", "optimizer"), module, kind ("compute",
        "collective", "layout"), op, tensor."""
        want = [(lib.tpsim_event_phase, phase), (lib.tpsim_event_module,
                                                  module),
                (lib.tpsim_event_kind, kind), (lib.tpsim_event_op, op),
                (lib.tpsim_event_tensor, tensor)]
        want = [(f, v.encode("utf-8")) for f, v in want if v is not None]
        t = self._handle
        # Event i is found by walking the list (cJSON): walk it once.
        for i in range(lib.tpsim_trace_event_count(t)):
            ev = lib.tpsim_trace_event(t, i)
            if step is not None and lib.tpsim_event_step(ev) != step:
                continue
            if not all(_equals(f(ev), v) for f, v in want):
                continue
            yield Event(self, ev)

    def _bounds_handle(self):
        """The C API's bounds of this trace, made once (about the cost of
        one reference run); raises as tpsim_trace_bounds does."""
        if self._bounds is None:
            out = ffi.new("struct tpsim_bounds **")
            errp = ffi.new("struct tpsim_error **")
            st = lib.tpsim_trace_bounds(self._handle, 0, out, errp)
            if st != lib.TPSIM_OK:
                raise_error(st, errp, TraceError)
            self._bounds = ffi.gc(out[0], lib.tpsim_bounds_free)
        return self._bounds

    def bound(self, event, rank):
        """The bound of each element of rank's shard at event (an Event
        or a seq): a float32 array of the shard's shape, 2 e, twice the
        error bound of the element (docs/numerics.md), what computing
        the same sums in another order can explain; 0 where the value is
        exact. Raises TraceError, saying why, for an event without one
        (a partial value, an event before the last of its tensor in its
        step and phase, a bound that says nothing)."""
        if not isinstance(event, Event):
            event = self.event(event)
        b = self._bounds_handle()
        if not 0 <= rank < len(event.ranks):
            raise UsageError("rank %r out of range: event seq %d has "
                             "ranks 0 to %d" % (rank, event.seq,
                                                len(event.ranks) - 1),
                             lib.TPSIM_ERR_USAGE)
        shape = event.ranks[rank].shape
        out = np.empty(int(np.prod(shape, dtype=np.int64)), np.float32)
        n = ffi.new("size_t *")
        errp = ffi.new("struct tpsim_error **")
        st = lib.tpsim_bounds_shard(b, event._handle, rank,
                                    ffi.from_buffer("float[]", out),
                                    out.size, n, errp)
        if st != lib.TPSIM_OK:
            raise_error(st, errp, TraceError)
        return out.reshape(shape)

    def shard_bound(self, event, rank):
        """What assert_shard_close allows of rank's shard at event: a
        bound (an array of the shard's shape, or a number) and the words
        that name it in a failure. The trace's bound where it has one
        (bound()), else the config's tolerance: atol + rtol x the
        shard's largest magnitude."""
        given = self.config.get("tolerance", {})
        values = event.ranks[rank].values
        try:
            bound = self.bound(event, rank)
        except TraceError as e:
            why = e.message
        else:
            if not given:
                return bound, "the trace's bound"
            # A tolerance the config gives is slack on top of the bound
            # (docs/config.md), element by element.
            atol, rtol = given.get("atol", 0.0), given.get("rtol", 0.0)
            return (bound + atol + rtol * np.abs(values),
                    "the trace's bound + the config's tolerance (atol %g "
                    "+ rtol %g x |value|)" % (atol, rtol))
        atol, rtol = _default_tolerance(self.config)
        atol, rtol = given.get("atol", atol), given.get("rtol", rtol)
        top = float(np.max(np.abs(values))) if values.size else 0.0
        return (atol + rtol * top,
                "the config's tolerance (atol %g + rtol %g x %g; %s)"
                % (atol, rtol, top, why))

    def check(self, fixture):
        """Compares the trace with a fixture (a path, or a dict),
        `tpsim check`'s way; returns the Mismatches ([]: it matches). A
        fixture that is not one raises FixtureError."""
        mismatches = []
        handle = ffi.new_handle(mismatches)
        count = ffi.new("size_t *")
        errp = ffi.new("struct tpsim_error **")
        if isinstance(fixture, dict):
            text = json.dumps(fixture).encode("utf-8")
            st = lib.tpsim_check_parse(self._handle, text, len(text),
                                       b"<dict>", _report, handle, count,
                                       errp)
        else:
            st = lib.tpsim_check(self._handle, os.fsencode(fixture),
                                 _report, handle, count, errp)
        if st != lib.TPSIM_OK:
                raise_error(st, errp, FixtureError)
        return mismatches

    def explain(self, format="text", step=None, module=None, phase=None,
                max_values=16, heading_level=None, pictures=False):
        """`tpsim explain`'s text (format "text") or Markdown ("md")."""
        if format not in _EXPLAIN_FORMATS:
            raise UsageError("explain: format %r (expected text or md)"
                             % (format,), lib.TPSIM_ERR_USAGE)
        o = ffi.new("struct tpsim_explain_options *")
        lib.tpsim_explain_options_init(o)
        keep = []
        o.markdown = 1 if format == "md" else 0
        if step is not None:
            o.step = step
        if module is not None:
            keep.append(ffi.new("char[]", module.encode("utf-8")))
            o.module = keep[-1]
        if phase is not None:
            keep.append(ffi.new("char[]", phase.encode("utf-8")))
            o.phase = keep[-1]
        o.max_values = max_values
        if heading_level is not None:
            o.heading_level = heading_level
        o.pictures = 1 if pictures else 0
        return _collect(lambda w, c, e: lib.tpsim_explain(
            self._handle, o, w, c, e), TraceError).decode("utf-8")

    def picture(self, tensor, event=None):
        """`tpsim picture --tensor TENSOR [--event SEQ]`'s SVG, as a str
        that Jupyter shows: which ranks hold which block of the tensor at
        the event with that seq (None: the tensor's first event)."""
        seq = -1 if event is None else (event.seq if isinstance(event, Event)
                                        else event)
        name = tensor.encode("utf-8")
        return Picture(_collect(lambda w, c, e: lib.tpsim_picture_svg(
            self._handle, name, seq, w, c, e), UsageError).decode("utf-8"))

    def timeline(self):
        """`tpsim timeline`'s Chrome Trace Event JSON, as a str."""
        return _collect(lambda w, c, e: lib.tpsim_timeline(
            self._handle, w, c, e), TraceError).decode("utf-8")

    def view(self):
        """`tpsim view`'s self-contained HTML page, as a str."""
        return _collect(lambda w, c, e: lib.tpsim_view(
            self._handle, w, c, e), TraceError).decode("utf-8")

    def _repr_markdown_(self):
        return self.explain(format="md")

    def _repr_html_(self):
        # The viewer is a whole page with its own scripts and styles: in a
        # notebook it goes into an iframe, so that it neither reaches nor
        # is reached by the notebook's.
        return ('<iframe srcdoc="%s" style="width: 100%%; height: 640px; '
                'border: 0"></iframe>' % html.escape(self.view(), quote=True))

    def __repr__(self):
        return "tpsim.Trace(%r, %d events)" % (self.name, len(self))


def load_trace(path):
    """The trace in the file at path ("-": standard input), read and
    checked whole; a file that is not a trace raises TraceError naming
    the file and the JSON Pointer of the first problem."""
    path = os.fspath(path)
    out = ffi.new("struct tpsim_trace **")
    errp = ffi.new("struct tpsim_error **")
    st = lib.tpsim_trace_load(os.fsencode(path), out, errp)
    if st != lib.TPSIM_OK:
        raise_error(st, errp, TraceError)
    return Trace(ffi.gc(out[0], lib.tpsim_trace_free), os.fsdecode(path))
