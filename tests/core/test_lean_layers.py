"""Layers of one op on fresh outputs (``pow``, ``sum``, ``sums``, ``assign``, ``expand``,
``cumsum``, ``isfinite``, ``has_inf``, ``has_nan``, ``where``, ``reverse``, ``size``,
``shape``, the comparisons, the logical ops, ``gather``, ``uniform_random``,
``gaussian_random``, ``mul``, ``sign``, ``clip_by_norm``, ``flip``, the float functions
and parametrised activations of ``math`` (``log1p``, ``erf``, ``selu``, ``stanh``,
``brelu``, ...) through ``append_one_op``; ``split``, ``unstack``, ``stack``, ``topk``,
``argsort``, ``dropout``, ``cross_entropy``, ``softmax_with_cross_entropy``, ops of other or
several outputs, through ``append_fresh``) append it all or nothing without a transaction's
snapshot, the record Fluid's way makes (a ``LayerHelper`` naming the temporaries, then
``append_op``), refusals leaving nothing behind. A call given an output, a name or a
Variable where a number goes still appends in a transaction of its own.

An inference remembered per signature answers for the same LoD level of Out before only:
an op that does not share X's LoD (a reduction, cumsum) leaves Out's level as it was."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.api.layer_helper import LayerHelper
from fluid_nb.framework.transaction import atomic
from fluid_nb.tensor.dtypes import VarType
from tests.core.op_records import (  # noqa: F401 (fixtures)
    fallbacks, fresh_fallbacks, record, transactions)

L = fluid.layers


def _by_helper(op_type, inputs, attrs, dtype, stop_gradient=False):
    """Fluid 1.8's way of a one-op layer: a helper names the temporary, append_op adds the
    op (in a transaction, as the general path runs it)."""
    with atomic():
        helper = LayerHelper(op_type)
        out = helper.create_variable_for_type_inference(dtype)
        if stop_gradient:
            out.stop_gradient = True
        helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


F32, BOOL, I64 = VarType.FP32, VarType.BOOL, VarType.INT64


def _two_ops_by_helper(layer_type, op_type, inputs, attrs, then, x_dtype, act=None):
    """Fluid 1.8's layer of two ops under one helper: ``op_type`` into ``<layer>_<n>.tmp_0``,
    then ``then`` (an activation, or square_error_cost's square) into ``.tmp_1``."""
    with atomic():
        helper = LayerHelper(layer_type, act=act)
        out = helper.create_variable_for_type_inference(x_dtype)
        helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
        if act is not None:
            return helper.append_activation(out)
        second = helper.create_variable_for_type_inference(x_dtype)
        helper.append_op(type=then, inputs={"X": [out]}, outputs={"Out": [second]})
        return second


def _sequence_by_helper(op_type, bounds, dtype):
    """Fluid 1.8's range and linspace: each number a [1] fill_constant, then the op."""
    with atomic():
        slots = {slot: [L.fill_constant([1], vt, n)] for slot, n, vt in bounds}
        return _by_helper(op_type, slots, {}, dtype, stop_gradient=True)


def _fresh_by_helper(op_type, inputs, made, attrs, returns, slot_order=None):
    """Fluid 1.8's way of a layer of one op of several outputs: ``made``, (slot, dtype,
    stop_gradient) in the order the helper names them; the op's slots in ``slot_order``;
    returns the variables of slot ``returns``."""
    with atomic():
        helper = LayerHelper(op_type)
        outputs = {}
        for slot, dtype, stop_gradient in made:
            outputs.setdefault(slot, []).append(
                helper.create_variable_for_type_inference(dtype, stop_gradient))
        if slot_order is not None:
            outputs = {slot: outputs[slot] for slot in slot_order}
        helper.append_op(type=op_type, inputs=inputs, outputs=outputs, attrs=attrs)
    return outputs[returns]


#: each layer of one op of other or several outputs, and the same op the helper's way (the
#: variables the layer returns)
FRESH = {
    "split": (lambda v: L.split(v.x, 2, dim=1),
              lambda v: _fresh_by_helper("split", {"X": [v.x]}, [("Out", F32, False)] * 2,
                                         {"num": 2, "axis": 1}, "Out")),
    "split of sections": (lambda v: L.split(v.x, [1, -1, 2], dim=-1),
                          lambda v: _fresh_by_helper(
                              "split", {"X": [v.x]}, [("Out", F32, False)] * 3,
                              {"num": 0, "axis": 1, "sections": [1, -1, 2]}, "Out")),
    "unstack": (lambda v: L.unstack(v.i),
                lambda v: _fresh_by_helper("unstack", {"X": [v.i]}, [("Y", I64, False)] * 3,
                                           {"axis": 0, "num": 3}, "Y")),
    "stack": (lambda v: [L.stack([v.x, v.x], axis=1)],
              lambda v: _fresh_by_helper("stack", {"X": [v.x, v.x]}, [("Y", F32, False)],
                                         {"axis": 1}, "Y")),
    "topk": (lambda v: L.topk(v.x, 2)[1:],
             lambda v: _fresh_by_helper("top_k", {"X": [v.x]},
                                        [("Out", F32, True), ("Indices", I64, True)],
                                        {"k": 2}, "Indices")),
    "argsort": (lambda v: L.argsort(v.x, axis=0, descending=True)[:1],
                lambda v: _fresh_by_helper("argsort", {"X": [v.x]},
                                           [("Out", F32, True), ("Indices", I64, True)],
                                           {"axis": 0, "descending": True}, "Out")),
    "dropout": (lambda v: [L.dropout(v.x, 0.5, seed=1)],
                lambda v: _fresh_by_helper("dropout", {"X": [v.x]},
                                           [("Out", F32, False), ("Mask", VarType.UINT8, True)],
                                           {"dropout_prob": 0.5, "is_test": False,
                                            "fix_seed": True, "seed": 1,
                                            "dropout_implementation": "downgrade_in_infer"},
                                           "Out")),
    "cross_entropy": (lambda v: [L.cross_entropy(v.x, v.idx2)],
                      lambda v: _fresh_by_helper(
                          "cross_entropy2", {"X": [v.x], "Label": [v.idx2]},
                          [("Y", F32, False), ("XShape", F32, False), ("MatchX", F32, False)],
                          {"ignore_index": -100}, "Y", ("Y", "MatchX", "XShape"))),
    "cross_entropy, soft": (lambda v: [L.cross_entropy(v.x, v.x, soft_label=True)],
                            lambda v: _fresh_by_helper(
                                "cross_entropy", {"X": [v.x], "Label": [v.x]},
                                [("Y", F32, False)], {"soft_label": True, "ignore_index": -100},
                                "Y")),
    "softmax_with_cross_entropy": (
        lambda v: [L.softmax_with_cross_entropy(v.x, v.idx2)],
        lambda v: _fresh_by_helper(
            "softmax_with_cross_entropy", {"Logits": [v.x], "Label": [v.idx2]},
            [("Softmax", F32, False), ("Loss", F32, False)],
            {"soft_label": False, "ignore_index": -100, "numeric_stable_mode": True,
             "axis": -1}, "Loss")),
}

#: each layer's call on x (float32 [3, 4]), i (int64 [3, 4]), b (bool [3, 4]) and idx
#: (int64 [2]), and the same op the helper's way
LAYERS = {
    "pow": (lambda v: L.pow(v.x, 2.0),
            lambda v: _by_helper("pow", {"X": [v.x]}, {"factor": 2.0}, F32)),
    "pow of an int": (lambda v: L.pow(v.i, 3),
                      lambda v: _by_helper("pow", {"X": [v.i]}, {"factor": 3.0}, I64)),
    "sum": (lambda v: L.sum([v.x, v.x]),
            lambda v: _by_helper("sum", {"X": [v.x, v.x]}, {"use_mkldnn": False}, F32)),
    "sum of one": (lambda v: L.sum(v.x),
                   lambda v: _by_helper("sum", {"X": [v.x]}, {"use_mkldnn": False}, F32)),
    "sums": (lambda v: L.sums([v.i, v.i, v.i]),
             lambda v: _by_helper("sum", {"X": [v.i] * 3}, {"use_mkldnn": False}, I64)),
    "assign": (lambda v: L.assign(v.b), lambda v: _by_helper("assign", {"X": [v.b]}, {}, BOOL)),
    "expand": (lambda v: L.expand(v.x, [2, 1]),
               lambda v: _by_helper("expand", {"X": [v.x]}, {"expand_times": [2, 1]}, F32)),
    "cumsum": (lambda v: L.cumsum(v.x, axis=1, reverse=True),
               lambda v: _by_helper("cumsum", {"X": [v.x]}, {"axis": 1, "reverse": True}, F32)),
    "isfinite": (lambda v: L.isfinite(v.x),
                 lambda v: _by_helper("isfinite", {"X": [v.x]}, {}, BOOL)),
    "has_nan": (lambda v: L.has_nan(v.x), lambda v: _by_helper("isnan", {"X": [v.x]}, {}, F32)),
    "where": (lambda v: L.where(v.b),
              lambda v: _by_helper("where_index", {"Condition": [v.b]}, {}, I64)),
    "reverse": (lambda v: L.reverse(v.x, 0),
                lambda v: _by_helper("reverse", {"X": [v.x]}, {"axis": [0]}, F32)),
    "size": (lambda v: L.size(v.x), lambda v: _by_helper("size", {"Input": [v.x]}, {}, I64)),
    "shape": (lambda v: L.shape(v.x),
              lambda v: _by_helper("shape", {"Input": [v.x]}, {}, VarType.INT32)),
    "less_than": (lambda v: L.less_than(v.x, v.x),
                  lambda v: _by_helper("less_than", {"X": [v.x], "Y": [v.x]}, {}, BOOL, True)),
    "equal, force_cpu": (lambda v: L.less_than(v.i, v.i, force_cpu=True),
                         lambda v: _by_helper("less_than", {"X": [v.i], "Y": [v.i]},
                                              {"force_cpu": True}, BOOL, True)),
    "logical_and": (lambda v: L.logical_and(v.b, v.b),
                    lambda v: _by_helper("logical_and", {"X": [v.b], "Y": [v.b]}, {}, BOOL)),
    "logical_not": (lambda v: L.logical_not(v.b),
                    lambda v: _by_helper("logical_not", {"X": [v.b]}, {}, BOOL)),
    "gather": (lambda v: L.gather(v.x, v.idx),
               lambda v: _by_helper("gather", {"X": [v.x], "Index": [v.idx]},
                                    {"overwrite": True}, F32)),
    "log1p": (lambda v: L.log1p(v.x), lambda v: _by_helper("log1p", {"X": [v.x]}, {}, F32)),
    "selu": (lambda v: L.selu(v.x, 1.5, 0.5),
             lambda v: _by_helper("selu", {"X": [v.x]}, {"scale": 1.5, "alpha": 0.5}, F32)),
    "stanh": (lambda v: L.stanh(v.x),
              lambda v: _by_helper("stanh", {"X": [v.x]}, {"scale_a": 0.67, "scale_b": 1.7159},
                                   F32)),
    "brelu": (lambda v: L.brelu(v.x, 1, 2),
              lambda v: _by_helper("brelu", {"X": [v.x]}, {"t_min": 1.0, "t_max": 2.0}, F32)),
    "range": (lambda v: L.range(0, 8, 2, "int64"),
              lambda v: _sequence_by_helper("range", [("Start", 0, "int64"),
                                                      ("End", 8, "int64"),
                                                      ("Step", 2, "int64")], I64)),
    "linspace": (lambda v: L.linspace(0, 1, 5, "float32"),
                 lambda v: _sequence_by_helper("linspace", [("Start", 0, "float32"),
                                                            ("Stop", 1, "float32"),
                                                            ("Num", 5, "int32")], F32)),
    "fill_constant_batch_size_like": (
        lambda v: L.fill_constant_batch_size_like(v.x, [1, 5], "float32", 2.0),
        lambda v: _by_helper("fill_constant_batch_size_like", {"Input": [v.x]}, {
            "shape": [1, 5], "dtype": int(F32), "value": 2.0, "str_value": "2.0",
            "input_dim_idx": 0, "output_dim_idx": 0, "force_cpu": False}, F32, True)),
    "elementwise_add, act": (
        lambda v: L.elementwise_add(v.x, v.x, act="relu"),
        lambda v: _two_ops_by_helper("elementwise_add", "elementwise_add",
                                     {"X": [v.x], "Y": [v.x]}, None, None, F32, act="relu")),
    "elementwise_mul, axis and act": (
        lambda v: L.elementwise_mul(v.x, v.x, axis=0, act="tanh"),
        lambda v: _two_ops_by_helper("elementwise_mul", "elementwise_mul",
                                     {"X": [v.x], "Y": [v.x]}, {"axis": 0}, None, F32,
                                     act="tanh")),
    "square_error_cost": (
        lambda v: L.square_error_cost(v.x, v.x),
        lambda v: _two_ops_by_helper("square_error_cost", "elementwise_sub",
                                     {"X": [v.x], "Y": [v.x]}, {}, "square", F32)),
    "mul": (lambda v: L.mul(v.x, v.x4, y_num_col_dims=1),
            lambda v: _by_helper("mul", {"X": [v.x], "Y": [v.x4]},
                                 {"x_num_col_dims": 1, "y_num_col_dims": 1}, F32)),
    "sign": (lambda v: L.sign(v.x), lambda v: _by_helper("sign", {"X": [v.x]}, {}, F32)),
    "clip_by_norm": (lambda v: L.clip_by_norm(v.x, 2),
                     lambda v: _by_helper("clip_by_norm", {"X": [v.x]}, {"max_norm": 2.0}, F32)),
    "flip": (lambda v: L.flip(v.i, [1]),
             lambda v: _by_helper("flip", {"X": [v.i]}, {"dims": [1]}, I64)),
    "uniform_random": (lambda v: L.uniform_random([2, 3], seed=3),
                       lambda v: _by_helper("uniform_random", {}, {
                           "seed": 3, "min": -1.0, "max": 1.0, "dtype": int(F32),
                           "shape": [2, 3]}, F32)),
    "gaussian_random": (lambda v: L.gaussian_random([2, 2], std=2.0),
                        lambda v: _by_helper("gaussian_random", {}, {
                            "mean": 0.0, "std": 2.0, "seed": 0, "dtype": int(F32),
                            "shape": [2, 2]}, F32)),
}


class Values:
    """The layers' inputs, data variables of a fresh program (live ones with ``arrays``)."""

    def __init__(self, arrays=None):
        def data(name, shape, dtype):
            kwargs = {} if arrays is None else {"value": arrays[name]}
            return fluid.layers.data(name, shape, dtype=dtype, append_batch_size=False,
                                     **kwargs)
        self.x = data("x", [3, 4], "float32")
        self.i = data("i", [3, 4], "int64")
        self.b = data("b", [3, 4], "bool")
        self.idx = data("idx", [2], "int64")
        self.idx2 = data("idx2", [3, 1], "int64")
        self.x4 = data("x4", [4, 3], "float32")


def _names(made):
    return [var.name for var in made] if isinstance(made, (list, tuple)) else made.name


def _outcome(call):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        values = Values()
        names = [_names(call(values)) for _ in range(2)]  # (the second from the memos)
        names.append((values.x + values.x).name)  # (the names handed out after)
    block = main.global_block()
    # (the attributes' and the output slots' order too: a program's text and views show it)
    return record(main), names, [(list(op.attrs), list(op.outputs)) for op in block.ops]


@pytest.mark.parametrize("layer", list(LAYERS) + list(FRESH))
def test_a_layer_makes_the_record_fluids_way_makes(layer):
    call, by_helper = LAYERS[layer] if layer in LAYERS else FRESH[layer]
    assert _outcome(call) == _outcome(by_helper)


def test_the_usual_calls_open_no_transaction(transactions):
    with fluid.program_guard(fluid.Program(), fluid.Program()), fluid.unique_name.guard():
        values = Values()
        transactions.clear()  # (the data layers')
        for call, _ in [*LAYERS.values(), *FRESH.values()]:
            call(values)
    assert transactions == []


def test_a_call_given_an_output_a_name_or_a_tensor_still_opens_one(transactions):
    with fluid.program_guard(fluid.Program(), fluid.Program()), fluid.unique_name.guard():
        v = Values()
        transactions.clear()  # (the data layers')
        cond = L.fill_constant([3, 4], "bool", False)
        made = [L.less_than(v.x, v.x, cond=cond), L.logical_and(v.b, v.b, out=cond),
                L.pow(v.x, 2.0, name="p"), L.expand(v.x, [2, 1], name="e"),
                L.sums([v.x, v.x], out=L.fill_constant([3, 4], "float32", 0.0)),
                L.assign(v.x, output=L.fill_constant([3, 4], "float32", 0.0)),
                L.uniform_random(L.fill_constant([2], "int64", 2)),
                L.split(v.x, 2, dim=1, name="s"), L.topk(v.x, L.fill_constant([1], "int32", 1)),
                L.argsort(v.x, name="a"), L.dropout(v.x, 0.5, name="d"),
                L.split(v.x, 2, dim=L.fill_constant([1], "int32", 1))]
    assert len(transactions) == len(made)
    assert made[0] is cond and made[2].name == "p.tmp_0" and made[3].name == "e.tmp_0"


#: calls each layer refuses, and the error's type
REFUSED = {
    "pow of a bool": lambda v: L.pow(v.b, 2.0),
    "pow of a str": lambda v: L.pow(v.x, "a"),
    "sum of mixed dtypes": lambda v: L.sum([v.x, v.b]),
    "sums of mixed dtypes": lambda v: L.sums([v.x, v.i]),
    "expand of the wrong rank": lambda v: L.expand(v.x, [2]),
    "cumsum past the rank": lambda v: L.cumsum(v.x, axis=5),
    "isfinite of a bool": lambda v: L.isfinite(v.b),
    "reverse past the rank": lambda v: L.reverse(v.x, 5),
    "less_than of a number": lambda v: L.less_than(v.x, 1),
    "less_than of bools": lambda v: L.less_than(v.b, v.b),  # (Fluid 1.8's dtype table)
    "equal of a bool y": lambda v: L.equal(v.x, v.b),
    "pow of an int factor tensor": lambda v: L.pow(v.x, v.idx),
    "log1p of ints": lambda v: L.log1p(v.i),
    "brelu of crossed bounds": lambda v: L.brelu(v.x, 2, 1),
    "an activation refused after its op": lambda v: L.elementwise_add(v.i, v.i, act="sigmoid"),
    "square_error_cost of two shapes": lambda v: L.square_error_cost(v.x, v.x4),
    "logical_and of floats": lambda v: L.logical_and(v.x, v.b),
    "gather by floats": lambda v: L.gather(v.x, v.x),
    "uniform_random of ints": lambda v: L.uniform_random([2], dtype="int32"),
    "split of sizes not adding up": lambda v: L.split(v.x, [2, 3], dim=1),
    "unstack past the rank": lambda v: L.unstack(v.x, axis=3),
    "stack of two shapes": lambda v: L.stack([v.x, v.idx]),
    "topk past the dim": lambda v: L.topk(v.x, 7),
    "argsort past the rank": lambda v: L.argsort(v.x, axis=2),
    "dropout of a probability above 1": lambda v: L.dropout(v.x, 1.5),
    "cross_entropy of soft labels as ids": lambda v: L.cross_entropy(v.x, v.idx2,
                                                                     soft_label=True),
    "softmax_with_cross_entropy of other rows": lambda v: L.softmax_with_cross_entropy(
        v.x, v.idx),
}


@pytest.mark.parametrize("refused", list(REFUSED))
def test_a_refused_call_leaves_the_program_and_its_names_as_they_were(refused):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        v = Values()
        L.pow(v.x, 2.0), L.cumsum(v.x)  # (memos filled: the C path's refusals too)
        before = record(main)
        with pytest.raises(fluid.errors.FluidError):
            REFUSED[refused](v)
        after = record(main)
        names = dict(fluid.unique_name._generator.ids)
        name = L.pow(v.x, 2.0).name
    assert after[:2] == before[:2]
    assert name == "pow_1.tmp_0"
    assert not any(key.startswith(("elementwise_add", "square_error_cost")) for key in names)


ARRAYS = {"x": (np.arange(12, dtype="float32").reshape(3, 4) - 4) / 3,
          "i": np.arange(12, dtype="int64").reshape(3, 4) % 3,
          "b": np.arange(12).reshape(3, 4) % 2 == 0, "idx": np.array([2, 0], "int64"),
          "idx2": np.array([[1], [3], [0]], "int64"),
          "x4": np.arange(12, dtype="float32").reshape(4, 3) / 6}


def _softmax(a):
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)

#: each layer's live value against NumPy's
NUMPY = {
    "pow": (lambda v: L.pow(v.x, 2.0), lambda a: a["x"] ** 2),
    "sum": (lambda v: L.sum([v.x, v.x, v.x]), lambda a: 3 * a["x"]),
    "assign": (lambda v: L.assign(v.i), lambda a: a["i"]),
    "expand": (lambda v: L.expand(v.x, [2, 1]), lambda a: np.tile(a["x"], (2, 1))),
    "cumsum": (lambda v: L.cumsum(v.x, axis=0), lambda a: np.cumsum(a["x"], axis=0)),
    "cumsum reversed": (lambda v: L.cumsum(v.i, axis=1, reverse=True),
                        lambda a: np.cumsum(a["i"][:, ::-1], axis=1)[:, ::-1]),
    "isfinite": (lambda v: L.isfinite(v.x), lambda a: np.array([True])),
    "where": (lambda v: L.where(v.b), lambda a: np.argwhere(a["b"])),
    "reverse": (lambda v: L.reverse(v.x, [0, 1]), lambda a: a["x"][::-1, ::-1]),
    "shape": (lambda v: L.shape(v.x), lambda a: np.array([3, 4], "int32")),
    "less_than": (lambda v: L.less_than(v.i, v.i), lambda a: np.zeros((3, 4), bool)),
    "logical_not": (lambda v: L.logical_not(v.b), lambda a: ~a["b"]),
    "gather": (lambda v: L.gather(v.x, v.idx), lambda a: a["x"][[2, 0]]),
    "atan": (lambda v: L.atan(v.x), lambda a: np.arctan(a["x"])),
    "brelu": (lambda v: L.brelu(v.x, 0.1, 0.5), lambda a: np.clip(a["x"], 0.1, 0.5)),
    "stanh": (lambda v: L.stanh(v.x, 0.5, 2.0), lambda a: 2.0 * np.tanh(0.5 * a["x"])),
    "mul": (lambda v: L.mul(v.x, v.x4), lambda a: a["x"] @ a["x4"]),
    "flip": (lambda v: L.flip(v.x, [0]), lambda a: a["x"][::-1]),
    "range": (lambda v: L.range(1, 8, 3, "int64"), lambda a: np.arange(1, 8, 3)),
    "linspace": (lambda v: L.linspace(0, 1, 5, "float64"), lambda a: np.linspace(0, 1, 5)),
    "split": (lambda v: L.split(v.x, [1, 3], dim=1)[1], lambda a: a["x"][:, 1:]),
    "unstack": (lambda v: L.unstack(v.x)[2], lambda a: a["x"][2]),
    "stack": (lambda v: L.stack([v.x, v.x], axis=1), lambda a: np.stack([a["x"]] * 2, 1)),
    "topk": (lambda v: L.topk(v.x, 2)[1], lambda a: np.argsort(-a["x"], 1)[:, :2]),
    "argsort": (lambda v: L.argsort(v.x, axis=0)[0], lambda a: np.sort(a["x"], 0)),
    "softmax_with_cross_entropy": (
        lambda v: L.softmax_with_cross_entropy(v.x, v.idx2),
        lambda a: -np.log(np.take_along_axis(_softmax(a["x"]), a["idx2"], 1))),
}

#: the layers whose repeated call appends in C (their inference remembered)
IN_C = {"pow", "expand", "cumsum", "cumsum reversed", "isfinite", "where", "reverse",
        "shape", "less_than", "logical_not", "atan", "brelu", "stanh", "mul", "flip", "sum",
        "stack", "topk", "argsort", "softmax_with_cross_entropy", "assign", "gather", "split",
        "unstack"}


@pytest.mark.parametrize("layer", list(NUMPY))
def test_a_live_layer_computes_numpys_value_each_call(layer, fallbacks, fresh_fallbacks):
    call, expected = NUMPY[layer]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=fluid.Scope()):
        v = Values(ARRAYS)
        first = call(v).numpy()
        handed = len(fallbacks.calls) + len(fresh_fallbacks.calls)
        second = call(v).numpy()
    np.testing.assert_allclose(first, expected(ARRAYS), rtol=1e-6)
    np.testing.assert_allclose(second, expected(ARRAYS), rtol=1e-6)
    # (the C path's append, or the Python way's)
    assert (len(fallbacks.calls) + len(fresh_fallbacks.calls) == handed) == (layer in IN_C)


@pytest.mark.parametrize("op_type, attrs, layer", [
    ("reduce_sum", {"dim": [1]}, lambda x: L.reduce_sum(x, dim=1)),
    ("cumsum", {"axis": 1}, lambda x: L.cumsum(x, axis=1)),
])
def test_a_remembered_inference_answers_for_outs_lod_level_before(op_type, attrs, layer):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [3, 4], "float32")
        block = main.global_block()
        # (an op writing a variable of a LoD level its inference leaves as it was)
        held = block.create_var(name="held", shape=[3], dtype="float32", lod_level=1)
        block.append_op(type=op_type, inputs={"X": x}, outputs={"Out": held}, attrs=attrs)
        fresh = [layer(x) for _ in range(2)]
    assert held.lod_level == 1
    assert [out.lod_level for out in fresh] == [0, 0]


def test_a_sequence_refused_when_it_runs_takes_back_its_bound_tensors():
    """A live range of step 0 (refused by its op's first run) leaves neither its op nor the
    fill_constant tensors made for its bounds, nor their names."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), \
            fluid.live(program=main, startup_program=startup, scope=fluid.Scope()):
        before = record(main)
        with pytest.raises(fluid.errors.FluidError, match="Step"):
            L.range(0, 8, 0, "int64")
        after = record(main)
        names = [L.range(0, 8, 1, "int64").name, main.global_block().ops[0].outputs["Out"][0]]
    assert after[:2] == before[:2]
    assert names == ["range_0.tmp_0", "fill_constant_0.tmp_0"]
