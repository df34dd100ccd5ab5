"""Tree-based deep model (TDM) lookups: ``tdm_child`` reads the children of tree nodes and
whether each child is an item (a leaf) from the tree's info table; ``tdm_sampler`` walks
each leaf's path from the top layer down and draws negative nodes layer by layer. No
gradient."""
import numpy as np

from ..errors import InvalidArgument, expected
from ..framework.registry import def_op, no_gradient
from ..tensor.dtypes import VarType, convert_dtype, to_numpy_dtype
from ..tensor.transfer import to_host

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


# --- tdm_sampler ---------------------------------------------------------------------------------
def _sample_width(ctx):
    positive = int(bool(ctx.attr("output_positive")))
    return sum(n + positive for n in ctx.attr("neg_samples_num_list"))


def _sampler_infer(ctx):
    negatives, offsets = ctx.attr("neg_samples_num_list"), ctx.attr("layer_offset_lod")
    ctx.check(len(offsets) == len(negatives) + 1, "attribute 'layer_offset_lod'",
              f"{len(negatives) + 1} offsets (one more than neg_samples_num_list)",
              list(offsets))
    for layer, n in enumerate(negatives):
        nodes = offsets[layer + 1] - offsets[layer]
        ctx.check(0 <= n <= nodes - 1, f"attribute 'neg_samples_num_list'[{layer}]",
                  f"in [0, {nodes - 1}] (the layer's {nodes} nodes less the positive)", n)
    for slot in ("X", "Travel", "Layer"):
        ctx.check(ctx.input_dtype(slot) in _INT_TYPES, f"input '{slot}' dtype",
                  "int32 or int64", ctx.input_dtype(slot).name)
    ctx.check(ctx.input_dtype("Travel") == ctx.input_dtype("Layer"),
              "inputs 'Travel' and 'Layer' dtypes", "the same",
              f"{ctx.input_dtype('Travel').name} and {ctx.input_dtype('Layer').name}")
    width = _sample_width(ctx)
    rows = ctx.input_shape("X")[0] if ctx.input_shape("X") else 1
    dtype = convert_dtype(ctx.attr("dtype"))
    for slot in ("Out", "Labels", "Mask"):
        ctx.set_output(slot, (rows, width), dtype)


def _sampler(ctx, x, travel, layer):
    op = "tdm_sampler"
    attrs = ctx.attrs
    negatives, offsets = attrs["neg_samples_num_list"], attrs["layer_offset_lod"]
    positive = bool(attrs["output_positive"])
    ids = to_host(x).reshape(-1).astype("int64")
    travel, nodes = to_host(travel), to_host(layer).reshape(-1)
    bad = (ids < 0) | (ids >= travel.shape[0])
    if bad.any():
        raise InvalidArgument(expected(op, "input 'X'", f"leaf ids in [0, {travel.shape[0]})",
                                       int(ids[bad][0])))
    rng = ctx.random_state()
    width = sum(n + positive for n in negatives)
    out = np.zeros((ids.size, width), "int64")
    labels = np.zeros_like(out)
    mask = np.ones_like(out)
    for row, leaf in enumerate(ids):
        col = 0
        for depth, n in enumerate(negatives):
            lo, hi = offsets[depth], offsets[depth + 1]
            target = int(travel[leaf, depth])
            span = n + positive
            if target == 0:  # the path is padded here: nothing to learn at this layer
                mask[row, col:col + span] = 0
                col += span
                continue
            if not lo <= target <= hi:
                raise InvalidArgument(expected(op, f"input 'Travel'[{leaf}, {depth}]",
                                               f"a node id in [{lo}, {hi}]", target))
            if positive:
                out[row, col], labels[row, col] = target, 1
                col += 1
            # n distinct positions of the layer, none holding the positive node
            others = np.flatnonzero(nodes[lo:hi] != target)
            picked = rng.choice(others, size=n, replace=False) if n else others[:0]
            out[row, col:col + n] = nodes[lo + picked]
            col += n
    dtype = to_numpy_dtype(attrs["dtype"])
    xp = ctx.xp
    return tuple(xp.asarray(a.astype(dtype)) for a in (out, labels, mask))


def_op("tdm_sampler", inputs=["X", "Travel", "Layer"], outputs=["Out", "Labels", "Mask"],
       attrs={"output_positive": ("bool", True),
              "neg_samples_num_list": ("ints", []),
              "layer_offset_lod": ("ints", []),
              "seed": ("int", 0),
              "dtype": ("int", int(VarType.INT32))},
       infer_shape=_sampler_infer, grad=no_gradient, kernel=_sampler,
       host_reads="X, Travel, Layer: the walk down the tree and the sampling run on the host",
       traits=("stateful",),
       doc="For each leaf id X[i], layer by layer down its path Travel[X[i]]: the path's "
           "node (label 1, when output_positive) and neg_samples_num_list[l] distinct other "
           "nodes drawn uniformly from layer l (Layer[layer_offset_lod[l]:"
           "layer_offset_lod[l+1]], label 0). Mask is 0 where the path is padded (node 0), "
           "there Out and Labels are 0 too. Out, Labels, Mask: [N, sum(neg + positive)] of "
           "data type ``dtype``.")
