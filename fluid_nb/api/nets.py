"""``fluid.nets``: small compositions of layers (conv + pool blocks, a gated linear unit,
multi-head attention), built from the layers exactly as Fluid 1.8 builds them."""
import sys

from . import layers
from ..framework.transaction import wrap_module
from ..errors import InvalidArgument, InvalidType
from .layers.arg_checks import (POSITIVE_INT, PROBABILITY, activation, boolean, checks,
                                int_in, int_or_ints, ints, one_of, per_conv, variable)

__all__ = ["simple_img_conv_pool", "img_conv_group", "sequence_conv_pool", "glu",
           "scaled_dot_product_attention"]


@checks(input=variable, num_filters=POSITIVE_INT, filter_size=int_or_ints(2, 1),
        pool_size=int_or_ints(2, 1), pool_stride=int_or_ints(2, 1),
        pool_type=one_of('max', 'avg'), global_pooling=boolean, conv_stride=int_or_ints(2, 1),
        conv_dilation=int_or_ints(2, 1), conv_groups=POSITIVE_INT, act=activation,
        use_cudnn=boolean)
def simple_img_conv_pool(input, num_filters, filter_size, pool_size, pool_stride,
                         pool_padding=0, pool_type="max", global_pooling=False, conv_stride=1,
                         conv_padding=0, conv_dilation=1, conv_groups=1, param_attr=None,
                         bias_attr=None, act=None, use_cudnn=True):
    """``pool2d(conv2d(input))``: a convolution (with bias and ``act``) then pooling."""
    conv_out = layers.conv2d(input=input, num_filters=num_filters, filter_size=filter_size,
                             stride=conv_stride, padding=conv_padding, dilation=conv_dilation,
                             groups=conv_groups, param_attr=param_attr, bias_attr=bias_attr,
                             act=act, use_cudnn=use_cudnn)
    return layers.pool2d(input=conv_out, pool_size=pool_size, pool_type=pool_type,
                         pool_stride=pool_stride, pool_padding=pool_padding,
                         global_pooling=global_pooling, use_cudnn=use_cudnn)


@checks(input=variable, conv_num_filter=ints(None, 1, 'filter counts'),
        pool_size=int_or_ints(2, 1), conv_act=activation,
        conv_batchnorm_drop_rate=per_conv(PROBABILITY), conv_with_batchnorm=per_conv(boolean),
        conv_filter_size=per_conv(POSITIVE_INT), pool_stride=int_or_ints(2, 1),
        pool_type=one_of('max', 'avg'), use_cudnn=boolean)
def img_conv_group(input, conv_num_filter, pool_size, conv_padding=1, conv_filter_size=3,
                   conv_act=None, param_attr=None, conv_with_batchnorm=False,
                   conv_batchnorm_drop_rate=0.0, pool_stride=1, pool_type="max",
                   use_cudnn=True):
    """VGG-style block: several conv2d (each optionally + batch_norm + dropout), one pool2d.
    Per-conv arguments are a value for all or a list with one per conv."""
    if not isinstance(conv_num_filter, (list, tuple)):
        raise InvalidType(f"img_conv_group: conv_num_filter expected list or tuple, but "
                          f"received {type(conv_num_filter).__name__}")
    n = len(conv_num_filter)

    def per_conv(name, value):
        if isinstance(value, (list, tuple)):
            if len(value) != n:
                raise InvalidArgument(f"img_conv_group: {name} expected {n} values (one per "
                                      f"conv), but received {len(value)}")
            return list(value)
        return [value] * n

    conv_padding = per_conv("conv_padding", conv_padding)
    conv_filter_size = per_conv("conv_filter_size", conv_filter_size)
    param_attr = per_conv("param_attr", param_attr)
    conv_with_batchnorm = per_conv("conv_with_batchnorm", conv_with_batchnorm)
    drop_rates = per_conv("conv_batchnorm_drop_rate", conv_batchnorm_drop_rate)
    tmp = input
    for i in range(n):
        tmp = layers.conv2d(input=tmp, num_filters=conv_num_filter[i],
                            filter_size=conv_filter_size[i], padding=conv_padding[i],
                            param_attr=param_attr[i],
                            act=None if conv_with_batchnorm[i] else conv_act,
                            use_cudnn=use_cudnn)
        if conv_with_batchnorm[i]:
            tmp = layers.batch_norm(input=tmp, act=conv_act)
            if abs(drop_rates[i]) > 1e-5:
                tmp = layers.dropout(x=tmp, dropout_prob=drop_rates[i])
    return layers.pool2d(input=tmp, pool_size=pool_size, pool_type=pool_type,
                         pool_stride=pool_stride, use_cudnn=use_cudnn)


@checks(input=variable, num_filters=POSITIVE_INT, filter_size=POSITIVE_INT, act=activation,
        pool_type=one_of('sum', 'average', 'sqrt', 'max', 'last', 'first'))
def sequence_conv_pool(input, num_filters, filter_size, param_attr=None, act="sigmoid",
                       pool_type="max", bias_attr=None):
    """``sequence_pool(sequence_conv(input))``: a convolution along time inside each
    sequence (with bias and ``act``), then one row per sequence by ``pool_type``.

    Example::

        emb = fluid.layers.embedding(input=words, size=[dict_dim, 128])
        conv_3 = fluid.nets.sequence_conv_pool(input=emb, num_filters=128, filter_size=3,
                                               act="tanh", pool_type="sqrt")
    """
    _check_float("sequence_conv_pool", "input", input)
    conv_out = layers.sequence_conv(input=input, num_filters=num_filters,
                                    filter_size=filter_size, param_attr=param_attr,
                                    bias_attr=bias_attr, act=act)
    return layers.sequence_pool(input=conv_out, pool_type=pool_type)


@checks(input=variable, dim=int_in())
def glu(input, dim=-1):
    """Gated linear unit: ``input`` split in halves ``a, b`` along ``dim``;
    ``out = a * sigmoid(b)``."""
    _check_float("glu", "input", input, "float16", "float32", "float64")
    a, b = layers.split(input, num_or_sections=2, dim=dim)
    return layers.elementwise_mul(x=a, y=layers.sigmoid(x=b))


@checks(queries=variable, keys=variable, values=variable, num_heads=POSITIVE_INT,
        dropout_rate=PROBABILITY)
def scaled_dot_product_attention(queries, keys, values, num_heads=1, dropout_rate=0.):
    """Multi-head scaled dot-product attention over 3-D ``[batch, length, hidden]`` inputs:
    ``softmax(Q K^T / sqrt(d)) V`` per head, ``d`` the key width of one head. With
    ``num_heads > 1`` queries, keys and values first go through their own ``fc``
    (``num_flatten_dims=2``) and are split into heads along the hidden axis; the heads'
    results are joined back. Returns ``[batch, query length, value hidden]``.

    Example::

        contexts = fluid.nets.scaled_dot_product_attention(queries, keys, values,
                                                            num_heads=2)
    """
    where = "scaled_dot_product_attention"
    for name, value in (("queries", queries), ("keys", keys), ("values", values)):
        _check_float(where, name, value)
    if not queries.dtype == keys.dtype == values.dtype:
        raise InvalidType(f"{where}: keys and values expected the data type of queries "
                          f"({queries.dtype.name.lower()}), but received "
                          f"{keys.dtype.name.lower()} and {values.dtype.name.lower()}")
    shapes = [list(v.shape) for v in (queries, keys, values)]
    _attention_shapes_check(where, shapes, num_heads)
    q, k, v = _project(queries, keys, values, num_heads)
    q, k, v = (_split_heads(t, num_heads) for t in (q, k, v))
    key_width = keys.shape[-1] // num_heads
    product = layers.matmul(x=layers.scale(x=q, scale=key_width ** -0.5), y=k,
                            transpose_y=True)
    # softmax over the keys: the last axis, as rows of a 2-D view
    rows = layers.reshape(x=product, shape=[-1, product.shape[-1]], act="softmax")
    weights = layers.reshape(x=rows, shape=product.shape)
    if dropout_rate:
        weights = layers.dropout(weights, dropout_prob=dropout_rate, is_test=False)
    return _combine_heads(layers.matmul(weights, v))


def _check_float(where, name, value, *dtypes):
    from ..tensor.dtypes import convert_dtype
    dtypes = dtypes or ("float32", "float64")
    if value.dtype not in {convert_dtype(d) for d in dtypes}:
        raise InvalidType(f"{where}: {name} expected a Variable of {' or '.join(dtypes)}, "
                          f"but received {value.dtype.name.lower()}")


def _attention_shapes_check(where, shapes, num_heads):
    q, k, v = shapes
    if not len(q) == len(k) == len(v) == 3:
        raise InvalidArgument(f"{where}: queries, keys and values expected 3-D shapes, but "
                              f"received {q}, {k} and {v}")
    if q[-1] != k[-1]:
        raise InvalidArgument(f"{where}: keys' hidden size expected the queries' ({q[-1]}), "
                              f"but received {k[-1]}")
    if k[-2] != v[-2]:
        raise InvalidArgument(f"{where}: values' length expected the keys' ({k[-2]}), but "
                              f"received {v[-2]}")
    for name, shape in (("keys", k), ("values", v)):
        if shape[-1] % num_heads:
            raise InvalidArgument(f"{where}: {name}' hidden size expected a multiple of "
                                  f"num_heads ({num_heads}), but received {shape[-1]}")


def _project(queries, keys, values, num_heads):
    """Each of queries, keys and values through its own fc, when there are heads to split."""
    if num_heads == 1:
        return queries, keys, values
    return tuple(layers.fc(input=t, size=t.shape[-1], num_flatten_dims=2)
                 for t in (queries, keys, values))


def _split_heads(x, num_heads):
    """[batch, length, hidden] -> [batch, heads, length, hidden / heads]."""
    if num_heads == 1:
        return x
    hidden = x.shape[-1]
    reshaped = layers.reshape(x=x, shape=list(x.shape[:-1]) + [num_heads, hidden // num_heads])
    return layers.transpose(x=reshaped, perm=[0, 2, 1, 3])


def _combine_heads(x):
    """[batch, heads, length, width] -> [batch, length, heads * width]."""
    if len(x.shape) == 3:
        return x
    joined = layers.transpose(x, perm=[0, 2, 1, 3])
    batch, length, heads, width = (int(d) for d in joined.shape)
    # an unknown batch or length is copied from the input (0) rather than inferred (-1),
    # so both may be unknown at once
    return layers.reshape(x=joined, shape=[batch if batch >= 0 else 0,
                                           length if length >= 0 else 0, heads * width])


# each net is one transaction (see fluid_nb.framework.transaction)
wrap_module(sys.modules[__name__], __all__)
