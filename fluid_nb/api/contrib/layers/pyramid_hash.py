"""Fluid 1.8's ``search_pyramid_hash``: the hashed n-gram embedding of its search models
(the ``pyramid_hash`` op)."""
from ....errors import InvalidArgument, expected
from ...layer_helper import LayerHelper

__all__ = ["search_pyramid_hash"]


def search_pyramid_hash(input, num_emb, space_len, pyramid_layer, rand_len, drop_out_percent,
                        is_training, use_filter, white_list_len, black_list_len, seed, lr,
                        param_attr=None, param_attr_wl=None, param_attr_bl=None, name=None,
                        distribute_update_vars=None, dtype="float32"):
    """Embed every 2..``pyramid_layer``-gram of each int32 token sequence ``input`` by
    hashing it into a flat weight of ``space_len + rand_len`` values: ``num_emb`` values
    per n-gram, in chunks of ``rand_len`` found by XXH32 of the n-gram. In training,
    n-grams are dropped with probability ``drop_out_percent``; with ``use_filter``, only
    n-grams in the white-list Bloom filter and not in the black-list one are used.

    Returns a LoDTensor [n-grams kept, num_emb] (one zero row for a sequence without
    any). The weight is trained by the op's own update (``W -= lr * grad``).

    Example::

        emb = fluid.contrib.search_pyramid_hash(
            input=x, num_emb=64, space_len=128 * 64, pyramid_layer=4, rand_len=16,
            drop_out_percent=0.5, is_training=True, use_filter=False,
            white_list_len=0, black_list_len=0, seed=3, lr=0.002)
    """
    helper = LayerHelper("search_pyramid_hash", name=name)
    w = helper.create_parameter(attr=param_attr, shape=[space_len + rand_len, 1],
                                dtype=dtype)
    w.stop_gradient = True
    inputs = {"X": [input], "W": [w]}
    if white_list_len > 0:
        white = helper.create_parameter(attr=param_attr_wl, shape=[white_list_len, 1],
                                        dtype=dtype)
        white.stop_gradient = True
        inputs["WhiteList"] = [white]
    if black_list_len >= 0:
        black = helper.create_parameter(attr=param_attr_bl, shape=[black_list_len, 1],
                                        dtype=dtype)
        black.stop_gradient = True
        inputs["BlackList"] = [black]
    update_vars = ""
    if distribute_update_vars:
        own = [attr.name for attr in (param_attr, param_attr_wl, param_attr_bl)
               if attr is not None and getattr(attr, "name", None)]
        for var in distribute_update_vars:
            if var not in own:
                raise InvalidArgument(expected("search_pyramid_hash",
                                               "distribute_update_vars",
                                               f"names of this layer's parameters {own}",
                                               var))
        update_vars = ",".join(distribute_update_vars)
    out = helper.create_variable_for_type_inference(dtype)
    drop_pos = helper.create_variable_for_type_inference(dtype)
    x_temp = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="pyramid_hash", inputs=inputs,
                     outputs={"Out": [out], "X_Temp_Out": [x_temp], "DropPos": [drop_pos]},
                     attrs={"num_emb": num_emb, "space_len": space_len,
                            "pyramid_layer": pyramid_layer, "rand_len": rand_len,
                            "drop_out_percent": drop_out_percent,
                            "is_training": int(bool(is_training)), "use_filter": use_filter,
                            "white_list_len": white_list_len,
                            "black_list_len": black_list_len, "seed": seed, "lr": lr,
                            "distribute_update_vars": update_vars})
    return out
