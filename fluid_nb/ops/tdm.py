"""Tree-based deep model (TDM) lookups: ``tdm_child`` reads the children of tree nodes and
whether each child is an item (a leaf) from the tree's info table. No gradient."""
import numpy as np

from ..errors import InvalidArgument, expected
from ..framework.registry import def_op, no_gradient
from ..tensor.dtypes import VarType, convert_dtype, to_numpy_dtype

_INT_TYPES = (VarType.INT32, VarType.INT64)


def _child_infer(ctx):
    x, info = list(ctx.input_shape("X")), list(ctx.input_shape("TreeInfo"))
    n = ctx.attr("child_nums")
    ctx.check(n > 0, "attribute 'child_nums'", "> 0", n)
    ctx.check(len(info) == 2 and (info[1] < 0 or info[1] == 3 + n), "input 'TreeInfo'",
              f"[nodes, {3 + n}] (item id, layer id, parent id, {n} child ids per node)", info)
    for slot in ("X", "TreeInfo"):
        ctx.check(ctx.input_dtype(slot) in _INT_TYPES, f"input '{slot}' dtype",
                  "int32 or int64", ctx.input_dtype(slot).name)
    dtype = convert_dtype(ctx.attr("dtype"))
    ctx.set_output("Child", x + [n], dtype)
    ctx.set_output("LeafMask", x + [n], dtype)


def _child(ctx, x, info):
    xp = ctx.xp
    n = ctx.attrs["child_nums"]
    ids = x.astype("int64")
    if xp is np and ids.size and (int(ids.min()) < 0 or int(ids.max()) >= info.shape[0]):
        raise InvalidArgument(expected("tdm_child", "input 'X'",
                                       f"node ids in [0, {info.shape[0]})",
                                       int(ids[(ids < 0) | (ids >= info.shape[0])][0])))
    children = info[ids][..., 3:3 + n].astype("int64")
    children = xp.where(ids[..., None] != 0, children, 0)  # node 0 is padding: no children
    leaf = info[children][..., 0] != 0
    dtype = to_numpy_dtype(ctx.attrs["dtype"])
    return children.astype(dtype), leaf.astype(dtype)


def_op("tdm_child", inputs=["X", "TreeInfo"], outputs=["Child", "LeafMask"],
       attrs={"child_nums": ("int", 2), "dtype": ("int", int(VarType.INT32))},
       infer_shape=_child_infer, grad=no_gradient, kernel=_child,
       doc="Child[..., k] = TreeInfo[X[...], 3 + k] (0 for node 0, the padding node); "
           "LeafMask = 1 where that child's item id TreeInfo[child, 0] is not 0. TreeInfo "
           "rows: [item id, layer id, parent id, child ids...]. Both of data type ``dtype``.")
