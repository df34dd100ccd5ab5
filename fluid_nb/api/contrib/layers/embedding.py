"""``contrib.fused_embedding_seq_pool``: an embedding summed over each sequence, one op."""
from ...layer_helper import LayerHelper
from ...layers.arg_checks import INT, boolean, checks, dtype, ints, one_of, optional, variable
from ...layers.nn import _padding_idx

__all__ = ["fused_embedding_seq_pool"]


@checks(input=variable, size=ints(2, 1, "sizes"), is_sparse=boolean, padding_idx=optional(INT),
        combiner=one_of("sum"), dtype=dtype)
def fused_embedding_seq_pool(input, size, is_sparse=False, padding_idx=None, combiner="sum",
                             param_attr=None, dtype="float32"):
    """The embedding rows of each sequence of int64 ids ``input`` (lod_level 1, ids ending in
    a 1), summed: out[s] = sum_{t in s} W[input[t]] with W a [size[0], size[1]] parameter
    (``fused_embedding_seq_pool``). An id equal to ``padding_idx`` (negative: counted from
    the end of the vocabulary) adds zeros.

    Example::

        words = fluid.layers.data(name="word", shape=[1], dtype="int64", lod_level=1)
        pooled = fluid.contrib.fused_embedding_seq_pool(words, size=[20, 32])
    """
    helper = LayerHelper("fused_embedding_seq_pool", input=input, param_attr=param_attr)
    w = helper.create_parameter(attr=helper.param_attr, shape=list(size), dtype=dtype)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="fused_embedding_seq_pool", inputs={"Ids": [input], "W": [w]},
                     outputs={"Out": [out]},
                     attrs={"is_sparse": is_sparse, "combiner": combiner,
                            "padding_idx": _padding_idx(padding_idx, size)})
    return out
