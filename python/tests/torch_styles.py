"""Stand-ins for torch 2.x's parallel styles and placements
(torch.distributed.tensor.parallel, torch.distributed.tensor), which
Debian's torch 1.13 lacks: classes of the same names whose objects carry
the same attributes, which is all tpsim.torch reads of them. The names
and the attributes each constructor sets are those of PyTorch's
style.py (torch 2.2 to 2.7); the code is ours.

tpsim.torch must never import this module: it recognises the real
classes by the same names and attributes.
"""


class Placement:
    pass


class Shard(Placement):
    def __init__(self, dim):
        self.dim = dim

    def __repr__(self):
        return "Shard(dim=%d)" % self.dim


class Replicate(Placement):
    def __repr__(self):
        return "Replicate()"


class Partial(Placement):
    def __init__(self, reduce_op="sum"):
        self.reduce_op = reduce_op

    def __repr__(self):
        return "Partial(%s)" % self.reduce_op


def _tuple(layouts):
    return (layouts,) if isinstance(layouts, Placement) else layouts


class ParallelStyle:
    pass


class ColwiseParallel(ParallelStyle):
    def __init__(self, *, input_layouts=None, output_layouts=None,
                 use_local_output=True):
        self.input_layouts = (input_layouts or Replicate(),)
        self.output_layouts = (output_layouts or Shard(-1),)
        self.desired_input_layouts = (Replicate(),)
        self.use_local_output = use_local_output


class RowwiseParallel(ParallelStyle):
    def __init__(self, *, input_layouts=None, output_layouts=None,
                 use_local_output=True):
        self.input_layouts = (input_layouts or Shard(-1),)
        self.output_layouts = (output_layouts or Replicate(),)
        self.use_local_output = use_local_output


class SequenceParallel(ParallelStyle):
    def __init__(self, *, sequence_dim=1, use_local_output=False):
        self.sequence_sharding = (Shard(sequence_dim),)
        self.use_local_output = use_local_output


class PrepareModuleInput(ParallelStyle):
    def __init__(self, *, input_layouts=None, desired_input_layouts=None,
                 input_kwarg_layouts=None, desired_input_kwarg_layouts=None,
                 use_local_output=False):
        self.input_layouts = _tuple(input_layouts)
        self.desired_input_layouts = _tuple(desired_input_layouts)
        self.use_local_output = use_local_output
        self.with_kwargs = input_kwarg_layouts is not None
        self.input_kwarg_layouts = input_kwarg_layouts or {}
        self.desired_input_kwarg_layouts = desired_input_kwarg_layouts or {}


class PrepareModuleOutput(ParallelStyle):
    def __init__(self, *, output_layouts, desired_output_layouts,
                 use_local_output=True):
        self.output_layouts = _tuple(output_layouts)
        self.desired_output_layouts = _tuple(desired_output_layouts)
        self.use_local_output = use_local_output


class PrepareModuleInputOutput(ParallelStyle):
    def __init__(self, *, input_layouts=None, desired_input_layouts=None,
                 output_layouts, desired_output_layouts):
        self.prepare_module_input = PrepareModuleInput(
            input_layouts=input_layouts,
            desired_input_layouts=desired_input_layouts)
        self.prepare_module_output = PrepareModuleOutput(
            output_layouts=output_layouts,
            desired_output_layouts=desired_output_layouts)


class PairwiseParallel(ParallelStyle):
    """torch 2.0's: no layouts as attributes (it held functions)."""

    def __init__(self):
        self._prepare_input = None
        self._prepare_output = None


class ColwiseParallel20(ParallelStyle):
    """torch 2.0's ColwiseParallel, which held functions, not layouts."""

    def __init__(self):
        self._prepare_input = None
        self._prepare_output = None


ColwiseParallel20.__name__ = "ColwiseParallel"
