"""Fake quantisation and dequantisation against element-by-element NumPy references."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from .op_test import OpCase, assert_build_fails, run_case, table_tests

rng = np.random.RandomState(41)


def c_round(v):
    """C's round(): halves away from zero."""
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def quant(x, s, bits):
    r = (1 << (bits - 1)) - 1
    inv = 1.0 / (s + 1e-6) if s <= 1e-30 else 1.0 / s
    return c_round(np.clip(x, -s, s) * inv * r).astype(x.dtype)


def abs_max_ref(i, a):
    x = i["X"]
    s = np.abs(x).max()
    return {"Out": quant(x, s, a.get("bit_length", 8)),
            "OutScale": np.array([s], x.dtype)}


def channel_ref(i, a):
    x = i["X"]
    scales = np.array([np.abs(x[c]).max() for c in range(x.shape[0])], x.dtype)
    out = np.stack([quant(x[c], scales[c], a.get("bit_length", 8))
                    for c in range(x.shape[0])])
    return {"Out": out, "OutScale": scales}


def range_ref(i, a):
    x, last = i["X"], float(i["InScale"][0])
    bits, window = a["bit_length"], a["window_size"]
    if a.get("is_test"):
        return {"Out": quant(x, np.float32(last), bits)}
    step = int(i["Iter"][0])
    window_arr = np.zeros(window, x.dtype)  # a fresh scope: the window is empty
    removed = window_arr[step % window]
    cur = np.abs(x).max()
    window_arr[step % window] = cur
    if last < cur:
        s = cur
    elif abs(removed - last) < 1e-6:
        size = min(step, window)
        s = np.abs(window_arr[:size]).max() if size else cur
    else:
        s = last
    s = x.dtype.type(s)
    return {"Out": quant(x, s, bits), "OutScale": np.array([s], x.dtype),
            "OutScales": window_arr}


def moving_ref(dequantize):
    def ref(i, a):
        x, bits, r = i["X"], a["bit_length"], a["moving_rate"]
        if a.get("is_test"):
            s = i["InScale"][0]
            outs = {}
        else:
            state = np.float32(r * i["InState"][0] + 1)
            accum = np.float32(r * i["InAccum"][0] + np.abs(x).max())
            s = np.float32(accum / state)
            outs = {"OutState": np.array([state], "float32"),
                    "OutAccum": np.array([accum], "float32")}
        out = quant(x, s, bits)
        if dequantize:
            out = out * s / ((1 << (bits - 1)) - 1)
        outs.update(Out=out, OutScale=np.array([s], "float32"))
        return outs
    return ref


def scale_ref(i, a):
    x, r = i["X"], a["moving_rate"]
    state = r * i["InState"][0] + 1
    accum = r * i["InAccum"][0] + np.abs(x).max()
    return {"Out": x, "OutScale": np.array([accum / state], "float32"),
            "OutState": np.array([state], "float32"),
            "OutAccum": np.array([accum], "float32")}


def dequant_ref(i, a):
    return {"Out": (i["Scale"][0] * i["X"] / a["max_range"]).astype(i["X"].dtype)}


def channel_dequant_ref(i, a):
    x, scales, bits = i["X"], i["Scales"], a["quant_bits"]
    out = np.empty_like(x)
    if len(scales) == 1:
        for c in range(x.shape[0]):
            out[c] = scales[0][c] * x[c] / (2 ** (bits[0] - 1) - 1)
    else:
        for n in range(x.shape[0]):
            for c in range(x.shape[1]):
                out[n, c] = (scales[0][c] * scales[1][0] * x[n, c]
                             / ((2 ** (bits[0] - 1) - 1) * (2 ** (bits[1] - 1) - 1)))
    return {"Out": out}


def dequant_log_ref(i, a):
    x, table = i["X"], i["Dict"]
    out = np.zeros(x.shape, "float32")
    for idx in np.ndindex(*x.shape):
        code = int(x[idx])
        out[idx] = -2.0 ** table[code + 128] if code < 0 else 2.0 ** table[code]
    return {"Out": out}


X = ((rng.rand(6, 5) - 0.5) * 8).astype("float32")
X4 = rng.randn(3, 4, 2, 2).astype("float32")
HALVES = np.array([[-1.0, -0.5 / 127, 0.5 / 127, 1.5 / 127]], "float32")  # .5 steps
STATE = {"InAccum": np.array([1.0], "float32"), "InState": np.array([1.0], "float32")}
MOVING_ATTRS = {"bit_length": 5, "moving_rate": 0.9, "is_test": False}

CASES = [
    OpCase("fake_quantize_abs_max", {"X": X}, attrs={"bit_length": 8}, ref=abs_max_ref),
    OpCase("fake_quantize_abs_max", {"X": X.astype("float64")}, attrs={"bit_length": 4},
           ref=abs_max_ref, name="float64_4bits"),
    OpCase("fake_quantize_abs_max", {"X": HALVES}, ref=abs_max_ref, name="halves_away"),
    OpCase("fake_quantize_abs_max", {"X": np.zeros((3, 2), "float32")}, ref=abs_max_ref,
           name="all_zero"),
    OpCase("fake_channel_wise_quantize_abs_max", {"X": X4}, attrs={"bit_length": 8},
           ref=channel_ref),
    OpCase("fake_quantize_range_abs_max",
           {"X": X, "InScale": np.array([0.0], "float32"), "Iter": np.array([0], "int64")},
           attrs={"bit_length": 5, "window_size": 1, "is_test": False}, ref=range_ref,
           name="first_step"),
    OpCase("fake_quantize_range_abs_max",
           {"X": X, "InScale": np.array([9.0], "float32"), "Iter": np.array([3], "int64")},
           attrs={"bit_length": 8, "window_size": 4, "is_test": False}, ref=range_ref,
           name="keeps_larger_history"),
    OpCase("fake_quantize_range_abs_max",
           {"X": X, "InScale": np.array([0.0], "float32"), "Iter": np.array([5], "int64")},
           attrs={"bit_length": 8, "window_size": 4, "is_test": False}, ref=range_ref,
           name="dropped_max_searched_again"),
    OpCase("fake_quantize_range_abs_max",
           {"X": X, "InScale": np.array([1.5], "float32"), "Iter": np.array([0], "int64")},
           attrs={"bit_length": 8, "window_size": 3, "is_test": True}, ref=range_ref,
           name="is_test_clips", outputs={"Out": 1, "OutScale": 1}),
    OpCase("fake_quantize_moving_average_abs_max",
           {"X": X, "InScale": np.array([0.001], "float32"), **STATE},
           attrs=MOVING_ATTRS, ref=moving_ref(False)),
    OpCase("fake_quantize_moving_average_abs_max",
           {"X": X, "InScale": np.array([1.0], "float32")},
           attrs=dict(MOVING_ATTRS, is_test=True), ref=moving_ref(False), name="is_test"),
    OpCase("fake_quantize_dequantize_moving_average_abs_max",
           {"X": X, "InScale": np.array([0.001], "float32"), **STATE},
           attrs=MOVING_ATTRS, ref=moving_ref(True)),
    OpCase("moving_average_abs_max_scale", {"X": X, **STATE},
           attrs={"moving_rate": 0.9, "is_test": False}, ref=scale_ref),
    OpCase("fake_dequantize_max_abs",
           {"X": np.round(X * 10), "Scale": np.array([2.5], "float32")},
           attrs={"max_range": 127.0}, ref=dequant_ref),
    OpCase("fake_dequantize_max_abs",
           {"X": np.round(X * 10).astype("float64"), "Scale": np.array([2.5])},
           attrs={"max_range": 15.0}, ref=dequant_ref, name="float64"),
    OpCase("fake_channel_wise_dequantize_max_abs",
           {"X": np.round(X4 * 30), "Scales": [np.array([1.0, 2.0, 0.5], "float32")]},
           attrs={"quant_bits": [8]}, ref=channel_dequant_ref, name="one_scale"),
    OpCase("fake_channel_wise_dequantize_max_abs",
           {"X": np.round(X4 * 30), "Scales": [np.array([1.0, 2.0, 0.5, 3.0], "float32"),
                                                np.array([0.7861], "float32")]},
           attrs={"quant_bits": [8, 4]}, ref=channel_dequant_ref, name="two_scales"),
    OpCase("dequantize_abs_max",
           {"X": np.array([[-127, -3, 0, 5, 127]], "int8"), "Scale": np.array([2.0], "float32")},
           attrs={"max_range": 127.0},
           ref=lambda i, a: {"Out": (2.0 * i["X"].astype("float32") / 127.0).astype("float32")}),
    OpCase("dequantize_log",
           {"X": np.array([[-128, -1, 0, 1, 127], [5, -5, 64, -64, 2]], "int8"),
            "Dict": rng.rand(128).astype("float32")}, ref=dequant_log_ref),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_quantize_then_dequantize_comes_back_within_half_a_step():
    x = X.astype("float64")
    q = run_case(CASES[1])[2]
    s = float(np.asarray(q["OutScale"])[0])
    back = run_case(OpCase("fake_dequantize_max_abs",
                           {"X": np.asarray(q["Out"]), "Scale": np.array([s])},
                           attrs={"max_range": 7.0}))[2]["Out"]
    assert np.abs(np.asarray(back) - x).max() <= s / 7 / 2 + 1e-12


def _range_program(window):
    program = fluid.Program()
    block = program.global_block()
    for name, dtype in (("x", "float32"), ("scale", "float32"), ("it", "int64")):
        block.create_var(name=name, shape=[-1] if name == "x" else [1], dtype=dtype)
    block.create_var(name="window", dtype="float32", persistable=True)
    block.create_var(name="out", dtype="float32")
    block.append_op(type="fake_quantize_range_abs_max",
                    inputs={"X": ["x"], "InScale": ["scale"], "Iter": ["it"]},
                    outputs={"Out": ["out"], "OutScale": ["scale"], "OutScales": ["window"]},
                    attrs={"window_size": window, "bit_length": 8})
    return program


def test_range_abs_max_keeps_its_window_between_steps():
    program = _range_program(window=2)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    scale = np.array([0.0], "float32")
    seen = []
    for step, peak in enumerate([4.0, 1.0, 2.0, 3.0]):
        x = np.array([peak, -0.5], "float32")
        scale, window = exe.run(program, feed={"x": x, "scale": scale,
                                               "it": np.array([step], "int64")},
                                fetch_list=["scale", "window"], scope=scope)
        seen.append((float(scale[0]), window.tolist()))
    # 4 stays until its slot is overwritten; then the window's maximum takes over
    assert seen == [(4.0, [4.0, 0.0]), (4.0, [4.0, 1.0]), (2.0, [2.0, 1.0]),
                    (3.0, [2.0, 3.0])]


def test_bit_length_out_of_range_is_rejected():
    assert_build_fails("fake_quantize_abs_max", {"X": X}, {"bit_length": 17},
                       "bit_length", "[1, 16]")


def test_integer_input_is_rejected():
    assert_build_fails("fake_quantize_abs_max", {"X": X.astype("int32")}, {}, "X", "float32")
    assert_build_fails("dequantize_abs_max", {"X": X, "Scale": np.ones(1, "float32")},
                       {"max_range": 1.0}, "int8")


def test_channel_scales_must_match_the_channels():
    case = OpCase("fake_channel_wise_dequantize_max_abs",
                  {"X": X4, "Scales": [np.ones(5, "float32")]}, attrs={"quant_bits": [8]})
    with pytest.raises(InvalidArgument, match="one scale per entry of X's dim 0"):
        run_case(case)


def test_training_needs_the_moving_state():
    case = OpCase("fake_quantize_moving_average_abs_max",
                  {"X": X, "InScale": np.ones(1, "float32")}, attrs=MOVING_ATTRS)
    with pytest.raises(InvalidArgument, match="InAccum"):
        run_case(case)


def test_quantizers_stop_the_gradient_as_in_fluid():
    from fluid_nb.ops import registry
    for op in ("fake_quantize_abs_max", "fake_quantize_moving_average_abs_max",
               "fake_quantize_dequantize_moving_average_abs_max"):
        assert registry.get(op).grad is registry.no_gradient
