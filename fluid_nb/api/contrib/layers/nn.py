"""Fluid 1.8's ``contrib.layers`` that build one operator each: ``tree_conv``,
``shuffle_batch``, ``partial_concat``, ``partial_sum`` and ``rank_attention``.

Each appends the op type, slots and attributes of the Fluid 1.8 function of the same name.
"""
import numpy as np

from ....errors import InvalidArgument, expected
from ....framework import unique_name
from ....framework.program import Variable
from ...initializer import ConstantInitializer
from ...layer_helper import LayerHelper
from ...layers.arg_checks import (INT, NAME, POSITIVE_INT, activation, checks, ints, optional,
                                  or_variable, variable, variables)

__all__ = ["tree_conv", "shuffle_batch", "partial_concat", "partial_sum", "rank_attention"]


@checks(nodes_vector=variable, edge_set=variable, output_size=POSITIVE_INT,
        num_filters=POSITIVE_INT, max_depth=POSITIVE_INT, act=activation, name=NAME)
def tree_conv(nodes_vector, edge_set, output_size, num_filters=1, max_depth=2, act="tanh",
              param_attr=None, bias_attr=None, name=None):
    """Tree-based convolution (TBCNN) over the trees of ``edge_set`` [batch, edges, 2]:
    out [batch, nodes, output_size, num_filters] = act(conv(nodes_vector, W) + b), the filter
    W [feature_size, 3, output_size, num_filters] mixing each node's patch (its descendants up
    to ``max_depth``) by the top, left and right weights of continuous binary trees."""
    helper = LayerHelper("tree_conv", param_attr=param_attr, bias_attr=bias_attr, act=act,
                         name=name)
    dtype = nodes_vector.dtype
    feature_size = nodes_vector.shape[2]
    w = helper.create_parameter(attr=helper.param_attr, dtype=dtype,
                                shape=[feature_size, 3, output_size, num_filters])
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="tree_conv",
                     inputs={"NodesVector": [nodes_vector], "EdgeSet": [edge_set],
                             "Filter": [w]},
                     outputs={"Out": [out]}, attrs={"max_depth": max_depth})
    pre_activation = helper.append_bias_op(out) if bias_attr is not False else out
    return helper.append_activation(pre_activation)


@checks(x=variable, seed=optional(or_variable(INT)))
def shuffle_batch(x, seed=None):
    """The rows of ``x`` (all dims but the last) in a random order. The order comes from a
    persistable int64 seed variable that each run advances (``SeedOut``); an int ``seed``
    (default: the program's ``random_seed`` when set, else a random int) starts it."""
    helper = LayerHelper("shuffle_batch")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    shuffle_idx = helper.create_variable_for_type_inference(dtype="int64")
    if seed is None and helper.main_program.random_seed != 0:
        seed = helper.main_program.random_seed
    if seed is None:
        seed = int(np.random.randint(-65536, 65535))
    attrs = {}
    if not isinstance(seed, Variable):
        attrs["startup_seed"] = int(seed)
        seed = helper.create_variable(name=unique_name.generate("shuffle_batch_seed"),
                                      dtype="int64", shape=[1], persistable=True)
        # the first batch shuffles by startup_seed, as Fluid's kernel does while the seed
        # variable holds nothing: here the startup program writes it there
        helper.set_variable_initializer(seed, ConstantInitializer(attrs["startup_seed"]))
    helper.append_op(type="shuffle_batch", inputs={"X": [x], "Seed": [seed]},
                     outputs={"Out": [out], "ShuffleIdx": [shuffle_idx], "SeedOut": [seed]},
                     attrs=attrs)
    return out


def _partial(op_type, input, start_index, length):
    inputs = [input] if isinstance(input, Variable) else list(input)
    helper = LayerHelper(op_type, input=inputs)
    out = helper.create_variable_for_type_inference(dtype=helper.input_dtype())
    helper.append_op(type=op_type, inputs={"X": inputs}, outputs={"Out": [out]},
                     attrs={"start_index": start_index, "length": length})
    return out


@checks(input=variables, start_index=INT, length=INT)
def partial_concat(input, start_index=0, length=-1):
    """concat(x[:, s:s+l] for x in input) along dim 1: the same column range (start_index s,
    negative counts from the end; length l, -1 to the end) of each matrix, side by side."""
    return _partial("partial_concat", input, start_index, length)


@checks(input=variables, start_index=INT, length=INT)
def partial_sum(input, start_index=0, length=-1):
    """sum(x[:, s:s+l] for x in input): the same column range of each matrix, added."""
    return _partial("partial_sum", input, start_index, length)


@checks(input=variable, rank_offset=variable, rank_param_shape=ints(length=2),
        max_rank=POSITIVE_INT, max_size=INT)
def rank_attention(input, rank_offset, rank_param_shape, rank_param_attr, max_rank=3,
                   max_size=0):
    """Rank attention: out[i] = concat_k(input[index_ik]) @ P_i, where ``rank_offset[i]`` is
    [rank_i, rank_i1, index_i1, ..., rank_iK, index_iK] (K = ``max_rank``) and P_i stacks the
    [D, C] blocks of the ``rank_param`` [D * K * K, C] chosen by (rank_i, rank_ik); a block
    whose rank is missing (< 1) contributes 0."""
    width = input.shape[1]
    if width >= 0 and width * max_rank * max_rank != rank_param_shape[0]:
        raise InvalidArgument(expected("rank_attention", "rank_param_shape[0]",
                                       f"input width x max_rank^2 = "
                                       f"{width * max_rank * max_rank}", rank_param_shape[0]))
    helper = LayerHelper("rank_attention")
    dtype = input.dtype
    rank_param = helper.create_parameter(attr=rank_param_attr, shape=list(rank_param_shape),
                                         dtype=dtype)
    rank_param.stop_gradient = False
    out = helper.create_variable_for_type_inference(dtype)
    input_help = helper.create_variable_for_type_inference(dtype=dtype, stop_gradient=True)
    ins_rank = helper.create_variable_for_type_inference(dtype=dtype, stop_gradient=True)
    helper.append_op(type="rank_attention",
                     inputs={"X": [input], "RankOffset": [rank_offset],
                             "RankParam": [rank_param]},
                     outputs={"Out": [out], "InputHelp": [input_help], "InsRank": [ins_rank]},
                     attrs={"MaxRank": max_rank, "MaxSize": max_size})
    return out
