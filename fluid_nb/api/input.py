"""``fluid.embedding`` and ``fluid.one_hot``: the Fluid 1.6+ input layers, whose ids carry no
trailing 1 dimension (``fluid.layers.embedding``/``one_hot`` keep the 1.x form that does).

``fluid.embedding(ids, size=[vocab, dim])`` appends ``lookup_table_v2``: ids of shape
``[..]`` give ``[.., dim]``. ``fluid.one_hot(ids, depth)`` appends ``one_hot_v2``: ids of
shape ``[..]`` give float32 ``[.., depth]``, an id outside ``[0, depth)`` a row of zeros with
``allow_out_of_range`` (refused otherwise).
"""
import sys

from ..tensor.dtypes import VarType
from ..framework.program import Variable
from ..framework.type_checks import check_dtype, check_variable_and_dtype
from ..framework.transaction import wrap_module
from .layer_helper import LayerHelper
from .layers.arg_checks import INT, POSITIVE_INT, boolean, checks, dtype, ints, optional, \
    or_variable, variable

__all__ = ["embedding", "one_hot"]


@checks(input=variable, size=ints(2, 1, "sizes"), is_sparse=boolean, is_distributed=boolean,
        padding_idx=optional(INT), dtype=dtype)
def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None,
              param_attr=None, dtype="float32"):
    """Rows of a ``size = [vocab, dim]`` table picked by int64 ids of any shape:
    ``Out[i.., :] = W[ids[i..], :]`` (``padding_idx``'s rows are zeros and get no gradient;
    a negative ``padding_idx`` counts from the end)."""
    check_variable_and_dtype(input, "input", ("int64",), "fluid.embedding")
    check_dtype(dtype, "dtype", ("float16", "float32", "float64"), "fluid.embedding")
    helper = LayerHelper("embedding", input=input, param_attr=param_attr)
    w = helper.create_parameter(attr=helper.param_attr, shape=list(size), dtype=dtype)
    out = helper.create_variable_for_type_inference(dtype)
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx < 0:
        padding_idx += size[0]
    helper.append_op(type="lookup_table_v2", inputs={"Ids": [input], "W": [w]},
                     outputs={"Out": [out]},
                     attrs={"is_sparse": is_sparse, "is_distributed": is_distributed,
                            "remote_prefetch": is_sparse and not is_distributed,
                            "padding_idx": padding_idx})
    return out


@checks(input=variable, depth=or_variable(POSITIVE_INT), allow_out_of_range=boolean)
def one_hot(input, depth, allow_out_of_range=False):
    """``Out[i.., j] = 1.0 if input[i..] == j else 0.0`` for ``j < depth`` (float32, one more
    dimension than ``input``); ``depth`` may be a Variable holding it."""
    check_variable_and_dtype(input, "input", ("int32", "int64"), "one_hot_v2")
    helper = LayerHelper("one_hot_v2")
    inputs = {"X": [input]}
    attrs = {"allow_out_of_range": allow_out_of_range, "dtype": int(VarType.FP32)}
    if isinstance(depth, Variable):
        inputs["depth_tensor"] = [depth]
    else:
        attrs["depth"] = depth
    out = helper.create_variable_for_type_inference(dtype=VarType.FP32)
    helper.append_op(type="one_hot_v2", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    out.stop_gradient = True
    return out


wrap_module(sys.modules[__name__], __all__)  # each layer is a transaction
