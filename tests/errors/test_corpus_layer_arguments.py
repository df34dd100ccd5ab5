"""Bad-input corpus, layer arguments: every public layer of ``fluid.layers`` and
``fluid.nets`` called with wrong types, ranges and names for its arguments. Each call is
refused with a typed error naming the layer and the argument, before anything is added to
the program; the same layer with valid arguments works."""
import math

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.framework import unique_name

from .corpus import Case, check, state_of

L = fluid.layers

# wrong values by what the argument is
BAD = {
    "var": [None, 3, "x", np.ones(3)],
    "vars": [None, [], [3], "x"],
    "pos_int": [None, "a", 2.5, 0, -1, True],
    "int": [None, "a", 1.5, True],
    "non_neg_int": ["a", 1.5, -1],
    "number": ["a", None, [1.0], float("nan")],
    "prob": ["a", -0.1, 1.5, None],
    "bool": ["yes", None, 2],
    "act": ["nope", 5, {"type": "nope"}],
    "name": [5, ["n"]],
    "dtype": ["float33", 3.5, None],
    "int_pair": [0, -1, "a", [1, 2, 3], [1.5, 2]],
    "ints": [5, "a", [1.5], [None]],
    "data_format": ["NCWH", 1],
}

# layer -> (call with keyword overrides, {argument: kind of its values})
def _inputs():
    img = L.data(name="img", shape=[3, 8, 8], dtype="float32")
    x = L.data(name="x", shape=[4], dtype="float32")
    ids = L.data(name="ids", shape=[1], dtype="int64")
    seq = L.data(name="seq", shape=[4], dtype="float32", lod_level=1)
    label = L.data(name="label", shape=[1], dtype="int64")
    w = L.create_parameter([4, 2], "float32")
    probs = L.softmax(x)
    scores = L.fc(seq, 1)
    return img, x, ids, seq, label, w, probs, scores


def _layers(img, x, ids, seq, label, w, probs, scores):
    return {
        "fc": (lambda **k: L.fc(**{"input": x, "size": 3, **k}),
               {"input": "vars", "size": "pos_int", "num_flatten_dims": "int", "act": "act",
                "name": "name", "is_test": "bool"}),
        "embedding": (lambda **k: L.embedding(**{"input": ids, "size": [10, 4], **k}),
                      {"input": "var", "size": "ints", "is_sparse": "bool", "dtype": "dtype"}),
        "conv2d": (lambda **k: L.conv2d(**{"input": img, "num_filters": 2, "filter_size": 3,
                                           **k}),
                   {"input": "var", "num_filters": "pos_int", "filter_size": "int_pair",
                    "stride": "int_pair", "dilation": "int_pair", "act": "act",
                    "data_format": "data_format", "use_cudnn": "bool"}),
        "pool2d": (lambda **k: L.pool2d(**{"input": img, "pool_size": 2, **k}),
                   {"input": "var", "pool_stride": "int_pair", "global_pooling": "bool",
                    "ceil_mode": "bool", "data_format": "data_format"}),
        "batch_norm": (lambda **k: L.batch_norm(**{"input": img, **k}),
                       {"input": "var", "act": "act", "is_test": "bool", "momentum": "prob",
                        "epsilon": "number", "data_layout": "data_format"}),
        "layer_norm": (lambda **k: L.layer_norm(**{"input": img, **k}),
                       {"input": "var", "scale": "bool", "shift": "bool",
                        "begin_norm_axis": "pos_int", "epsilon": "number", "act": "act"}),
        "dropout": (lambda **k: L.dropout(**{"x": x, "dropout_prob": 0.5, **k}),
                    {"x": "var", "dropout_prob": "prob", "is_test": "bool",
                     "seed": "non_neg_int"}),
        "softmax": (lambda **k: L.softmax(**{"input": x, **k}),
                    {"input": "var", "axis": "int", "use_cudnn": "bool"}),
        "matmul": (lambda **k: L.matmul(**{"x": x, "y": x, "transpose_y": True, **k}),
                   {"x": "var", "y": "var", "transpose_x": "bool", "alpha": "number"}),
        "mul": (lambda **k: L.mul(**{"x": x, "y": w, **k}),
                {"x": "var", "x_num_col_dims": "pos_int"}),
        "topk": (lambda **k: L.topk(**{"input": x, "k": 2, **k}),
                 {"input": "var", "k": "pos_int"}),
        "one_hot": (lambda **k: L.one_hot(**{"input": ids, "depth": 5, **k}),
                    {"input": "var", "depth": "pos_int", "allow_out_of_range": "bool"}),
        "mean": (lambda **k: L.mean(**{"x": x, **k}), {"x": "var", "name": "name"}),
        "scale": (lambda **k: L.scale(**{"x": x, **k}),
                  {"x": "var", "scale": "number", "bias": "number",
                   "bias_after_scale": "bool", "act": "act"}),
        "clip": (lambda **k: L.clip(**{"x": x, "min": -1.0, "max": 1.0, **k}),
                 {"x": "var", "min": "number", "max": "number"}),
        "relu": (lambda **k: L.relu(**{"x": x, **k}), {"x": "var", "name": "name"}),
        "leaky_relu": (lambda **k: L.leaky_relu(**{"x": x, **k}),
                       {"x": "var", "alpha": "number"}),
        "log": (lambda **k: L.log(**{"x": x, **k}), {"x": "var"}),
        "reduce_sum": (lambda **k: L.reduce_sum(**{"input": x, **k}),
                       {"input": "var", "keep_dim": "bool", "dim": "dims_of_rank_2"}),
        "reduce_mean": (lambda **k: L.reduce_mean(**{"input": x, **k}),
                        {"input": "var", "keep_dim": "bool"}),
        "reduce_max": (lambda **k: L.reduce_max(**{"input": x, **k}), {"input": "var"}),
        "l2_normalize": (lambda **k: L.l2_normalize(**{"x": x, "axis": 1, **k}),
                         {"x": "var", "axis": "int", "epsilon": "number"}),
        "cast": (lambda **k: L.cast(**{"x": x, "dtype": "float64", **k}),
                 {"x": "var", "dtype": "dtype"}),
        "concat": (lambda **k: L.concat(**{"input": [x, x], "axis": 1, **k}),
                   {"input": "vars", "axis": "int"}),
        "fill_constant": (lambda **k: L.fill_constant(**{"shape": [2, 3], "dtype": "float32",
                                                         "value": 1.0, **k}),
                          {"shape": "ints", "dtype": "dtype", "value": "var_or_number",
                           "force_cpu": "bool"}),
        "zeros": (lambda **k: L.zeros(**{"shape": [2], "dtype": "float32", **k}),
                  {"shape": "ints", "dtype": "dtype"}),
        "argmax": (lambda **k: L.argmax(**{"x": x, "axis": 1, **k}),
                   {"x": "var", "axis": "int"}),
        "uniform_random": (lambda **k: L.uniform_random(**{"shape": [2, 3], **k}),
                           {"shape": "ints", "min": "number", "max": "number",
                            "seed": "non_neg_int", "dtype": "dtype"}),
        "gaussian_random": (lambda **k: L.gaussian_random(**{"shape": [2, 3], **k}),
                            {"mean": "number", "std": "number", "seed": "non_neg_int"}),
        "reshape": (lambda **k: L.reshape(**{"x": x, "shape": [-1, 2, 2], **k}),
                    {"x": "var", "shape": "ints", "act": "act", "inplace": "bool"}),
        "transpose": (lambda **k: L.transpose(**{"x": img, "perm": [0, 2, 3, 1], **k}),
                      {"x": "var", "perm": "ints"}),
        "squeeze": (lambda **k: L.squeeze(**{"input": ids, "axes": [1], **k}),
                    {"input": "var", "axes": "ints"}),
        "unsqueeze": (lambda **k: L.unsqueeze(**{"input": x, "axes": [1], **k}),
                      {"input": "var", "axes": "ints"}),
        "split": (lambda **k: L.split(**{"input": x, "num_or_sections": 2, "dim": 1, **k}),
                  {"input": "var", "num_or_sections": "pos_int_over_1", "dim": "int"}),
        "stack": (lambda **k: L.stack(**{"x": [x, x], **k}), {"x": "vars", "axis": "int"}),
        "slice": (lambda **k: L.slice(**{"input": x, "axes": [1], "starts": [0], "ends": [2],
                                         **k}),
                  {"input": "var", "axes": "ints", "starts": "ints", "ends": "ints"}),
        "gather": (lambda **k: L.gather(**{"input": x, "index": ids, **k}),
                   {"input": "var", "index": "var", "overwrite": "bool"}),
        "square_error_cost": (lambda **k: L.square_error_cost(**{"input": x, "label": x, **k}),
                              {"input": "var", "label": "var"}),
        "cross_entropy": (lambda **k: L.cross_entropy(**{"input": probs,
                                                         "label": label, **k}),
                          {"label": "var", "soft_label": "bool", "ignore_index": "int"}),
        "softmax_with_cross_entropy": (
            lambda **k: L.softmax_with_cross_entropy(**{"logits": x, "label": label, **k}),
            {"logits": "var", "label": "var", "soft_label": "bool", "axis": "int"}),
        "sequence_pool": (lambda **k: L.sequence_pool(**{"input": seq, "pool_type": "sum", **k}),
                          {"input": "var", "pool_type": "enum", "is_test": "bool",
                           "pad_value": "number"}),
        "sequence_softmax": (lambda **k: L.sequence_softmax(**{"input": scores, **k}),
                             {"input": "var"}),
        "sequence_expand": (lambda **k: L.sequence_expand(**{"x": x, "y": seq, **k}),
                            {"x": "var", "y": "var", "ref_level": "int"}),
        "sequence_conv": (lambda **k: L.sequence_conv(**{"input": seq, "num_filters": 2, **k}),
                          {"input": "var", "num_filters": "pos_int", "filter_size": "pos_int",
                           "act": "act", "padding": "bool"}),
        "sequence_reshape": (lambda **k: L.sequence_reshape(**{"input": seq, "new_dim": 2, **k}),
                             {"input": "var", "new_dim": "pos_int"}),
        "sequence_mask": (lambda **k: L.sequence_mask(**{"x": ids, **k}),
                          {"x": "var", "maxlen": "pos_int_or_none", "dtype": "dtype"}),
        "accuracy": (lambda **k: L.accuracy(**{"input": probs, "label": label, **k}),
                     {"input": "var", "label": "var", "k": "pos_int"}),
        "data": (lambda **k: L.data(**{"name": "d", "shape": [3], **k}),
                 {"name": "name_required", "shape": "data_shape", "dtype": "dtype",
                  "lod_level": "non_neg_int", "append_batch_size": "bool"}),
        "sigmoid": (lambda **k: L.sigmoid(**{"x": x, **k}), {"x": "var", "name": "name"}),
        "elementwise_add": (lambda **k: L.elementwise_add(**{"x": x, "y": x, **k}),
                            {"x": "var", "y": "var", "axis": "int", "act": "act"}),
        "simple_img_conv_pool": (
            lambda **k: fluid.nets.simple_img_conv_pool(**{
                "input": img, "num_filters": 2, "filter_size": 3, "pool_size": 2,
                "pool_stride": 2, **k}),
            {"input": "var", "num_filters": "pos_int", "filter_size": "int_pair",
             "pool_size": "int_pair", "act": "act", "conv_groups": "pos_int"}),
        "img_conv_group": (
            lambda **k: fluid.nets.img_conv_group(**{
                "input": img, "conv_num_filter": [2, 2], "pool_size": 2, **k}),
            {"input": "var", "conv_num_filter": "ints", "pool_size": "int_pair",
             "conv_act": "act", "conv_batchnorm_drop_rate": "prob"}),
    }


EXTRA_BAD = {"pos_int_over_1": [1, 0, "a", 2.5], "enum": ["nope", 3, None],
             "var_or_number": ["a", None], "name_required": [None, 5],
             "pos_int_or_none": ["a", 2.5, 0, -1], "dims_of_rank_2": [5, [2], [-3], "a", [1.5]], "data_shape": [5, "a", [1.5], ["a"], [-2]]}


def _bad_values(kind):
    if kind in EXTRA_BAD:
        return EXTRA_BAD[kind]
    return BAD[kind]


def _short(value):
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return repr(value).replace(" ", "")[:20]


class _Env:
    """A program with the layers' inputs; each case builds its layer call into it."""

    def __init__(self):
        self.main, self.startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(self.main, self.startup), unique_name.guard():
            self.inputs = _inputs()

    def call(self, make, **kwargs):
        def act():
            with fluid.program_guard(self.main, self.startup):
                make(*self.inputs)(**kwargs)
        return act


def _layer_cases():
    env = _Env()
    state = state_of(env.main, env.startup)
    names = _layers(*[None] * 8)
    for layer, (_, kinds) in names.items():
        def make(*inputs, layer=layer):
            return _layers(*inputs)[layer][0]
        yield Case("layer_args", f"{layer}:valid", env.call(make), None, False)
        for arg, kind in kinds.items():
            for bad in _bad_values(kind):
                yield Case("layer_args", f"{layer}:{arg}={_short(bad)}",
                           env.call(make, **{arg: bad}), state, True, (layer, arg))


CASES = list(_layer_cases())


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_layer_argument_corpus(case):
    check(case)


def test_unknown_activation_is_refused_at_the_call_listing_the_known_ones():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = L.data(name="x", shape=[4], dtype="float32")
        with pytest.raises(fluid.errors.InvalidArgument, match="relu, leaky_relu, sigmoid"):
            L.fc(x, size=2, act="nope")
    assert not any(op.type == "mul" for op in main.global_block().ops)


def test_conv2d_zero_filter_size_is_an_invalid_argument():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        img = L.data(name="img", shape=[3, 8, 8], dtype="float32")
        with pytest.raises(fluid.errors.InvalidArgument, match="conv2d: filter_size expected"):
            L.conv2d(img, num_filters=2, filter_size=0)
