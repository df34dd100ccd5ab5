"""delete_var: drops the values of variables in the scope (what ``fluid.release_memory``
inserts after each temporary's last use)."""
from ..framework.registry import def_op


def _delete_var(ctx, values):
    """Each named holder found in the op's scope (or its parents) gives its value up; the
    variable itself stays declared, so a later run fills it again."""
    scope = ctx.scope
    for name in ctx.input_names("X"):
        holder = scope.find_var(name) if scope is not None else None
        if holder is not None:
            holder.value = None


def _no_outputs(ctx):
    """delete_var declares nothing."""


def_op("delete_var", inputs=["X[]"], infer_shape=_no_outputs, kernel=_delete_var,
       lod_aware=True,
       doc="For each name in X: the variable's value in the scope is dropped (set to None). "
           "No outputs, no gradient.")
