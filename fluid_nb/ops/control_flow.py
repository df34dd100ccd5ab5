"""Control flow with sub-blocks: the definitions of while, while_grad, conditional_block and
conditional_block_grad (slots, attributes, shapes, grad makers).

Their kernels drive the executor (they run a sub-block in step scopes), so they live with
it, in :mod:`fluid_nb.exec.control_flow`, which attaches them; the rule that differentiates
a sub-block walks the backward machinery, so :mod:`fluid_nb.autodiff.backward` attaches it.
What the ops do is told there and in each op's ``doc``.
"""
from ..tensor.dtypes import VarType, is_float_dtype
from ..framework.program import EMPTY_VAR_NAME, grad_var_name
from ..framework import registry
from ..framework.registry import def_op

_BLOCK = ("block",)
_SKIP = ("strings", [])


# --- while ---------------------------------------------------------------------------------------
def _outer_grads_read(grad_block, op):
    """Output gradients the grad block reads before writing them (Paddle's
    ``original_output_grad``), in the order of the forward op's ``Out``."""
    read, written = set(), set()
    for gop in grad_block.ops:
        read |= {n for n in gop.input_arg_names if n not in written}
        written |= set(gop.output_arg_names)
    return [grad_var_name(n) for n in op.output("Out") if grad_var_name(n) in read]


def _while_grad_maker(g):
    block = g.grad_block
    produced = {n for op in block.ops for n in op.output_arg_names}
    x_grads = [n if n in produced else EMPTY_VAR_NAME for n in g.input_grad("X")]
    ogs = _outer_grads_read(block, g.fwd)
    attrs = dict(g.attrs)
    attrs.update(sub_block=block.idx, original_output_grad=list(ogs),
                 skip_eager_deletion_vars=[])
    return [registry.GradOpSpec("while_grad",
                                {"X": g.input("X"), "Out": g.output("Out"),
                                 "Out@GRAD": ogs, "StepScopes": g.output("StepScopes")},
                                {"X@GRAD": x_grads}, attrs)]


def grad_pairs(inputs, grads):
    """(input index, grad index) pairs. The backward walker drops ``@EMPTY@`` entries, so a
    gradient is matched to its input by name (``x@GRAD``, or ``x@GRAD@RENAME@...``)."""
    where = {name: k for k, name in enumerate(inputs)}
    pairs = []
    for j, grad in enumerate(grads):
        if grad == EMPTY_VAR_NAME or "@GRAD" not in grad:
            continue
        k = where.get(grad[:grad.index("@GRAD")])
        if k is not None:
            pairs.append((k, j))
    return pairs


def _x_grad_infer(slot_in, slot_out):
    def infer(ctx):
        ins = ctx.op.inputs.get(slot_in, ())
        outs = ctx.op.outputs.get(slot_out, ())
        for k, j in grad_pairs(ins, outs):
            var = ctx.input_var(slot_in, k)
            ctx.set_output(slot_out, var.shape, var.dtype, lod_level=var.lod_level,
                           index=j, type=var.type)
    return infer


def_op("while", inputs=["X[]?", "Condition"], outputs=["Out[]?", "StepScopes"],
       attrs={"sub_block": _BLOCK, "is_test": ("bool", False),
              "skip_eager_deletion_vars": _SKIP},
       lod_aware=True, traits=("has_sub_block", "runtime_outputs"),
       host_reads="Condition: whether to run the body again, before each iteration (none "
                  "when it lives on the host, as force_cpu comparisons leave it)",
       grad=_while_grad_maker,
       doc="while Condition: run sub_block in a new step scope (kept in StepScopes unless "
           "is_test). X: outer variables the body reads; Out: outer variables it writes.")



# --- while_grad ----------------------------------------------------------------------------------
def_op("while_grad", inputs=["X[]", "Out[]", "Out@GRAD[]?", "StepScopes"],
       outputs=["X@GRAD[]"],
       attrs={"sub_block": _BLOCK, "is_test": ("bool", False),
              "original_output_grad": ("strings", []), "skip_eager_deletion_vars": _SKIP},
       infer_shape=_x_grad_infer("X", "X@GRAD"), lod_aware=True,
       traits=("has_sub_block", "runtime_outputs", "optional_outputs"),
       doc="Backward of while: the grad sub_block over StepScopes in reverse; X@GRAD sums "
           "the steps' gradients (a loop-carried variable's gradient flows step to step).")



# --- conditional_block -------------------------------------------------------------------------
def _conditional_block_grad_maker(g):
    block = g.grad_block
    x_grads = []
    for name, gname in zip(g.input("Input"), g.input_grad("Input")):
        var = g.fwd.block._find_var_recursive(name)
        differentiable = var is not None and (is_float_dtype(var.dtype)
                                              or var.type == VarType.LOD_TENSOR_ARRAY)
        x_grads.append(gname if differentiable else EMPTY_VAR_NAME)
    attrs = {"sub_block": block.idx,
             "is_scalar_condition": g.attrs.get("is_scalar_condition", False)}
    return [registry.GradOpSpec("conditional_block_grad",
                                {"Cond": g.input("Cond"), "Input": g.input("Input"),
                                 "Out": g.output("Out"), "Out@GRAD": g.output_grad("Out"),
                                 "Scope": g.output("Scope")},
                                {"Input@GRAD": x_grads}, attrs)]


def_op("conditional_block", inputs=["Cond[]", "Input[]?"], outputs=["Out[]", "Scope"],
       attrs={"sub_block": _BLOCK, "is_scalar_condition": ("bool", False),
              "skip_eager_deletion_vars": _SKIP},
       lod_aware=True, host_reads="Cond: with is_scalar_condition, whether the block runs",
       traits=("has_sub_block", "runtime_outputs", "optional_outputs"),
       grad=_conditional_block_grad_maker,
       doc="if Cond (its first element with is_scalar_condition, else: every Cond "
           "tensor non-empty): run sub_block once in a new scope, kept in Scope.")



def_op("conditional_block_grad",
       inputs=["Cond[]", "Input[]?", "Out[]?", "Out@GRAD[]?", "Scope"],
       outputs=["Input@GRAD[]"],
       attrs={"sub_block": _BLOCK, "is_scalar_condition": ("bool", False),
              "skip_eager_deletion_vars": _SKIP},
       infer_shape=_x_grad_infer("Input", "Input@GRAD"),
       lod_aware=True, traits=("has_sub_block", "runtime_outputs", "optional_outputs"),
       host_reads="Cond: with is_scalar_condition, whether the forward block ran",
       doc="Backward of conditional_block: the grad sub_block in the kept scope when the "
           "block ran; zero gradients for Input when it did not.")
