"""Linear algebra of ``paddle.tensor.linalg`` (Fluid 1.8): products (``matmul``, ``bmm``,
``dot``, ``cross``), the transpose ``t``, norms (``norm``) and distances (``dist``)."""
from ....errors import InvalidArgument, expected
from ....framework.type_checks import check_type, check_variable_and_dtype
from ...layer_helper import LayerHelper
# bmm, dot, dist, cross and t are fluid_nb.api.layers' own: same signature, checks and ops
from ...layers.math import bmm, cross, dist, dot, t
from ._common import FLOATS, FLOAT32_64, result, same_dtype_out
from .math import _check_matmul_shapes

__all__ = ["matmul", "dot", "norm", "dist", "t", "cross", "bmm"]


def matmul(x, y, transpose_x=False, transpose_y=False, alpha=1.0, name=None):
    """out = alpha * op(x) @ op(y), op transposing the last two dims when asked
    (``matmul``). Leading dims are batch dims (broadcast when one side has rank 2); a 1-D
    ``x`` is a row vector, a 1-D ``y`` a column vector, and that dim is dropped from the
    result. ``x`` and ``y`` are float16, float32 or float64."""
    check_variable_and_dtype(x, "x", FLOATS, "matmul")
    check_variable_and_dtype(y, "y", FLOATS, "matmul")
    _check_matmul_shapes("matmul", x, y, transpose_x, transpose_y)
    helper = LayerHelper("matmul", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="matmul", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                     attrs={"transpose_X": transpose_x, "transpose_Y": transpose_y,
                            "alpha": float(alpha)})
    return out


def _frobenius_norm(input, dim, keepdim, out, name):
    if dim is not None and not (isinstance(dim, list) and len(dim) == 2):
        raise InvalidArgument(expected("norm", "axis", "None or a list of two dims (the "
                                       "Frobenius norm)", repr(dim)))
    check_variable_and_dtype(input, "input", FLOAT32_64, "frobenius_norm")
    dim = [-2, -1] if dim is None else dim
    helper = LayerHelper("frobenius_norm", name=name)
    if out is not None:
        same_dtype_out("frobenius_norm", out, input.dtype)
    out = result(helper, input.dtype, out, name)
    helper.append_op(type="frobenius_norm", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"dim": dim, "keep_dim": keepdim,
                            "reduce_all": len(dim) == len(input.shape)})
    return out


def _vector_norm(input, porder, axis, keepdim, out, name):
    check_type(porder, "p", (float, int), "p_norm")
    if axis is not None:
        check_type(axis, "axis", int, "p_norm")
    check_variable_and_dtype(input, "input", FLOAT32_64, "p_norm")
    helper = LayerHelper("p_norm", name=name)
    if out is not None:
        same_dtype_out("p_norm", out, input.dtype)
    out = result(helper, input.dtype, out, name)
    helper.append_op(type="p_norm", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"axis": -1 if axis is None else axis, "porder": float(porder),
                            "keepdim": keepdim, "epsilon": 1e-12})
    return out


def norm(input, p="fro", axis=None, keepdim=False, out=None, name=None):
    """The matrix or vector norm of ``input``.

    - p='fro' with axis None or two dims: the Frobenius norm sqrt(sum(x^2)) over those dims
      (the last two when None) (``frobenius_norm``);
    - p a number with axis None or one int: the p-norm (sum |x|^p)^(1/p) along that axis
      (the last when None) (``p_norm``).

    Any other p or axis is refused with a ValueError."""
    def refuse(what, want, got):
        raise InvalidArgument(expected("norm", what, want, repr(got)))

    if axis is None and p is not None:
        if isinstance(p, str):
            if p != "fro":
                refuse("p", "'fro' or a number", p)
            return _frobenius_norm(input, None, keepdim, out, name)
        if isinstance(p, (int, float)) and not isinstance(p, bool):
            return _vector_norm(input, p, None, keepdim, out, name)
        refuse("p", "'fro' or a number", p)
    if isinstance(axis, list) and len(axis) == 1:
        axis = axis[0]
    if isinstance(axis, int) and not isinstance(axis, bool):
        if not isinstance(p, (int, float)) or isinstance(p, bool):
            refuse("p", "a number (a vector norm along one axis)", p)
        return _vector_norm(input, p, axis, keepdim, out, name)
    if isinstance(axis, list) and len(axis) == 2:
        if p != "fro":
            refuse("p", "'fro' (a matrix norm over two axes)", p)
        return _frobenius_norm(input, axis, keepdim, out, name)
    refuse("axis", "None, an int or a list of one or two ints", axis)

