"""Fluid 1.8's tree-based deep model layers: ``tdm_child`` (the children of tree nodes) and
``tdm_sampler`` (positive and negative nodes, layer by layer, for each leaf). Both keep the
tree in integer parameters that their ``ParamAttr`` initialises (usually a
``NumpyArrayInitializer``); neither has a gradient."""
import copy

import numpy as np

from ... import layers
from ....errors import InvalidArgument, expected
from ...initializer import Constant, NumpyArrayInitializer
from ...layer_helper import LayerHelper
from ...layers.arg_checks import check, one_of
from ...param_attr import ParamAttr
from ....tensor.dtypes import convert_dtype

__all__ = ["tdm_child", "tdm_sampler"]

_INTS = one_of("int32", "int64")


def _shaped(attr, shape):
    """``attr`` whose array initializer holds the parameter's values in another shape of
    the same size (a flat list of a layer's nodes) reshaped to the parameter's: the op
    reads the tree flat, so Fluid accepts either."""
    attr = ParamAttr._to_attr(attr)
    init = getattr(attr, "initializer", None)
    if isinstance(init, NumpyArrayInitializer) and init._value.shape != tuple(shape) \
            and init._value.size == int(np.prod(shape)):
        attr = copy.copy(attr)
        attr.initializer = NumpyArrayInitializer(init._value.reshape(shape))
    return attr


def tdm_child(x, node_nums, child_nums, param_attr=None, dtype="int32"):
    """The children of the nodes ``x`` and whether each child is a leaf (an item).

    The tree info parameter has shape ``[node_nums, 3 + child_nums]``; row ``k`` holds
    node ``k``'s item id (0 for inner nodes), layer id, parent id and child ids (0-padded).

        child[i, j] = info[x[i], 3 + j];  leaf_mask[i, j] = info[child[i, j], 0] != 0

    Example::

        child, leaf_mask = fluid.contrib.layers.tdm_child(
            x, node_nums=7, child_nums=2, param_attr=fluid.ParamAttr(
                initializer=fluid.initializer.NumpyArrayInitializer(tree_info)))
    """
    check("tdm_child", "dtype", dtype, _INTS)
    helper = LayerHelper("tdm_child", param_attr=param_attr)
    info = helper.create_parameter(attr=helper.param_attr, shape=[node_nums, 3 + child_nums],
                                   dtype=dtype, default_initializer=Constant(0))
    info.stop_gradient = True
    child = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    leaf_mask = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(type="tdm_child", inputs={"X": [x], "TreeInfo": [info]},
                     outputs={"Child": [child], "LeafMask": [leaf_mask]},
                     attrs={"child_nums": child_nums, "dtype": int(convert_dtype(dtype))})
    return child, leaf_mask


def tdm_sampler(x, neg_samples_num_list, layer_node_num_list, leaf_node_num,
                tree_travel_attr=None, tree_layer_attr=None, output_positive=True,
                output_list=True, seed=0, tree_dtype="int32", dtype="int32"):
    """Layer by layer down the tree path of each leaf ``x[i]``: the path's node (label 1)
    and ``neg_samples_num_list[l]`` distinct other nodes of layer ``l`` drawn uniformly
    (label 0); mask 0 where the path is padded.

    ``tree_travel_attr`` initialises the travel parameter ``[leaf_node_num, layers]`` (each
    leaf's path below the root), ``tree_layer_attr`` the layer parameter
    ``[sum(layer_node_num_list), 1]`` (the node ids, layer after layer). Returns
    ``(samples, labels, mask)``, each ``[N, sum(neg + positive)]``, or with
    ``output_list`` lists of one ``[N, neg_l + positive, 1]`` tensor per layer.

    Example::

        samples, labels, mask = fluid.contrib.layers.tdm_sampler(
            x, [1, 2], [2, 4], leaf_node_num=4,
            tree_travel_attr=fluid.ParamAttr(initializer=NumpyArrayInitializer(travel)),
            tree_layer_attr=fluid.ParamAttr(initializer=NumpyArrayInitializer(layer)))
    """
    where = "tdm_sampler"
    check(where, "tree_dtype", tree_dtype, _INTS)
    check(where, "dtype", dtype, _INTS)
    if len(neg_samples_num_list) != len(layer_node_num_list):
        raise InvalidArgument(expected(where, "neg_samples_num_list",
                                       f"one count per layer ({len(layer_node_num_list)})",
                                       list(neg_samples_num_list)))
    offsets = [0]
    for layer, (negatives, nodes) in enumerate(zip(neg_samples_num_list,
                                                   layer_node_num_list)):
        if negatives >= nodes:
            raise InvalidArgument(expected(where, f"neg_samples_num_list[{layer}]",
                                           f"less than the layer's {nodes} nodes", negatives))
        offsets.append(offsets[-1] + nodes)
    if leaf_node_num is None or leaf_node_num >= offsets[-1]:
        raise InvalidArgument(expected(where, "leaf_node_num",
                                       f"less than the {offsets[-1]} nodes", leaf_node_num))
    helper = LayerHelper(where)
    tree_travel_attr = _shaped(tree_travel_attr, [leaf_node_num, len(layer_node_num_list)])
    tree_layer_attr = _shaped(tree_layer_attr, [offsets[-1], 1])
    travel = helper.create_parameter(attr=tree_travel_attr,
                                     shape=[leaf_node_num, len(layer_node_num_list)],
                                     dtype=tree_dtype, default_initializer=Constant(0))
    layer = helper.create_parameter(attr=tree_layer_attr, shape=[offsets[-1], 1],
                                    dtype=tree_dtype, default_initializer=Constant(0))
    for param in (travel, layer):
        param.stop_gradient = True
    out, labels, mask = (helper.create_variable_for_type_inference(dtype, stop_gradient=True)
                         for _ in range(3))
    helper.append_op(type="tdm_sampler",
                     inputs={"X": [x], "Travel": [travel], "Layer": [layer]},
                     outputs={"Out": [out], "Labels": [labels], "Mask": [mask]},
                     attrs={"neg_samples_num_list": list(neg_samples_num_list),
                            "output_positive": bool(output_positive),
                            "layer_offset_lod": offsets, "seed": seed,
                            "dtype": int(convert_dtype(dtype))})
    if not output_list:
        return out, labels, mask
    per_layer = ([], [], [])
    start = 0
    for negatives in neg_samples_num_list:
        width = negatives + int(bool(output_positive))
        for whole, parts in zip((out, labels, mask), per_layer):
            part = layers.slice(whole, axes=[1], starts=[start], ends=[start + width])
            part = layers.reshape(part, [-1, width, 1])
            part.stop_gradient = True
            parts.append(part)
        start += width
    return per_layer
