"""``tree_conv``: tree-based convolution (TBCNN). Each node's patch is the node and its
descendants down to max_depth - 1 levels; a patch member at depth d, the i-th of n
siblings, mixes three weight slices with

    eta_t = (max_depth - d) / max_depth,
    eta_l = (1 - eta_t) * (1/2 if n == 1 else (i - 1) / (n - 1)),
    eta_r = (1 - eta_t) * (1 - eta_l),

so Out[b, u] = sum over the members v of u's patch of
X[b, v] . (eta_l W[:, 0] + eta_r W[:, 1] + eta_t W[:, 2]). Nodes are numbered from 1 in
EdgeSet ([parent, child] rows; a row with a 0 is padding)."""
import numpy as np

from ..framework.infer import dims_match
from ..framework.registry import def_op, grad_maker, grads_like
from ..tensor.transfer import to_host


def _infer(ctx):
    x, edges, w = (list(ctx.input_shape(s)) for s in ("NodesVector", "EdgeSet", "Filter"))
    ctx.check(len(x) == 3, "input 'NodesVector'", "[batch, nodes, features]", x)
    ctx.check(len(edges) == 3 and dims_match(edges[2], 2), "input 'EdgeSet'",
              "[batch, edges, 2] (parent, child)", edges)
    ctx.check(len(w) == 4 and dims_match(w[0], x[2]) and dims_match(w[1], 3), "input 'Filter'",
              f"[{x[2]}, 3, output_size, num_filters]", w)
    ctx.check(ctx.attr("max_depth") >= 1, "attribute 'max_depth'", ">= 1", ctx.attr("max_depth"))
    ctx.set_output("Out", [x[0], x[1], w[2], w[3]], ctx.input_dtype("NodesVector"))


def _coefficients(edges, nodes, max_depth):
    """[nodes, nodes, 3]: E[u, v] = (eta_l, eta_r, eta_t) summed over v's places in u's
    patch (row u - 1 for node u)."""
    children = {}
    for parent, child in edges:
        if parent > 0 and child > 0:
            children.setdefault(int(parent), []).append(int(child))
    top = max([0] + list(children) + [c for cs in children.values() for c in cs])
    coef = np.zeros((nodes, nodes, 3))

    def add(u, v, index, siblings, depth):
        eta_t = (max_depth - depth) / max_depth
        eta_l = (1 - eta_t) * (0.5 if siblings == 1 else (index - 1) / (siblings - 1))
        coef[u - 1, v - 1] += (eta_l, (1 - eta_t) * (1 - eta_l), eta_t)

    for u in range(1, min(top, nodes) + 1):
        add(u, u, 1, 1, 0)
        stack = [(u, 0)]
        while stack:
            node, depth = stack.pop()
            kids = children.get(node, [])
            if depth + 1 >= max_depth:
                continue
            for index, kid in enumerate(kids, 1):
                if kid <= nodes:
                    add(u, kid, index, len(kids), depth + 1)
                    stack.append((kid, depth + 1))
    return coef


def _plans(ctx, edges, nodes):
    host = to_host(edges).astype(np.int64)
    return [ctx.xp.asarray(_coefficients(host[b], nodes, ctx.attrs["max_depth"]))
            for b in range(host.shape[0])]


def _tree_conv(ctx, x, edges, w):
    xp = ctx.xp
    coefs = _plans(ctx, edges, x.shape[1])
    out = xp.stack([xp.einsum("uvj,vk,kjof->uof", e.astype(x.dtype), x[b], w)
                    for b, e in enumerate(coefs)])
    return out.astype(x.dtype, copy=False)


def _tree_conv_grad(ctx, x, edges, w, dout):
    xp = ctx.xp
    coefs = _plans(ctx, edges, x.shape[1])
    dx = dw = None
    if ctx.wants("NodesVector@GRAD"):
        dx = xp.stack([xp.einsum("uvj,uof,kjof->vk", e.astype(x.dtype), dout[b], w)
                       for b, e in enumerate(coefs)]).astype(x.dtype, copy=False)
    if ctx.wants("Filter@GRAD"):
        dw = sum(xp.einsum("uvj,vk,uof->kjof", e.astype(x.dtype), x[b], dout[b])
                 for b, e in enumerate(coefs)).astype(w.dtype, copy=False)
    return dx, dw


def_op("tree_conv", inputs=["NodesVector", "EdgeSet", "Filter"], outputs=["Out"],
       attrs={"max_depth": ("int", 2)}, infer_shape=_infer,
       grad=grad_maker("tree_conv_grad", inputs=["NodesVector", "EdgeSet", "Filter"],
                       out_grads=["Out"], in_grads=["NodesVector", "Filter"]),
       kernel=_tree_conv,
       host_reads="EdgeSet: the tree decides each node's patch",
       doc="Out [batch, nodes, output_size, num_filters]: the tree convolution of the "
           "module docstring; rows past the tree's largest node id are 0.")
def_op("tree_conv_grad", inputs=["NodesVector", "EdgeSet", "Filter", "Out@GRAD"],
       outputs=["NodesVector@GRAD?", "Filter@GRAD?"], attrs={"max_depth": ("int", 2)},
       infer_shape=grads_like(**{"NodesVector@GRAD": "NodesVector", "Filter@GRAD": "Filter"}),
       kernel=_tree_conv_grad, host_reads="EdgeSet: the tree decides each node's patch",
       doc="dX[b, v] = sum_u E[u, v] . dOut[b, u] W; dW = sum_b,u,v E[u, v] X[b, v] dOut[b, u], "
           "E the patch coefficients.")
