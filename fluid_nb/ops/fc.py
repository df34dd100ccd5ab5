"""``fc``: the fully connected op that fusion passes and inference programs use (the Python
layer builds mul + elementwise_add instead). Inference only: no gradient."""
import math

from ..framework.infer import dims_match
from ..framework.registry import def_op, no_gradient

_PAD = 4  # padding_weights: W carries 4 extra rows and columns that are not used


def _infer(ctx):
    x, w = list(ctx.input_shape("Input")), list(ctx.input_shape("W"))
    k = ctx.attr("in_num_col_dims")
    ctx.check(1 <= k < max(len(x), 2), "attribute 'in_num_col_dims'",
              f"in [1, {len(x) - 1}] (Input's rank - 1)", k)
    ctx.check(len(w) == 2, "input 'W'", "rank 2 ([K, N])", w)
    pad = _PAD if ctx.attr("padding_weights") else 0
    rows = -1 if any(d < 0 for d in x[k:]) else math.prod(x[k:])
    ctx.check(dims_match(rows, w[0] - pad if w[0] >= 0 else -1), "input 'W' dim 0",
              f"{rows} (the product of Input's dims from in_num_col_dims)"
              + (" plus 4 (padding_weights)" if pad else ""), w[0])
    n = w[1] - pad if w[1] >= 0 else -1
    if ctx.has_input("Bias"):
        b = list(ctx.input_shape("Bias"))
        ctx.check(b in ([n], [1, n]) or any(d < 0 for d in b), "input 'Bias'",
                  f"shape [{n}] or [1, {n}]", b)
    act = ctx.attr("activation_type")
    ctx.check(act in ("", "relu"), "attribute 'activation_type'", "'' or 'relu'", act)
    ctx.set_output("Out", x[:k] + [n], ctx.input_dtype("Input"))


def _fc(ctx, x, w, bias):
    xp, attrs = ctx.xp, ctx.attrs
    k = attrs["in_num_col_dims"]
    if attrs["padding_weights"]:
        w = w[:-_PAD, :-_PAD]
    out = x.reshape(math.prod(x.shape[:k]), -1) @ w
    if bias is not None:
        out = out + bias.reshape(1, -1)
    if attrs["activation_type"] == "relu":
        out = xp.maximum(out, 0)
    return out.reshape(x.shape[:k] + (w.shape[1],)).astype(x.dtype, copy=False)


def_op("fc", inputs=["Input", "W", "Bias?"], outputs=["Out"],
       attrs={"in_num_col_dims": ("int", 1), "activation_type": ("string", ""),
              "padding_weights": ("bool", False), "use_mkldnn": ("bool", False)},
       infer_shape=_infer, grad=no_gradient, kernel=_fc,
       doc="Out = act(Input' W + Bias), Input' = Input flattened to a matrix at "
           "in_num_col_dims, act = relu or none (activation_type); with padding_weights W "
           "is [K + 4, N + 4] and only W[:K, :N] is used. Out: Input.shape[:in_num_col_dims] "
           "+ [N].")
