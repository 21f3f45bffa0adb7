"""tpsim configs from real PyTorch objects: an nn.Module, the plan you
give parallelize_module, your input tensor, loss and optimizer.

    import tpsim
    from tpsim.torch import config_from_module

    model = nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 1))
    d = config_from_module(model, {"0": "colwise", "2": "rowwise"},
                           (3, 2), ("dp", "tp"), input=torch.randn(9, 10),
                           dp_dim="dp")
    trace = tpsim.run(tpsim.Config.from_dict(d))

config_from_module returns a config as a dict (docs/config.md), which
starts from the module's own weights: every parameter is in "params",
float32 value for value. docs/python.md ("Configs from a torch module")
is the guide: which modules and plan forms it reads, and why each
refusal is one.

The plan's PyTorch style objects (ColwiseParallel, RowwiseParallel,
SequenceParallel, PrepareModuleInput, PrepareModuleOutput, and their
Shard and Replicate layouts, torch.distributed.tensor.parallel of torch
2.x) are read by class name and attributes, so this module imports none
of them and works with a torch that has none (Debian's 1.13).
"""
import fnmatch
import numbers

import torch
from torch import nn

from ._errors import ConfigError
from ._ffi import lib

__all__ = ["ModuleError", "config_from_module"]


class ModuleError(ConfigError):
    """A module, plan, input, loss or optimizer that config_from_module
    cannot turn into a config. str(e) and e.message say what and where;
    e.path is the module's dotted name (as named_modules() gives it; ""
    for the module itself) or None when the trouble is not a module's;
    e.what is the offending object's type name (or None). There is no
    file yet: e.file and e.pointer are None."""

    def __init__(self, message, path=None, what=None):
        super().__init__(message, lib.TPSIM_ERR_INPUT, None, None, message)
        self.path = path
        self.what = what


def _fail(message, path=None, what=None):
    raise ModuleError(message, path, what)


def _where(path):
    return repr(path) if path else "the module itself"


# The modules tpsim simulates, by PyTorch class: the config entry each
# gives (docs/config.md, "Modules"), or a ModuleError naming the option
# tpsim cannot follow.
def _linear(m, path):
    return {"type": "linear", "in_features": m.in_features,
            "out_features": m.out_features, "bias": m.bias is not None}


def _relu(m, path):
    return {"type": "relu"}


def _gelu(m, path):
    approximate = getattr(m, "approximate", "none")
    if approximate != "none":
        _fail("%s: GELU(approximate=%r): tpsim's gelu is the erf form, "
              "GELU(approximate='none')" % (_where(path), approximate),
              path, "GELU")
    return {"type": "gelu"}


def _layernorm(m, path):
    shape = tuple(m.normalized_shape)
    if len(shape) != 1:
        _fail("%s: LayerNorm over %d dims %s: tpsim normalizes the last "
              "dim only" % (_where(path), len(shape), list(shape)), path,
              "LayerNorm")
    if not m.elementwise_affine:
        _fail("%s: LayerNorm(elementwise_affine=False): tpsim's layernorm "
              "has a weight" % _where(path), path, "LayerNorm")
    return {"type": "layernorm", "dim": shape[0], "eps": float(m.eps),
            "bias": m.bias is not None}


def _embedding(m, path):
    for key, plain in (("padding_idx", None), ("max_norm", None),
                       ("scale_grad_by_freq", False), ("sparse", False)):
        value = getattr(m, key, plain)
        if value != plain:
            _fail("%s: Embedding(%s=%r): tpsim's embedding is a plain "
                  "lookup (%s=%r)" % (_where(path), key, value, key, plain),
                  path, "Embedding")
    return {"type": "embedding", "num_embeddings": m.num_embeddings,
            "embedding_dim": m.embedding_dim}


_LEAVES = (
    (nn.Linear, _linear),
    (nn.ReLU, _relu),
    (nn.GELU, _gelu),
    (nn.LayerNorm, _layernorm),
    (nn.Embedding, _embedding),
)

# Containers whose children run one after the other, in the order they
# were added: what nn.Sequential does, and what a ModuleList is for.
_IN_ORDER = (nn.Sequential, nn.ModuleList)


def _leaf_rule(m):
    """The rule of m's class: its own, or that of the class it derives
    from when it keeps that class's forward (a subclass that only adds
    hooks, as seed 004's LinearWrapper, computes the same)."""
    for cls, rule in _LEAVES:
        if type(m) is cls or (isinstance(m, cls) and
                              type(m).forward is cls.forward):
            return rule
    return None


def _supported_names():
    return ", ".join(cls.__name__ for cls, _ in _LEAVES + tuple(
        (c, None) for c in _IN_ORDER))


def _modules(module, assume_in_order):
    """The model list: one entry per leaf of module, named by its dotted
    path, in the order named_modules() visits them (the order modules
    are added, which is the order a Sequential runs them)."""
    out = []
    leaves = {}
    # remove_duplicate=False: a module used twice (one ReLU object at two
    # places of a Sequential) runs twice.
    for path, m in module.named_modules(remove_duplicate=False):
        rule = _leaf_rule(m)
        children = len(m._modules) > 0
        if rule is not None and not children:
            entry = rule(m, path)
            leaves[path] = (m, entry)
            out.append((path, m, entry))
            continue
        if not children and not isinstance(m, _IN_ORDER):
            _fail("%s is a %s, which tpsim does not simulate (it "
                  "simulates %s)" % (_where(path), type(m).__name__,
                                     _supported_names()), path,
                  type(m).__name__)
        if rule is not None:
            _fail("%s is a %s with modules inside it, which tpsim does not "
                  "simulate" % (_where(path), type(m).__name__), path,
                  type(m).__name__)
        if not isinstance(m, _IN_ORDER) and not assume_in_order:
            _fail("%s is a %s: tpsim cannot read its forward(); only "
                  "Sequential and ModuleList run their modules in order "
                  "(assume_in_order=True takes every container to run its "
                  "modules in the order they were added: check that its "
                  "forward does)" % (_where(path), type(m).__name__),
                  path, type(m).__name__)
        own = [n for n, p in m._parameters.items() if p is not None]
        if own:
            _fail("%s (a %s) holds parameters of its own (%s), used by a "
                  "forward() tpsim cannot read" % (
                      _where(path), type(m).__name__, ", ".join(own)),
                  path, type(m).__name__)
    return out, leaves


def _check_name(path, root_name):
    name = path or root_name
    for part in name.split("."):
        if not part or not all(c.isascii() and (c.isalnum() or c in "_-")
                               for c in part):
            _fail("%s: tpsim names modules with dot-separated parts of "
                  "ASCII letters, digits, '_' and '-' (docs/config.md)"
                  % _where(path), path, None)
    return name


# Plan: strings and dicts are tpsim's own (docs/config.md, "Plan");
# PyTorch's style objects are read by class name and attributes.

_STYLE_CLASSES = ("ColwiseParallel", "RowwiseParallel", "SequenceParallel",
                  "PrepareModuleInput", "PrepareModuleOutput",
                  "PrepareModuleInputOutput")


def _class_names(obj):
    return [c.__name__ for c in type(obj).__mro__]


def _style_class(obj):
    for name in _class_names(obj):
        if name in _STYLE_CLASSES:
            return name
    return None


def _layout(p, what, path):
    """A DTensor placement (Shard(d), Replicate()) or a tpsim layout
    string as a tpsim layout."""
    if isinstance(p, str):
        return p
    names = _class_names(p)
    if "Shard" in names and isinstance(getattr(p, "dim", None), int) \
            and "_StridedShard" not in names:
        return "shard(%d)" % p.dim
    if "Replicate" in names:
        return "replicate"
    _fail("%s: %s %r: tpsim's layouts are Shard(d) and Replicate() (a "
          "Partial stays inside a module)" % (_where(path), what, p),
          path, type(p).__name__)


def _one_layout(layouts, what, path):
    """The one layout of a module's one input or output: a placement, or
    a tuple of one (further items None, as for inputs that are not
    tensors). None when not given."""
    if layouts is None:
        return None
    if isinstance(layouts, (tuple, list)):
        if len(layouts) == 0:
            return None
        if any(x is not None for x in layouts[1:]):
            _fail("%s: %s has %d layouts: a tpsim module has one input "
                  "and one output" % (_where(path), what, len(layouts)),
                  path, None)
        layouts = layouts[0]
        if layouts is None:
            return None
    return _layout(layouts, what, path)


def _need(obj, attrs, cls, path):
    missing = [a for a in attrs if not hasattr(obj, a)]
    if missing:
        _fail("%s: this %s has no %s: tpsim reads the styles of torch "
              ">= 2.2 (torch.distributed.tensor.parallel); write the style "
              "as a tpsim string instead (docs/config.md, \"Plan\")"
              % (_where(path), cls, ", ".join(missing)), path, cls)


def _torch_style(obj, cls, m, path, rowwise_bias):
    """PyTorch's style object obj, on module m, as a tpsim style."""
    kind = type(m).__name__
    if cls in ("ColwiseParallel", "RowwiseParallel"):
        _need(obj, ("input_layouts", "output_layouts"), cls, path)
        layout_in = _one_layout(obj.input_layouts, cls + ".input_layouts",
                                path)
        layout_out = _one_layout(obj.output_layouts,
                                 cls + ".output_layouts", path)
        if isinstance(m, nn.Embedding):
            if cls == "ColwiseParallel":
                _fail("%s: ColwiseParallel on an Embedding splits its "
                      "embedding_dim, which tpsim does not simulate; "
                      "RowwiseParallel splits its vocabulary (tpsim's "
                      "\"vocab\")" % _where(path), path, kind)
            style = {"style": "vocab"}
            if layout_in not in (None, "replicate"):
                # RowwiseParallel() defaults to Shard(-1) before it
                # knows its module: ids given whole on every rank would
                # be read as shards of the sequence and gathered.
                _fail("%s: RowwiseParallel with input_layouts %s on an "
                      "Embedding: tpsim's vocab embedding looks up token "
                      "ids replicated on every rank; give "
                      "RowwiseParallel(input_layouts=Replicate()) (its "
                      "default, Shard(-1), reads each rank's ids as a "
                      "shard of the sequence)" % (_where(path), layout_in),
                      path, kind)
            if layout_out not in (None, "replicate"):
                style["output"] = layout_out
            return style if len(style) > 1 else "vocab"
        if not isinstance(m, nn.Linear):
            _fail("%s: %s applies to a Linear or an Embedding, not a %s"
                  % (_where(path), cls, kind), path, kind)
        colwise = cls == "ColwiseParallel"
        style = {"style": "colwise" if colwise else "rowwise"}
        defaults = ("replicate", "shard(-1)") if colwise else \
            ("shard(-1)", "replicate")
        if layout_in not in (None, defaults[0]):
            style["input"] = layout_in
        if layout_out not in (None, defaults[1]):
            style["output"] = layout_out
        if not colwise and m.bias is not None:
            # DTensor adds a Replicate bias to the Partial output by
            # turning it into a Partial, b/N on each rank
            # (docs/design.md section 2: partial_split).
            style["bias"] = rowwise_bias or "partial_split"
        return style if len(style) > 1 else style["style"]
    if cls == "SequenceParallel":
        if not isinstance(m, nn.LayerNorm):
            _fail("%s: SequenceParallel on a %s: tpsim runs a LayerNorm "
                  "sequence parallel" % (_where(path), kind), path, kind)
        if hasattr(obj, "sequence_sharding"):
            layout = _one_layout(obj.sequence_sharding,
                                 "SequenceParallel.sequence_sharding", path)
        elif hasattr(obj, "sequence_dim"):
            layout = "shard(%d)" % obj.sequence_dim
        else:
            _need(obj, ("sequence_sharding",), cls, path)
        if layout in (None, "shard(1)"):
            return "sequence"
        return {"style": "sequence", "input": layout, "output": layout}
    if cls == "PrepareModuleInput":
        _need(obj, ("input_layouts", "desired_input_layouts"), cls, path)
        if getattr(obj, "input_kwarg_layouts", None):
            _fail("%s: PrepareModuleInput(input_kwarg_layouts=...): a "
                  "tpsim module takes one input" % _where(path), path,
                  kind)
        have = _one_layout(obj.input_layouts,
                           "PrepareModuleInput.input_layouts", path)
        want = _one_layout(obj.desired_input_layouts,
                           "PrepareModuleInput.desired_input_layouts", path)
        if have is None:
            return None
        return {"style": "prepare_input", "input": have,
                "desired_input": want or have}
    if cls == "PrepareModuleOutput":
        _need(obj, ("output_layouts", "desired_output_layouts"), cls, path)
        have = _one_layout(obj.output_layouts,
                           "PrepareModuleOutput.output_layouts", path)
        want = _one_layout(obj.desired_output_layouts,
                           "PrepareModuleOutput.desired_output_layouts",
                           path)
        if have is None:
            return None
        return {"style": "prepare_output", "output": have,
                "desired_output": want or have}
    _fail("%s: PrepareModuleInputOutput: a tpsim module takes one style; "
          "give the input's layouts to the module and the output's to the "
          "module after it" % _where(path), path, kind)


def _style(value, m, path, rowwise_bias):
    """A plan value for module m: a tpsim string or dict, or PyTorch's
    style object. None: nothing to do (PrepareModuleInput without
    layouts)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return dict(value)
    cls = _style_class(value)
    if cls is None:
        _fail("%s: a plan value is a tpsim style string, a tpsim style "
              "dict or one of PyTorch's %s; got a %s" % (
                  _where(path), ", ".join(_STYLE_CLASSES),
                  type(value).__name__), path, type(value).__name__)
    return _torch_style(value, cls, m, path, rowwise_bias)


def _resolve(key, names):
    """The paths that plan key matches, as parallelize_module matches
    them: fnmatch on each dot-separated part."""
    parts = key.split(".")
    return [n for n in names if len(n.split(".")) == len(parts) and
            all(fnmatch.fnmatchcase(a, p) for a, p in zip(n.split("."),
                                                          parts))]


def _plan(plan, module, leaves, root_name, rowwise_bias):
    """tpsim's plan: each key resolved to the modules it matches (so the
    trace names them), each value translated."""
    if plan is None:
        return {}
    if not isinstance(plan, dict):
        # parallelize_module(module, mesh, ColwiseParallel()): the style
        # of the module itself.
        plan = {"": plan}
    names = [p for p, _ in module.named_modules(remove_duplicate=False)]
    out = {}
    by = {}
    for key, value in plan.items():
        if not isinstance(key, str):
            _fail("plan key %r: a plan key is a module path (a string)"
                  % (key,), None, type(key).__name__)
        if key == "" or (key == root_name and "" in leaves):
            paths = [""]
        else:
            paths = _resolve(key, names)
        if not paths:
            _fail("plan key %r matches no module (the modules: %s)" % (
                key, ", ".join(p for p in names if p) or root_name),
                None, None)
        for path in paths:
            if path not in leaves:
                _fail("plan key %r matches %s, a %s: tpsim plans the "
                      "modules inside it, by their own paths" % (
                          key, _where(path),
                          type(module.get_submodule(path)).__name__),
                      path, None)
            if path in by:
                _fail("plan keys %r and %r both match %s" % (
                    by[path], key, _where(path)), path, None)
            by[path] = key
            style = _style(value, leaves[path][0], path, rowwise_bias)
            if style is not None:
                out[path or root_name] = style
    return out


# Tensors: float32 values, exactly (a float32 is a double, which JSON
# writes and tpsim reads back to the same float32).

_EXACT = (torch.float32, torch.float16, torch.bfloat16)


def _values(t, what, ids=False):
    """A tensor's values as nested lists: float32 (or narrower, which
    float32 holds exactly), or integers for token ids and class ids."""
    if "DTensor" in _class_names(t):
        # Its values would be this process's shard alone.
        _fail("%s is a DTensor: give the whole tensor (full_tensor()), "
              "and the module as it was before parallelize_module" % what,
              None, "DTensor")
    t = t.detach().cpu()
    if t.is_floating_point():
        if t.dtype not in _EXACT:
            _fail("%s is %s: tpsim computes in float32; give "
                  "tensor.float() if rounding it is what you want" % (
                      what, str(t.dtype).replace("torch.", "")), None,
                  "Tensor")
        t = t.to(torch.float32)
        if not bool(torch.isfinite(t).all()):
            _fail("%s holds a NaN or an Inf, which no config can" % what,
                  None, "Tensor")
        return t.tolist()
    if t.dtype in (torch.int64, torch.int32, torch.int16, torch.int8,
                   torch.uint8):
        return t.tolist()
    _fail("%s is %s: tpsim reads float32 values or integer ids" % (
        what, str(t.dtype).replace("torch.", "")), None, "Tensor")


def _data(value, what):
    """Input or target: a tensor (its values), a shape (tpsim's init
    makes the values), or tpsim's dict, in which a tensor may stand for
    "values"."""
    if isinstance(value, torch.Tensor):
        return {"values": _values(value, what)}
    if isinstance(value, dict):
        d = dict(value)
        if isinstance(d.get("values"), torch.Tensor):
            d["values"] = _values(d["values"], what)
        return d
    if isinstance(value, (tuple, list, torch.Size)) and all(
            isinstance(n, numbers.Integral) for n in value):
        return {"shape": [int(n) for n in value]}
    _fail("%s is a tensor, a shape or tpsim's dict (docs/config.md); got "
          "a %s" % (what, type(value).__name__), None, type(value).__name__)


def _loss(loss):
    if loss is None or isinstance(loss, str):
        return loss
    names = _class_names(loss)
    reduction = getattr(loss, "reduction", "mean")
    if "MSELoss" in names and reduction == "mean":
        return "mse"
    if "CrossEntropyLoss" in names and reduction == "mean" and \
            getattr(loss, "weight", None) is None and \
            getattr(loss, "label_smoothing", 0.0) == 0.0:
        return "cross_entropy"
    _fail("loss %r: tpsim's losses are \"mse\" (MSELoss()), "
          "\"cross_entropy\" (CrossEntropyLoss() without weight or label "
          "smoothing) and \"sum\" (output.sum())" % (loss,), None,
          type(loss).__name__)


def _number(v):
    return float(v) if isinstance(v, numbers.Real) and not isinstance(
        v, bool) else v


def _optimizer(opt, module):
    """tpsim's optimizer dict: given as one, or read from a torch.optim
    SGD, AdamW or Adam (with weight_decay 0, which AdamW's formula then
    equals) over the module's parameters."""
    if opt is None or isinstance(opt, dict):
        return opt
    kind = type(opt).__name__
    groups = getattr(opt, "param_groups", None)
    if kind not in ("SGD", "AdamW", "Adam") or groups is None:
        _fail("optimizer %s: tpsim's optimizers are SGD and AdamW (and "
              "Adam without weight decay); or give tpsim's dict" % kind,
              None, kind)
    if len(groups) != 1:
        _fail("optimizer %s has %d parameter groups: tpsim's has one, "
              "for every parameter" % (kind, len(groups)), None, kind)
    g = groups[0]
    mine = {id(p) for p in module.parameters()}
    theirs = {id(p) for p in g["params"]}
    if mine != theirs:
        _fail("optimizer %s does not hold exactly the module's parameters "
              "(%d of its %d, and %d others): tpsim updates every "
              "parameter" % (kind, len(mine & theirs), len(mine),
                             len(theirs - mine)), None, kind)
    for key in ("maximize", "amsgrad"):
        if g.get(key):
            _fail("optimizer %s(%s=True): not in tpsim's formulas" % (
                kind, key), None, kind)
    if kind == "SGD":
        d = {"type": "sgd"}
        for key in ("lr", "momentum", "dampening", "weight_decay"):
            d[key] = _number(g[key])
        d["nesterov"] = bool(g["nesterov"])
        return d
    if kind == "Adam" and g["weight_decay"] != 0:
        _fail("optimizer Adam(weight_decay=%r): Adam adds the decay to the "
              "gradient, which tpsim does not simulate; AdamW decays the "
              "weight" % g["weight_decay"], None, kind)
    return {"type": "adamw", "lr": _number(g["lr"]),
            "betas": [_number(b) for b in g["betas"]],
            "eps": _number(g["eps"]),
            "weight_decay": _number(g["weight_decay"])}


def _params(module, leaves, root_name, training):
    """Every parameter by its tpsim name: the module's weights, value for
    value."""
    params = {}
    seen = {}
    for path, (m, _) in leaves.items():
        for pname, p in m._parameters.items():
            if p is None:
                continue
            name = "%s.%s" % (path or root_name, pname)
            if id(p) in seen:
                _fail("%s is %s: tpsim gives every module parameters of "
                      "its own (no tied weights)" % (name, seen[id(p)]),
                      path, type(m).__name__)
            seen[id(p)] = name
            if training and not p.requires_grad:
                _fail("%s does not require a gradient: tpsim trains every "
                      "parameter" % name, path, type(m).__name__)
            params[name] = _values(p, name)
    return params


def config_from_module(module, plan, mesh_shape, dim_names, input, *,
                       tp_dim=None, dp_dim=None, mode=None, loss=None,
                       target=None, optimizer=None, steps=None,
                       rowwise_bias=None, assume_in_order=False,
                       root_name="model", **config):
    """The tpsim config (a dict, docs/config.md) that simulates module
    under plan on a mesh of mesh_shape named dim_names.

    module: an nn.Module of Linear, ReLU, GELU, LayerNorm and Embedding
        in Sequential and ModuleList containers; each becomes a module
        of tpsim's model list named by its path in named_modules()
        ("0", "mlp.fc1"), in that order. assume_in_order=True takes any
        other container to run its modules in the order they were added.
        A leaf module itself is named root_name. Every parameter goes
        into "params" as it is, so the run starts from these weights.
    plan: what parallelize_module takes: a dict of module path patterns
        (fnmatch on each dot-separated part) to styles, or one style for
        the module itself. A style is a tpsim string ("colwise") or dict
        ({"style": "rowwise", "bias": "rank0"}), or PyTorch's
        ColwiseParallel, RowwiseParallel, SequenceParallel,
        PrepareModuleInput or PrepareModuleOutput. Keys are resolved
        here, so the config's plan names each module. A RowwiseParallel
        adds its bias as DTensor does, b/N on each rank before the
        reduction ("partial_split"), unless rowwise_bias says otherwise.
    input: the input tensor (its values), a shape (tpsim's init makes
        the values), or tpsim's input dict, where a tensor may stand
        for "values". target likewise.
    mode: "inference" or "training"; by default training when loss,
        target, optimizer or steps is given.
    loss: "mse", "sum", "cross_entropy", nn.MSELoss() or
        nn.CrossEntropyLoss(). optimizer: tpsim's dict, or a
        torch.optim.SGD, AdamW or Adam (no weight decay) over the
        module's parameters.
    config: any other top-level key of the config, as it is ("dp_grad",
        "dtype", "tolerance", "trace", "inject", ...).

    Raises ModuleError (a tpsim.ConfigError) naming the module's path and
    type for what tpsim does not simulate; tpsim.Config.from_dict checks
    the rest (sizes that do not fit, a style a module cannot take).
    """
    if not isinstance(module, nn.Module):
        _fail("module is a %s, not an nn.Module" % type(module).__name__,
              None, type(module).__name__)
    training_keys = {"loss": loss, "target": target, "optimizer": optimizer,
                     "steps": steps}
    given = [k for k, v in training_keys.items() if v is not None]
    if mode is None:
        mode = "training" if given else "inference"
    elif mode != "training" and given:
        _fail("%s given with mode=%r: they are training's" % (
            ", ".join(given), mode), None, None)
    reserved = {"tpsim", "mesh", "tp_dim", "dp_dim", "model", "plan",
                "input", "params", "mode", "steps", "loss", "target",
                "optimizer"}
    clash = sorted(reserved & set(config))
    if clash:
        _fail("%s: give %s as config_from_module's own argument" % (
            ", ".join(clash), "it" if len(clash) == 1 else "them"),
            None, None)

    entries, leaves = _modules(module, assume_in_order)
    if not entries:
        _fail("%s holds no module tpsim simulates" % type(module).__name__,
              "", type(module).__name__)
    model = []
    for path, _, entry in entries:
        model.append(dict({"name": _check_name(path, root_name)}, **entry))

    d = {"tpsim": 1,
         "mesh": {"shape": [int(n) for n in mesh_shape],
                  "dim_names": [str(n) for n in dim_names]}}
    if tp_dim is not None:
        d["tp_dim"] = tp_dim
    if dp_dim is not None:
        d["dp_dim"] = dp_dim if isinstance(dp_dim, str) else list(dp_dim)
    d["model"] = model
    d["plan"] = _plan(plan, module, leaves, root_name, rowwise_bias)
    d["input"] = _data(input, "input")
    d["params"] = _params(module, leaves, root_name, mode == "training")
    d["mode"] = mode
    if steps is not None:
        d["steps"] = steps
    if loss is not None:
        d["loss"] = _loss(loss)
    if target is not None:
        d["target"] = _data(target, "target")
    if optimizer is not None:
        d["optimizer"] = _optimizer(optimizer, module)
    d.update(config)
    return d
