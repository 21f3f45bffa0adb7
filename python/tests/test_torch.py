"""tpsim.torch.config_from_module: torch modules, plans, inputs, losses
and optimizers as tpsim configs, each expected dict written by hand from
docs/config.md, and runs compared with torch computing the same model.

PyTorch's style objects are torch_styles' stand-ins here (Debian's torch
1.13 has none); the last test reads the real ones where torch has them.
"""
import collections
import json

import numpy as np
import pytest
import torch
from torch import nn

import tpsim
from conftest import root_path
from torch_styles import (ColwiseParallel, ColwiseParallel20, Partial,
                          PairwiseParallel, PrepareModuleInput,
                          PrepareModuleInputOutput, PrepareModuleOutput,
                          Replicate, RowwiseParallel, SequenceParallel, Shard)
from tpsim.torch import ModuleError, config_from_module


def seed004_model():
    """Seed 004's DP + TP script: its model, DDP over mesh["col"] (dim 0,
    3 ranks), parallelize_module over mesh["row"] (dim 1, 2 ranks) with
    {"0": ColwiseParallel(), "2": RowwiseParallel()}, SGD(lr=0.01),
    loss output.sum(), 10 steps on one batch of 3 rows per dp rank,
    loaded on each tp group's root and broadcast."""
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 1))
    x = torch.randn(9, 10)
    return model, x


def seed004_config(model, x):
    return config_from_module(
        model, {"0": ColwiseParallel(), "2": RowwiseParallel()}, (3, 2),
        ("col", "row"), input={"values": x, "loaded_on": "tp_root"},
        tp_dim="row", dp_dim="col", loss="sum",
        optimizer=torch.optim.SGD(model.parameters(), lr=0.01), steps=10,
        dp_grad="ddp")


def test_seed004_script_becomes_the_examples_config():
    model, x = seed004_model()
    d = seed004_config(model, x)
    example = json.load(open(root_path("examples", "seed004_ddp_tp",
                                       "config.json")))
    # What the script says, as the hand-written example says it.
    for key in ("mesh", "tp_dim", "dp_dim", "mode", "loss", "dp_grad",
                "steps"):
        assert d[key] == example[key], key
    assert d["input"]["loaded_on"] == example["input"]["loaded_on"]
    assert d["optimizer"]["type"] == example["optimizer"]["type"]
    assert d["optimizer"]["lr"] == example["optimizer"]["lr"]
    # Its own model: the Sequential's children by their names.
    assert d["model"] == [
        {"name": "0", "type": "linear", "in_features": 10,
         "out_features": 10, "bias": True},
        {"name": "1", "type": "relu"},
        {"name": "2", "type": "linear", "in_features": 10,
         "out_features": 1, "bias": True},
    ]
    # DTensor's rowwise adds b/N on each rank (docs/design.md section 2).
    assert d["plan"] == {"0": "colwise",
                         "2": {"style": "rowwise", "bias": "partial_split"}}
    assert d["optimizer"] == {"type": "sgd", "lr": 0.01, "momentum": 0.0,
                              "dampening": 0.0, "weight_decay": 0.0,
                              "nesterov": False}
    assert sorted(d["params"]) == ["0.bias", "0.weight", "2.bias",
                                   "2.weight"]
    assert d["input"]["values"] == x.tolist()


def test_seed004_runs_equal_to_its_reference_and_to_torch():
    model, x = seed004_model()
    d = seed004_config(model, x)
    trace = tpsim.run(tpsim.Config.from_dict(d))
    assert trace.result.match is True
    # The trace starts from the module's weights, bit for bit.
    params = json.loads(trace.text())["params"]
    for name, p in model.named_parameters():
        np.testing.assert_array_equal(
            np.array(params[name]["values"], np.float32),
            p.detach().numpy(), err_msg=name)
    # DDP over 3 dp ranks of loss output.sum() on 3 rows each: the
    # average of the local gradients is the gradient of sum / 3 over
    # the whole batch, and the run's loss the mean of the local sums.
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    losses = []
    for _ in range(10):
        loss = model(x).sum() / 3
        losses.append(loss.item())
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("max |loss - torch's|:",
          np.max(np.abs(np.array(trace.result.loss) - losses)))
    np.testing.assert_allclose(trace.result.loss, losses, rtol=1e-5,
                               atol=1e-6)
    for name, p in model.named_parameters():
        np.testing.assert_allclose(trace.result.params_after[name],
                                   p.detach().numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)


def test_a_transformer_mlp_trains_as_torch_trains_it():
    # Every leaf type but the embedding, AdamW read from torch's, and
    # MSELoss: tpsim's reference is torch's computation, step for step.
    torch.manual_seed(1)
    model = nn.Sequential(collections.OrderedDict(
        ln=nn.LayerNorm(8, eps=1e-3),
        fc1=nn.Linear(8, 16), act=nn.GELU(), fc2=nn.Linear(16, 8)))
    with torch.no_grad():
        model.ln.weight.uniform_(0.5, 1.5)
        model.ln.bias.uniform_(-0.5, 0.5)
    x, y = torch.randn(2, 3, 8), torch.randn(2, 3, 8)
    opt = torch.optim.AdamW(model.parameters(), lr=0.01,
                            weight_decay=0.1)
    d = config_from_module(model, {"fc1": "colwise", "fc2": "rowwise"},
                           (2,), ("tp",), input=x, loss=nn.MSELoss(),
                           target=y, optimizer=opt, steps=3)
    assert d["model"][0] == {"name": "ln", "type": "layernorm", "dim": 8,
                             "eps": 1e-3, "bias": True}
    assert d["optimizer"] == {"type": "adamw", "lr": 0.01,
                              "betas": [0.9, 0.999], "eps": 1e-8,
                              "weight_decay": 0.1}
    trace = tpsim.run(tpsim.Config.from_dict(d))
    assert trace.result.match is True
    losses = []
    for _ in range(3):
        loss = nn.functional.mse_loss(model(x), y)
        losses.append(loss.item())
        opt.zero_grad()
        loss.backward()
        opt.step()
    np.testing.assert_allclose(trace.result.loss, losses, rtol=1e-5)
    for name, p in model.named_parameters():
        np.testing.assert_allclose(trace.result.params_after[name],
                                   p.detach().numpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=name)


def test_an_embedding_model_takes_its_token_ids():
    torch.manual_seed(2)
    model = nn.Sequential(nn.Embedding(16, 4), nn.Linear(4, 4))
    ids = torch.tensor([[1, 5, 15], [0, 2, 2]])
    d = config_from_module(
        model, {"0": RowwiseParallel(input_layouts=Replicate())}, (2,),
        ("tp",), input=ids)
    assert d["model"][0] == {"name": "0", "type": "embedding",
                             "num_embeddings": 16, "embedding_dim": 4}
    assert d["plan"] == {"0": "vocab"}
    assert d["input"] == {"values": [[1, 5, 15], [0, 2, 2]]}
    trace = tpsim.run(tpsim.Config.from_dict(d))
    assert trace.result.match is True
    np.testing.assert_allclose(trace.result.output,
                               model(ids).detach().numpy(), rtol=1e-6,
                               atol=1e-7)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(8, 4, bias=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_nested_names_are_the_dotted_paths_and_patterns_resolve():
    model = nn.Sequential(collections.OrderedDict(
        blocks=nn.ModuleList([Block(), Block()]), head=nn.Linear(4, 2)))
    d = config_from_module(model, {"blocks.*.fc1": ColwiseParallel(),
                                   "blocks.[01].fc2": "rowwise"},
                           (2,), ("tp",), input=(3, 4),
                           assume_in_order=True)
    assert [m["name"] for m in d["model"]] == [
        "blocks.0.fc1", "blocks.0.act", "blocks.0.fc2",
        "blocks.1.fc1", "blocks.1.act", "blocks.1.fc2", "head"]
    assert d["model"][2] == {"name": "blocks.0.fc2", "type": "linear",
                             "in_features": 8, "out_features": 4,
                             "bias": False}
    # Keys resolved, so the trace names each module it planned.
    assert d["plan"] == {"blocks.0.fc1": "colwise",
                         "blocks.1.fc1": "colwise",
                         "blocks.0.fc2": "rowwise",
                         "blocks.1.fc2": "rowwise"}
    assert "blocks.1.fc2.weight" in d["params"]
    assert "blocks.1.fc2.bias" not in d["params"]
    assert d["input"] == {"shape": [3, 4]}
    assert d["mode"] == "inference"
    assert tpsim.run(tpsim.Config.from_dict(d)).result.match is True


def test_a_module_used_twice_runs_twice():
    act = nn.ReLU()
    model = nn.Sequential(nn.Linear(2, 2), act, nn.Linear(2, 2), act)
    d = config_from_module(model, None, (2,), ("tp",), input=(1, 2))
    assert [(m["name"], m["type"]) for m in d["model"]] == [
        ("0", "linear"), ("1", "relu"), ("2", "linear"), ("3", "relu")]
    assert d["plan"] == {}


def test_one_style_plans_the_module_itself():
    lin = nn.Linear(4, 6)
    d = config_from_module(lin, ColwiseParallel(), (2,), ("tp",),
                           input=(2, 4))
    assert d["model"] == [{"name": "model", "type": "linear",
                           "in_features": 4, "out_features": 6,
                           "bias": True}]
    assert d["plan"] == {"model": "colwise"}
    assert sorted(d["params"]) == ["model.bias", "model.weight"]
    d = config_from_module(lin, {"fc": "rowwise"}, (2,), ("tp",),
                           input=(2, 4), root_name="fc")
    assert d["plan"] == {"fc": "rowwise"}
    assert tpsim.run(tpsim.Config.from_dict(d)).result.match is True


def _plan_of(key, style):
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.LayerNorm(4))
    return config_from_module(model, {key: style}, (2,), ("tp",),
                              input=(2, 3, 4))["plan"]


# (plan key, style, the plan tpsim gets): docs/config.md's "Plan" for
# each of PyTorch's styles (torch's style.py for their defaults).
STYLES = [
    ("0", "colwise", {"0": "colwise"}),
    ("0", {"style": "rowwise", "bias": "rank0"},
     {"0": {"style": "rowwise", "bias": "rank0"}}),
    ("0", ColwiseParallel(), {"0": "colwise"}),
    ("0", ColwiseParallel(input_layouts=Shard(1)),
     {"0": {"style": "colwise", "input": "shard(1)"}}),
    ("0", ColwiseParallel(output_layouts=Replicate(),
                          use_local_output=False),
     {"0": {"style": "colwise", "output": "replicate"}}),
    ("0", RowwiseParallel(),
     {"0": {"style": "rowwise", "bias": "partial_split"}}),
    ("0", RowwiseParallel(input_layouts=Replicate(),
                          output_layouts=Shard(1)),
     {"0": {"style": "rowwise", "input": "replicate", "output": "shard(1)",
            "bias": "partial_split"}}),
    ("2", SequenceParallel(), {"2": "sequence"}),
    ("1", PrepareModuleInput(input_layouts=Shard(1),
                             desired_input_layouts=Replicate()),
     {"1": {"style": "prepare_input", "input": "shard(1)",
            "desired_input": "replicate"}}),
    ("1", PrepareModuleInput(input_layouts=(Replicate(), None),
                             desired_input_layouts=(Shard(1), None)),
     {"1": {"style": "prepare_input", "input": "replicate",
            "desired_input": "shard(1)"}}),
    ("1", PrepareModuleInput(), {}),
    ("1", PrepareModuleOutput(output_layouts=Replicate(),
                              desired_output_layouts=Shard(-2)),
     {"1": {"style": "prepare_output", "output": "replicate",
            "desired_output": "shard(-2)"}}),
]


@pytest.mark.parametrize("key, style, plan", STYLES,
                         ids=[str(i) for i in range(len(STYLES))])
def test_plan_styles_become_tpsims(key, style, plan):
    assert _plan_of(key, style) == plan


def test_rowwise_bias_follows_the_linear_and_the_argument():
    model = nn.Sequential(nn.Linear(4, 4, bias=False))
    d = config_from_module(model, {"0": RowwiseParallel()}, (2,), ("tp",),
                           input=(2, 4))
    assert d["plan"] == {"0": "rowwise"}
    model = nn.Sequential(nn.Linear(4, 4))
    d = config_from_module(model, {"0": RowwiseParallel()}, (2,), ("tp",),
                           input=(2, 4), rowwise_bias="after_reduce")
    assert d["plan"] == {"0": {"style": "rowwise", "bias": "after_reduce"}}


def test_sequence_parallel_of_another_dim():
    model = nn.Sequential(nn.LayerNorm(4))
    d = config_from_module(model, {"0": SequenceParallel(sequence_dim=0)},
                           (2,), ("tp",), input=(2, 3, 4))
    assert d["plan"] == {"0": {"style": "sequence", "input": "shard(0)",
                               "output": "shard(0)"}}


class Custom(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(2))

    def forward(self, x):
        return x * self.w


class ScaledLinear(nn.Linear):
    def forward(self, x):
        return 2 * super().forward(x)


class HookedLinear(nn.Linear):
    """Seed 004's LinearWrapper: nn.Linear's forward, with hooks."""


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))
        self.fc = nn.Linear(2, 2)


def tied():
    a = nn.Linear(2, 2)
    return nn.Sequential(a, nn.ReLU(), a)


def named(name):
    return nn.Sequential(collections.OrderedDict([(name, nn.ReLU())]))


# (module, what the error says, its .path, its .what): each refusal
# names the module's path and type.
BAD_MODULES = [
    (nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1)),
     "'1' is a Dropout, which tpsim does not simulate (it simulates Linear,"
     " ReLU, GELU, LayerNorm, Embedding, Sequential, ModuleList)",
     "1", "Dropout"),
    (nn.Sequential(nn.Sequential(nn.Conv1d(1, 1, 1))),
     "'0.0' is a Conv1d, which tpsim does not simulate", "0.0", "Conv1d"),
    (nn.Sequential(nn.GELU(approximate="tanh")),
     "'0': GELU(approximate='tanh'): tpsim's gelu is the erf form", "0",
     "GELU"),
    (nn.Sequential(nn.LayerNorm((2, 3))),
     "'0': LayerNorm over 2 dims [2, 3]: tpsim normalizes the last dim "
     "only", "0", "LayerNorm"),
    (nn.Sequential(nn.LayerNorm(3, elementwise_affine=False)),
     "'0': LayerNorm(elementwise_affine=False)", "0", "LayerNorm"),
    (nn.Sequential(nn.Embedding(4, 2, padding_idx=0)),
     "'0': Embedding(padding_idx=0): tpsim's embedding is a plain lookup",
     "0", "Embedding"),
    (nn.Sequential(nn.Embedding(4, 2, max_norm=1.0)),
     "Embedding(max_norm=1.0)", "0", "Embedding"),
    (nn.Sequential(ScaledLinear(2, 2)),
     "'0' is a ScaledLinear, which tpsim does not simulate", "0",
     "ScaledLinear"),
    (Block(), "the module itself is a Block: tpsim cannot read its "
     "forward(); only Sequential and ModuleList run their modules in order",
     "", "Block"),
    (nn.Sequential(Block()), "'0' is a Block: tpsim cannot read its "
     "forward()", "0", "Block"),
    (Custom(), "the module itself is a Custom, which tpsim does not "
     "simulate", "", "Custom"),
    (nn.Sequential(), "Sequential holds no module tpsim simulates", "",
     "Sequential"),
    (tied(), "2.weight is 0.weight: tpsim gives every module parameters of "
     "its own (no tied weights)", "2", "Linear"),
    (named("r\u00e9lu"), "'r\u00e9lu': tpsim names modules with "
     "dot-separated parts of ASCII letters, digits, '_' and '-'",
     "r\u00e9lu", None),
]


@pytest.mark.parametrize("module, message, path, what", BAD_MODULES,
                         ids=[str(i) for i in range(len(BAD_MODULES))])
def test_unsupported_modules_are_named(module, message, path, what):
    with pytest.raises(ModuleError) as e:
        config_from_module(module, None, (2,), ("tp",), input=(2, 2))
    assert message in str(e.value)
    assert e.value.message == str(e.value)
    assert (e.value.file, e.value.pointer) == (None, None)
    assert (e.value.path, e.value.what) == (path, what)
    assert isinstance(e.value, tpsim.ConfigError)


def test_containers_in_order_by_request_but_not_their_own_parameters():
    d = config_from_module(nn.Sequential(HookedLinear(2, 2), Block()),
                           None, (2,), ("tp",), input=(2, 2),
                           assume_in_order=True)
    assert [m["name"] for m in d["model"]] == ["0", "1.fc1", "1.act",
                                               "1.fc2"]
    with pytest.raises(ModuleError, match="'0' \\(a Holder\\) holds "
                       "parameters of its own \\(scale\\)"):
        config_from_module(nn.Sequential(Holder()), None, (2,), ("tp",),
                           input=(2, 2), assume_in_order=True)


MLP = nn.Sequential(collections.OrderedDict(
    fc1=nn.Linear(4, 8), act=nn.ReLU(), fc2=nn.Linear(8, 4),
    emb=nn.Embedding(4, 4)))

# (plan, what the error says): each names the key or the module.
BAD_PLANS = [
    ({"act": ColwiseParallel()},
     "'act': ColwiseParallel applies to a Linear or an Embedding, not a "
     "ReLU"),
    ({"emb": ColwiseParallel()},
     "'emb': ColwiseParallel on an Embedding splits its embedding_dim, "
     "which tpsim does not simulate"),
    ({"emb": RowwiseParallel(input_layouts=Shard(0))},
     "'emb': RowwiseParallel with input_layouts shard(0) on an Embedding: "
     "tpsim's vocab embedding looks up token ids replicated on every rank"),
    ({"emb": RowwiseParallel()},
     "'emb': RowwiseParallel with input_layouts shard(-1) on an Embedding: "
     "tpsim's vocab embedding looks up token ids replicated on every rank; "
     "give RowwiseParallel(input_layouts=Replicate())"),
    ({"fc1": SequenceParallel()},
     "'fc1': SequenceParallel on a Linear: tpsim runs a LayerNorm sequence"
     " parallel"),
    ({"fc2": RowwiseParallel(output_layouts=Partial())},
     "'fc2': RowwiseParallel.output_layouts Partial(sum): tpsim's layouts "
     "are Shard(d) and Replicate()"),
    ({"act": PrepareModuleInput(input_layouts=(Shard(1), Replicate()),
                                desired_input_layouts=(Replicate(),
                                                       Replicate()))},
     "'act': PrepareModuleInput.input_layouts has 2 layouts: a tpsim "
     "module has one input and one output"),
    ({"act": PrepareModuleInput(input_layouts=Shard(1),
                                desired_input_layouts=Replicate(),
                                input_kwarg_layouts={"mask": Replicate()},
                                desired_input_kwarg_layouts={
                                    "mask": Replicate()})},
     "PrepareModuleInput(input_kwarg_layouts=...): a tpsim module takes "
     "one input"),
    ({"act": PrepareModuleInputOutput(
        input_layouts=Shard(1), desired_input_layouts=Replicate(),
        output_layouts=Replicate(), desired_output_layouts=Shard(1))},
     "'act': PrepareModuleInputOutput: a tpsim module takes one style"),
    ({"fc1": ColwiseParallel20()},
     "'fc1': this ColwiseParallel has no input_layouts, output_layouts: "
     "tpsim reads the styles of torch >= 2.2"),
    ({"fc1": PairwiseParallel()},
     "'fc1': a plan value is a tpsim style string, a tpsim style dict or "
     "one of PyTorch's ColwiseParallel"),
    ({"fc3": "colwise"},
     "plan key 'fc3' matches no module (the modules: fc1, act, fc2, emb)"),
    ({"fc*": "colwise", "fc1": "rowwise"},
     "plan keys 'fc*' and 'fc1' both match 'fc1'"),
    ("colwise", "plan key '' matches the module itself, a Sequential: "
     "tpsim plans the modules inside it"),
    ({1: "colwise"}, "plan key 1: a plan key is a module path"),
]


@pytest.mark.parametrize("plan, message", BAD_PLANS,
                         ids=[str(i) for i in range(len(BAD_PLANS))])
def test_bad_plans_are_named(plan, message):
    with pytest.raises(ModuleError) as e:
        config_from_module(MLP, plan, (2,), ("tp",), input=(2, 4))
    assert message in str(e.value)


def test_a_style_tpsim_refuses_is_its_config_error():
    # tpsim itself decides what a module type takes: colwise on a relu.
    d = config_from_module(MLP[:3], {"act": "colwise"}, (2,), ("tp",),
                           input=(2, 4))
    with pytest.raises(tpsim.ConfigError) as e:
        tpsim.Config.from_dict(d, name="mlp")
    assert e.value.pointer == "/plan/act"


def lin():
    return nn.Sequential(nn.Linear(2, 2))


def other_params():
    return [nn.Parameter(torch.ones(1))]


class DTensor(torch.Tensor):
    """A stand-in of torch 2.x's DTensor, whose values are one rank's."""


# (keyword arguments, what the error says): inputs, losses, optimizers.
BAD_ARGUMENTS = [
    (dict(input=torch.ones(2, 2).as_subclass(DTensor)),
     "input is a DTensor: give the whole tensor (full_tensor())"),
    (dict(input=torch.ones(2, 2, dtype=torch.float64)),
     "input is float64: tpsim computes in float32; give tensor.float()"),
    (dict(input=torch.tensor([[1.0, float("nan")]])),
     "input holds a NaN or an Inf"),
    (dict(input=torch.ones(2, 2, dtype=torch.bool)),
     "input is bool: tpsim reads float32 values or integer ids"),
    (dict(input="x"), "input is a tensor, a shape or tpsim's dict"),
    (dict(input=(2, 2), target=torch.ones(2, 2, dtype=torch.float64)),
     "target is float64"),
    (dict(input=(2, 2), loss=nn.MSELoss(reduction="sum")),
     "loss MSELoss(): tpsim's losses are \"mse\" (MSELoss())"),
    (dict(input=(2, 2), loss=nn.L1Loss()), "loss L1Loss()"),
    (dict(input=(2, 2), loss="mse", mode="inference"),
     "loss given with mode='inference': they are training's"),
    (dict(input=(2, 2), optimizer=torch.optim.RMSprop(other_params())),
     "optimizer RMSprop: tpsim's optimizers are SGD and AdamW"),
    (dict(input=(2, 2), optimizer=torch.optim.SGD(other_params(), lr=1)),
     "optimizer SGD does not hold exactly the module's parameters (0 of "
     "its 2, and 1 others)"),
    (dict(input=(2, 2), mesh={}),
     "mesh: give it as config_from_module's own argument"),
]


@pytest.mark.parametrize("kw, message", BAD_ARGUMENTS,
                         ids=[str(i) for i in range(len(BAD_ARGUMENTS))])
def test_bad_arguments_are_named(kw, message):
    with pytest.raises(ModuleError) as e:
        config_from_module(lin(), None, (2,), ("tp",), **kw)
    assert message in str(e.value)


def test_optimizers_of_the_modules_own_parameters():
    m = lin()
    p = list(m.parameters())

    def opt(o):
        return config_from_module(m, None, (2,), ("tp",), input=(2, 2),
                                  optimizer=o)["optimizer"]

    assert opt(torch.optim.SGD(p, lr=0.5, momentum=0.9, nesterov=True)) == \
        {"type": "sgd", "lr": 0.5, "momentum": 0.9, "dampening": 0.0,
         "weight_decay": 0.0, "nesterov": True}
    # Adam without weight decay is AdamW's formula with weight_decay 0.
    assert opt(torch.optim.Adam(p, lr=0.25, betas=(0.5, 0.75))) == \
        {"type": "adamw", "lr": 0.25, "betas": [0.5, 0.75], "eps": 1e-8,
         "weight_decay": 0.0}
    assert opt({"type": "sgd", "lr": 2}) == {"type": "sgd", "lr": 2}
    for o, message in [
            (torch.optim.Adam(p, weight_decay=0.1),
             "Adam(weight_decay=0.1): Adam adds the decay to the gradient"),
            (torch.optim.SGD([{"params": p[:1]}, {"params": p[1:]}], lr=1),
             "optimizer SGD has 2 parameter groups"),
            (torch.optim.SGD(p, lr=1, maximize=True),
             "optimizer SGD(maximize=True)"),
            (torch.optim.AdamW(p, amsgrad=True),
             "optimizer AdamW(amsgrad=True)")]:
        with pytest.raises(ModuleError, match=message.replace(
                "(", "\\(").replace(")", "\\)")):
            opt(o)


def test_a_parallelized_module_is_refused():
    m = lin()
    m[0].weight = nn.Parameter(m[0].weight.detach().as_subclass(DTensor))
    with pytest.raises(ModuleError, match="0.weight is a DTensor: give the "
                       "whole tensor .* before parallelize_module"):
        config_from_module(m, None, (2,), ("tp",), input=(2, 2))


def test_frozen_parameters_cannot_train():
    m = lin()
    m[0].bias.requires_grad_(False)
    with pytest.raises(ModuleError, match="0.bias does not require a "
                       "gradient: tpsim trains every parameter"):
        config_from_module(m, None, (2,), ("tp",), input=(2, 2), loss="sum")
    # Inference reads it as any other weight.
    d = config_from_module(m, None, (2,), ("tp",), input=(2, 2))
    assert d["params"]["0.bias"] == m[0].bias.tolist()


def test_narrow_weights_are_exact_and_other_keys_pass_through():
    m = lin().to(torch.bfloat16)
    d = config_from_module(m, None, (2,), ("tp",), input=(2, 2),
                           dtype="bfloat16", trace={"values": "summary"})
    assert d["params"]["0.weight"] == m[0].weight.float().tolist()
    assert (d["dtype"], d["trace"]) == ("bfloat16", {"values": "summary"})
    assert list(d)[-2:] == ["dtype", "trace"]


def test_real_torch_styles_when_torch_has_them():
    tp = pytest.importorskip("torch.distributed.tensor.parallel",
                             reason="torch < 2.2 has no parallel styles; "
                             "the stand-ins above stand for them")
    dt = pytest.importorskip("torch.distributed.tensor")
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4),
                          nn.LayerNorm(4))
    plan = {"0": tp.ColwiseParallel(input_layouts=dt.Shard(1)),
            "1": tp.PrepareModuleInput(input_layouts=dt.Shard(-1),
                                       desired_input_layouts=dt.Shard(-1)),
            "2": tp.RowwiseParallel(output_layouts=dt.Shard(1)),
            "3": tp.SequenceParallel()}
    d = config_from_module(model, plan, (2,), ("tp",), input=(2, 4, 4))
    assert d["plan"] == {
        "0": {"style": "colwise", "input": "shard(1)"},
        "1": {"style": "prepare_input", "input": "shard(-1)",
              "desired_input": "shard(-1)"},
        "2": {"style": "rowwise", "output": "shard(1)",
              "bias": "partial_split"},
        "3": "sequence"}
