"""Sequence (LoD) ops against NumPy references, with float64 finite-difference gradients.

The design documents' worked example is the batch of four sequences of 5, 3, 2, 4 rows,
LoD ``[[0, 5, 8, 10, 14]]``, and its two-level variant ``[[0, 3, 5, 8], [0, 2, 3, 5, 7, 8,
10, 13, 14]]`` (eight sequences grouped into three paragraphs).
"""
import numpy as np
import pytest

import fluid_nb as fluid
import fluid_nb.ops.sequence  # noqa: F401  (until _families imports the sequence modules)
import fluid_nb.ops.sequence_conv  # noqa: F401
import fluid_nb.ops.sequence_layout  # noqa: F401
from fluid_nb.errors import InvalidArgument

from .op_test import OpCase, assert_build_fails, build, case_id, check_grad, check_output

rng = np.random.RandomState(0)


def r(*shape, dtype="float32"):
    return rng.uniform(-1, 1, shape).astype(dtype)


LOD1 = [[0, 5, 8, 10, 14]]
LOD2 = [[0, 3, 5, 8], [0, 2, 3, 5, 7, 8, 10, 13, 14]]
EMPTY = [[0, 2, 2, 5, 5, 6]]  # sequences 1 and 3 are empty
X14 = r(14, 3)


def spans(offsets):
    return list(zip(offsets, offsets[1:]))


# --- references -------------------------------------------------------------------------------
def pool_ref(lod, check_index=False):
    def ref(i, a):
        x, kind, pad = i["X"], a.get("pooltype", "AVERAGE"), a.get("pad_value", 0.0)
        out, index = [], []
        for s, e in spans(lod[-1]):
            if s == e:
                out.append(np.full(x.shape[1:], pad))
                index.append(np.full(x.shape[1:], -1))
                continue
            seq = x[s:e].astype("float64")
            out.append({"SUM": lambda: seq.sum(0), "AVERAGE": lambda: seq.mean(0),
                        "SQRT": lambda: seq.sum(0) / np.sqrt(e - s),
                        "LAST": lambda: seq[-1], "FIRST": lambda: seq[0],
                        "MAX": lambda: seq.max(0)}[kind]())
            index.append(seq.argmax(0) + s)
        result = {"Out": (np.array(out).astype(x.dtype), lod[:-1])}
        if check_index:
            result["MaxIndex"] = np.array(index).astype("int32")
        return result
    return ref


def softmax_ref(lod):
    def ref(i, a):
        x = i["X"].astype("float64").reshape(-1)
        out = np.zeros_like(x)
        for s, e in spans(lod[-1]):
            if s < e:
                ex = np.exp(x[s:e] - x[s:e].max())
                out[s:e] = ex / ex.sum()
        return {"Out": (out.reshape(i["X"].shape).astype(i["X"].dtype), lod)}
    return ref


def expand_ref(x_lod, y_lod, ref_level=-1):
    def ref(i, a):
        x, ref_offsets = i["X"], y_lod[ref_level]
        x_offsets = x_lod[0] if x_lod else list(range(len(x) + 1))
        parts, out_offsets = [], [0]
        for k, (s, e) in enumerate(spans(ref_offsets)):
            for _ in range(e - s):
                parts.append(x[x_offsets[k]:x_offsets[k + 1]])
                out_offsets.append(out_offsets[-1] + x_offsets[k + 1] - x_offsets[k])
        return {"Out": (np.concatenate(parts), [out_offsets] if x_lod else [])}
    return ref


def expand_as_ref(y_lod):
    def ref(i, a):
        rows = [i["X"][k] for k, (s, e) in enumerate(spans(y_lod[0])) for _ in range(e - s)]
        return {"Out": (np.array(rows).reshape((-1,) + i["X"].shape[1:]), y_lod)}
    return ref


def concat_ref(lods):
    def ref(i, a):
        parts, offsets = [], [0]
        for k in range(len(lods[0][0]) - 1):
            for x, lod in zip(i["X"], lods):
                parts.append(x[lod[0][k]:lod[0][k + 1]])
            offsets.append(sum(len(p) for p in parts))
        return {"Out": (np.concatenate(parts), [offsets])}
    return ref


def conv_ref(lod):
    def ref(i, a):
        x, w = i["X"].astype("float64"), i["Filter"].astype("float64")
        start, length = a.get("contextStart", 0), a["contextLength"]
        trainable = a.get("paddingTrainable", False)
        up = max(0, -start)
        out = np.zeros((len(x), w.shape[1]))
        for s, e in spans(lod[0]):
            for t in range(s, e):
                ctx = []
                for j in range(length):
                    pos = t - s + start + j
                    if 0 <= pos < e - s:
                        ctx.append(x[s + pos])
                    elif trainable:
                        p = i["PaddingData"]
                        ctx.append(p[pos + up] if pos < 0 else p[up + pos - (e - s)])
                    else:
                        ctx.append(np.zeros(x.shape[1]))
                out[t] = np.concatenate(ctx) @ w
        return {"Out": (out.astype(i["X"].dtype), lod)}
    return ref


def reshape_ref(lod):
    def ref(i, a):
        x, new_dim = i["X"], a["new_dim"]
        offsets = [0]
        for s, e in spans(lod[0]):
            offsets.append(offsets[-1] + (e - s) * x.shape[1] // new_dim)
        return {"Out": (x.reshape(-1, new_dim), [offsets])}
    return ref


def reverse_ref(lod):
    def ref(i, a):
        x = i["X"]
        y = np.concatenate([x[s:e][::-1] for s, e in spans(lod[-1])])
        return {"Y": (y, lod)}
    return ref


def mask_ref(i, a):
    x = i["X"]
    maxlen = int(i["MaxLenTensor"][0]) if "MaxLenTensor" in i else a.get("maxlen", -1)
    if maxlen < 0:
        maxlen = int(x.max())
    dtype = {3: "int64", 5: "float32", 0: "bool", 2: "int32"}[a.get("out_dtype", 3)]
    return {"Y": (np.arange(maxlen) < x[..., None]).astype(dtype)}


def pad_ref(lod):
    def ref(i, a):
        x, pad = i["X"], i["PadValue"]
        lengths = [e - s for s, e in spans(lod[0])]
        padded = a.get("padded_length", -1)
        padded = max(lengths) if padded == -1 else padded
        out = np.empty((len(lengths), padded) + x.shape[1:], x.dtype)
        out[...] = pad.reshape(x.shape[1:] if pad.size > 1 else ())
        for k, (s, e) in enumerate(spans(lod[0])):
            out[k, :e - s] = x[s:e]
        return {"Out": out, "Length": np.array(lengths, "int64")}
    return ref


def unpad_ref(i, a):
    x, lengths = i["X"], i["Length"]
    rows = np.concatenate([x[k, :n] for k, n in enumerate(lengths)])
    if x.ndim == 2:
        rows = rows.reshape(-1, 1)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).tolist()
    return {"Out": (rows, [offsets])}


def slice_ref(lod):
    def ref(i, a):
        x, offs, lens = i["X"], i["Offset"].reshape(-1), i["Length"].reshape(-1)
        parts = [x[s + o:s + o + n] for (s, _), o, n in zip(spans(lod[0]), offs, lens)]
        offsets = np.concatenate([[0], np.cumsum(lens)]).tolist()
        return {"Out": (np.concatenate(parts), [offsets])}
    return ref


def lod_reset_ref(new_lod):
    return lambda i, a: {"Out": (i["X"], new_lod)}


def scatter_ref(ids_lod):
    def ref(i, a):
        out = i["X"].copy()
        flat = out.reshape(len(out), -1)
        ids, upd = i["Ids"].reshape(-1), i["Updates"].reshape(-1)
        for seq, (s, e) in enumerate(spans(ids_lod[0])):
            for j in range(s, e):
                flat[seq, ids[j]] += upd[j]
        return {"Out": out}
    return ref


def enumerate_ref(lod):
    def ref(i, a):
        x, win, pad = i["X"].reshape(-1), a["win_size"], a.get("pad_value", 0)
        out = np.full((len(x), win), pad, dtype=i["X"].dtype)
        for s, e in spans(lod[-1]):
            for row in range(s, e):
                for k in range(win):
                    if row + k < e:
                        out[row, k] = x[row + k]
        return {"Out": (out, lod)}
    return ref


# --- tables -----------------------------------------------------------------------------------
def pool_case(kind, x, lod, grad=False, **attrs):
    return OpCase("sequence_pool", {"X": x}, attrs=dict(pooltype=kind, **attrs),
                  lod={"X": lod}, ref=pool_ref(lod, kind == "MAX"),
                  grad=["X"] if grad else [], name=f"{kind}_{len(lod)}lvl_{len(x)}rows")


small = r(6, 2)  # LoD EMPTY: sequences of 2, 0, 3, 0, 1 rows
pad_x = r(7, 2)

CASES = [
    # the worked example: 14 rows in four sequences, and grouped in two levels
    pool_case("SUM", X14, LOD1), pool_case("MAX", X14, LOD1), pool_case("LAST", X14, LOD1),
    pool_case("AVERAGE", X14, LOD1), pool_case("SQRT", X14, LOD1),
    pool_case("FIRST", X14, LOD1),
    pool_case("SUM", X14, LOD2), pool_case("MAX", X14, LOD2), pool_case("LAST", X14, LOD2),
    *[pool_case(kind, small, EMPTY, grad=True, pad_value=0.5)
      for kind in ("SUM", "AVERAGE", "SQRT", "MAX", "LAST", "FIRST")],
    OpCase("sequence_softmax", {"X": r(14, 1)}, lod={"X": LOD1}, ref=softmax_ref(LOD1)),
    OpCase("sequence_softmax", {"X": r(14)}, lod={"X": LOD2}, ref=softmax_ref(LOD2),
           name="two_level"),
    OpCase("sequence_softmax", {"X": r(6, 1)}, lod={"X": EMPTY}, ref=softmax_ref(EMPTY),
           grad=["X"], name="empty"),
    OpCase("sequence_expand", {"X": r(3, 2), "Y": r(8, 1)},
           lod={"X": [[0, 2, 3]], "Y": [[0, 2, 4], [0, 3, 6, 7, 8]]}, attrs={"ref_level": 0},
           ref=expand_ref([[0, 2, 3]], [[0, 2, 4], [0, 3, 6, 7, 8]], 0), grad=["X"],
           name="x_lod"),
    OpCase("sequence_expand", {"X": r(3, 2), "Y": r(5, 1)}, lod={"Y": [[0, 2, 2, 5]]},
           ref=expand_ref([], [[0, 2, 2, 5]]), grad=["X"], name="x_rows_empty"),
    OpCase("sequence_expand", {"X": r(4, 3), "Y": r(14, 1)}, lod={"Y": LOD1},
           ref=expand_ref([], LOD1), name="worked_example"),
    OpCase("sequence_expand_as", {"X": r(4, 3), "Y": r(14, 1)}, lod={"Y": LOD1},
           ref=expand_as_ref(LOD1)),
    OpCase("sequence_expand_as", {"X": r(3, 2), "Y": r(3, 1)}, lod={"Y": [[0, 1, 1, 3]]},
           ref=expand_as_ref([[0, 1, 1, 3]]), grad=["X"], name="empty"),
    OpCase("sequence_concat", {"X": [X14, r(14, 3)]}, lod={"X": LOD1},
           ref=concat_ref([LOD1, LOD1])),
    OpCase("sequence_concat", {"X": [small, r(6, 2), r(6, 2)]}, lod={"X": EMPTY},
           ref=concat_ref([EMPTY] * 3), grad=["X"], name="three_empty"),
    OpCase("sequence_conv", {"X": X14, "Filter": r(9, 2)}, lod={"X": LOD1},
           attrs={"contextLength": 3, "contextStart": -1}, ref=conv_ref(LOD1)),
    OpCase("sequence_conv", {"X": X14, "Filter": r(12, 2), "PaddingData": r(3, 3)},
           lod={"X": LOD1}, attrs={"contextLength": 4, "contextStart": -1,
                                   "paddingTrainable": True},
           ref=conv_ref(LOD1), name="trainable"),
    OpCase("sequence_conv", {"X": r(6, 2), "Filter": r(6, 2), "PaddingData": r(3, 2)},
           lod={"X": EMPTY}, attrs={"contextLength": 3, "contextStart": 1,
                                    "paddingTrainable": True},
           ref=conv_ref(EMPTY), name="down_pad_empty"),
    OpCase("sequence_conv", {"X": r(5, 2), "Filter": r(6, 2), "PaddingData": r(2, 2)},
           lod={"X": [[0, 2, 5]]}, attrs={"contextLength": 3, "contextStart": -1,
                                          "paddingTrainable": True},
           ref=conv_ref([[0, 2, 5]]), grad=["X", "Filter", "PaddingData"], name="grad"),
    OpCase("sequence_conv", {"X": r(5, 2), "Filter": r(4, 3)}, lod={"X": [[0, 1, 5]]},
           attrs={"contextLength": 2, "contextStart": -2}, ref=conv_ref([[0, 1, 5]]),
           grad=["X", "Filter"], name="zero_pad_grad"),
    # a batch of many sequences, some shorter than the window, with padding on both sides
    OpCase("sequence_conv", {"X": r(60, 2), "Filter": r(10, 3), "PaddingData": r(4, 2)},
           lod={"X": [[0, 1, 1, 4, 12, 13, 30, 32, 60]]},
           attrs={"contextLength": 5, "contextStart": -2, "paddingTrainable": True},
           ref=conv_ref([[0, 1, 1, 4, 12, 13, 30, 32, 60]]), name="many_sequences"),
    OpCase("sequence_reshape", {"X": r(6, 4)}, lod={"X": [[0, 2, 3, 6]]},
           attrs={"new_dim": 2}, ref=reshape_ref([[0, 2, 3, 6]])),
    OpCase("sequence_reshape", {"X": r(6, 2)}, lod={"X": [[0, 2, 2, 6]]},
           attrs={"new_dim": 4}, ref=reshape_ref([[0, 2, 2, 6]]), grad=["X"], name="empty"),
    OpCase("sequence_reverse", {"X": X14}, lod={"X": LOD1}, ref=reverse_ref(LOD1)),
    OpCase("sequence_reverse", {"X": X14}, lod={"X": LOD2}, ref=reverse_ref(LOD2),
           name="two_level"),
    OpCase("sequence_reverse", {"X": small}, lod={"X": EMPTY}, ref=reverse_ref(EMPTY),
           grad=["X"], name="empty"),
    OpCase("sequence_mask", {"X": np.array([5, 3, 0, 2])}, attrs={"maxlen": 6}, ref=mask_ref),
    OpCase("sequence_mask", {"X": np.array([[1, 3], [4, 0]], "int32")},
           attrs={"out_dtype": 5}, ref=mask_ref, name="maxlen_from_x_fp32"),
    OpCase("sequence_mask", {"X": np.array([2, 1]), "MaxLenTensor": np.array([3], "int32")},
           ref=mask_ref, name="maxlen_tensor"),
    OpCase("sequence_pad", {"X": X14, "PadValue": np.array([0.5], "float32")},
           lod={"X": LOD1}, ref=pad_ref(LOD1)),
    OpCase("sequence_pad", {"X": pad_x, "PadValue": r(2)}, lod={"X": [[0, 3, 3, 7]]},
           attrs={"padded_length": 5}, ref=pad_ref([[0, 3, 3, 7]]), grad=["X"],
           grad_outputs=["Out"], name="step_pad_value_empty"),
    OpCase("sequence_pad", {"X": r(5, 2, 2), "PadValue": np.array([0.0], "float32")},
           lod={"X": [[0, 1, 5]]}, ref=pad_ref([[0, 1, 5]]), name="rank3"),
    OpCase("sequence_unpad", {"X": r(3, 4, 2), "Length": np.array([2, 0, 4])},
           ref=unpad_ref, grad=["X"]),
    OpCase("sequence_unpad", {"X": r(4, 5), "Length": np.array([5, 3, 2, 4])},
           ref=unpad_ref, name="rank2_worked_example"),
    OpCase("sequence_slice", {"X": X14, "Offset": np.array([[1], [0], [1], [2]]),
                              "Length": np.array([[3], [2], [0], [2]])},
           lod={"X": LOD1}, ref=slice_ref(LOD1)),
    OpCase("sequence_slice", {"X": small, "Offset": np.array([[1], [0], [0], [0], [1]]),
                              "Length": np.array([[1], [0], [2], [0], [0]])},
           lod={"X": EMPTY}, ref=slice_ref(EMPTY), grad=["X"], name="empty"),
    OpCase("lod_reset", {"X": X14}, attrs={"target_lod": [0, 4, 14]},
           ref=lod_reset_ref([[0, 4, 14]])),
    OpCase("lod_reset", {"X": X14}, lod={"X": LOD1}, attrs={"target_lod": [0, 5, 8, 10, 14]},
           ref=lod_reset_ref([[0, 5, 8, 10, 14]]), name="replace"),
    OpCase("lod_reset", {"X": X14, "Y": np.array([0, 7, 7, 14], "int32")},
           ref=lod_reset_ref([[0, 7, 7, 14]]), name="y_data"),
    OpCase("lod_reset", {"X": X14, "Y": r(14, 1)}, lod={"Y": LOD2},
           ref=lod_reset_ref(LOD2), name="y_lod"),
    OpCase("lod_reset", {"X": r(8, 2)}, lod={"X": [[0, 3, 5, 8]]},
           attrs={"target_lod": [0, 1, 1, 2, 4, 5, 6, 8, 8], "append": True},
           ref=lod_reset_ref([[0, 3, 5, 8], [0, 1, 1, 2, 4, 5, 6, 8, 8]]), name="append"),
    OpCase("lod_reset", {"X": small}, lod={"X": EMPTY}, attrs={"target_lod": [0, 6]},
           ref=lod_reset_ref([[0, 6]]), grad=["X"], name="grad"),
    OpCase("sequence_scatter", {"X": r(3, 6), "Ids": np.array([[0], [5], [0], [2], [2], [4]]),
                                "Updates": r(6, 1)},
           lod={"Ids": [[0, 3, 3, 6]], "Updates": [[0, 3, 3, 6]]},
           ref=scatter_ref([[0, 3, 3, 6]]), grad=["X", "Updates"]),
    OpCase("sequence_scatter", {"X": r(2, 2, 2), "Ids": np.array([[3], [1], [0]]),
                                "Updates": r(3, 1)},
           lod={"Ids": [[0, 1, 3]], "Updates": [[0, 1, 3]]},
           ref=scatter_ref([[0, 1, 3]]), name="rank3_x"),
    OpCase("sequence_enumerate", {"X": np.arange(14).reshape(14, 1)}, lod={"X": LOD1},
           attrs={"win_size": 3, "pad_value": -1}, ref=enumerate_ref(LOD1)),
    OpCase("sequence_enumerate", {"X": np.arange(6, dtype="int32").reshape(6, 1)},
           lod={"X": EMPTY}, attrs={"win_size": 2}, ref=enumerate_ref(EMPTY),
           name="empty_int32"),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_output_matches_numpy(case):
    check_output(case)


GRAD_CASES = [c for c in CASES if c.grad]


@pytest.mark.parametrize("case", GRAD_CASES, ids=case_id)
def test_grad_matches_finite_differences(case):
    check_grad(case)


# --- focused tests ----------------------------------------------------------------------------
def _run(op_type, inputs, outputs, attrs=None, lod_levels=None):
    """Run one op; ``inputs`` maps slot -> array or (array, lod) or a list of those."""
    program = fluid.Program()
    block = program.global_block()
    feed, names = {}, {}
    for slot, value in inputs.items():
        values = value if isinstance(value, list) else [value]
        names[slot] = []
        for k, v in enumerate(values):
            array, lod = v if isinstance(v, tuple) else (v, [])
            name = f"{slot.lower()}{k}"
            block.create_var(name=name, shape=array.shape, dtype=array.dtype,
                             lod_level=len(lod))
            feed[name] = (array, lod) if lod else array
            names[slot].append(name)
    outs = {slot: [f"out_{slot.lower()}"] for slot in outputs}
    block.append_op(type=op_type, inputs=names, outputs=outs, attrs=attrs or {})
    exe = fluid.Executor(fluid.CPUPlace())
    return exe.run(program, feed=feed, fetch_list=[n[0] for n in outs.values()],
                   scope=fluid.Scope(), return_numpy=False)


def test_sequence_concat_with_different_lods():
    a, b = r(5, 2), r(4, 2)
    (out,) = _run("sequence_concat", {"X": [(a, [[0, 2, 2, 5]]), (b, [[0, 1, 3, 4]])]},
                  ["Out"])
    want = np.concatenate([a[0:2], b[0:1], b[1:3], a[2:5], b[3:4]])
    np.testing.assert_allclose(np.asarray(out), want)
    assert out.lod() == [[0, 3, 5, 9]]


def test_sequence_pool_maxindex_marks_empty_sequences():
    x = np.array([[1.0], [3.0], [2.0]], "float32")
    out, index = _run("sequence_pool", {"X": (x, [[0, 2, 2, 3]])}, ["Out", "MaxIndex"],
                      {"pooltype": "MAX", "pad_value": -9.0})
    np.testing.assert_allclose(np.asarray(out), [[3.0], [-9.0], [2.0]])
    np.testing.assert_array_equal(np.asarray(index), [[1], [-1], [2]])


def test_compile_time_rows_unknown_and_lod_levels():
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=(-1, 3), dtype="float32", lod_level=2)
    for name in ("pooled", "seq"):
        block.create_var(name=name)
    block.append_op(type="sequence_pool", inputs={"X": ["x"]}, outputs={"Out": ["pooled"]},
                    attrs={"pooltype": "SUM"})
    block.append_op(type="sequence_reshape", inputs={"X": ["pooled"]},
                    outputs={"Out": ["seq"]}, attrs={"new_dim": 1})
    assert block.var("pooled").shape == (-1, 3) and block.var("pooled").lod_level == 1
    assert block.var("seq").shape == (-1, 1) and block.var("seq").lod_level == 1


def test_sequence_pool_needs_a_lod_input():
    assert_build_fails("sequence_pool", {"X": r(3, 2)}, {"pooltype": "SUM"}, "lod_level")


def test_sequence_pool_rejects_unknown_pooltype():
    with pytest.raises(InvalidArgument, match="sequence_pool.*pooltype"):
        build(OpCase("sequence_pool", {"X": r(3, 2)}, lod={"X": [[0, 3]]},
                     attrs={"pooltype": "MEDIAN"}))


def test_sequence_conv_checks_filter_shape():
    with pytest.raises(InvalidArgument, match="sequence_conv.*Filter"):
        build(OpCase("sequence_conv", {"X": r(4, 2), "Filter": r(5, 2)},
                     lod={"X": [[0, 4]]}, attrs={"contextLength": 3}))


def test_sequence_pad_checks_pad_value_shape():
    with pytest.raises(InvalidArgument, match="sequence_pad.*PadValue"):
        build(OpCase("sequence_pad", {"X": r(4, 3), "PadValue": r(2)}, lod={"X": [[0, 4]]}))


def test_lod_reset_needs_a_target():
    assert_build_fails("lod_reset", {"X": r(3, 2)}, {}, "target_lod")


def test_sequence_expand_mismatched_sequences_fail_at_run_time():
    with pytest.raises(InvalidArgument, match="sequence_expand"):
        _run("sequence_expand", {"X": (r(3, 2), [[0, 1, 3]]), "Y": (r(3, 1), [[0, 1, 2, 3]])},
             ["Out"])


def test_sequence_slice_out_of_range_fails():
    with pytest.raises(InvalidArgument, match="sequence_slice"):
        _run("sequence_slice", {"X": (r(4, 2), [[0, 2, 4]]),
                                "Offset": np.array([[1], [0]]),
                                "Length": np.array([[2], [1]])}, ["Out"])


@pytest.mark.parametrize("kind", ["LAST", "FIRST"])
def test_sequence_pool_last_first_rerun_on_other_lods(kind):
    """The op keeps the rows it picked for the last LoD; a run on another LoD (with or
    without empty sequences) picks its own, forward and backward."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[3], dtype="float64", lod_level=1)
        x.stop_gradient = False
        out = fluid.layers.sequence_pool(x, kind.lower(), pad_value=0.25)
        loss = fluid.layers.mean(out)
        fluid.backward.append_backward(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    for offsets in ([0, 2, 5, 6], [0, 2, 2, 6], [0, 1, 4, 6], [0, 2, 5, 6], [0, 0, 6, 6]):
        data = r(6, 3).astype("float64")
        got, dx = exe.run(main, feed={"x": (data, [offsets])}, fetch_list=[out, "x@GRAD"],
                          scope=scope, return_numpy=False)
        want, _ = pool_ref([offsets])({"X": data}, {"pooltype": kind,
                                                   "pad_value": 0.25})["Out"]
        np.testing.assert_array_equal(np.asarray(got), want)
        want_dx = np.zeros_like(data)
        for s, e in spans(offsets):
            if e > s:
                want_dx[e - 1 if kind == "LAST" else s] = 1.0 / want.size
        np.testing.assert_allclose(np.asarray(dx), want_dx, rtol=1e-12)


@pytest.mark.parametrize("grad_form", ["sequence_reverse_grad", "sequence_reverse"])
def test_sequence_reverse_gradient_through_a_mean_is_laid_out_as_x(grad_form):
    """dX of mean(sequence_reverse(X)): Paddle's own programs differentiate with a
    sequence_reverse of Y@GRAD, which reads Y@GRAD's LoD: mean_grad must hand it on."""
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x", shape=(-1, 3), dtype="float64", lod_level=1)
    block.append_op(type="sequence_reverse", inputs={"X": ["x"]}, outputs={"Y": ["y"]})
    block.append_op(type="mean", inputs={"X": ["y"]}, outputs={"Out": ["m"]})
    block.create_var(name="m@GRAD", shape=(), dtype="float64")
    block.append_op(type="mean_grad", inputs={"X": ["y"], "Out@GRAD": ["m@GRAD"]},
                    outputs={"X@GRAD": ["y@GRAD"]})
    inputs = {"X": ["y@GRAD"]} if grad_form == "sequence_reverse" else {
        "X": ["x"], "Y@GRAD": ["y@GRAD"]}
    outputs = {"Y": ["x@GRAD"]} if grad_form == "sequence_reverse" else {"X@GRAD": ["x@GRAD"]}
    block.append_op(type=grad_form, inputs=inputs, outputs=outputs)
    x = X14.astype("float64")
    (dx,) = fluid.Executor(fluid.CPUPlace()).run(
        program, feed={"x": (x, LOD1), "m@GRAD": np.array(2.0)}, fetch_list=["x@GRAD"],
        scope=fluid.Scope(), return_numpy=False)
    np.testing.assert_allclose(np.asarray(dx), np.full(x.shape, 2.0 / x.size))
    assert dx.lod() == LOD1


def test_sequence_reverse_gradient_from_an_fc_takes_the_lod_of_x():
    """fc after sequence_reverse: mul_grad hands back Y@GRAD with Y's LoD (Paddle 2.6's
    grad ops share each input's LoD); the gradient of X is reversed by X's sequences and
    carries X's LoD."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[3], dtype="float64", lod_level=1)
        x.stop_gradient = False
        y = fluid.layers.sequence_reverse(x)
        out = fluid.layers.fc(y, size=1, bias_attr=False,
                              param_attr=fluid.ParamAttr(
                                  name="w", initializer=fluid.initializer.Constant(1.0)))
        fluid.backward.append_backward(fluid.layers.reduce_sum(out * out))
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    data = X14.astype("float64")
    dy, dx = exe.run(main, feed={"x": (data, LOD1)}, fetch_list=[y.name + "@GRAD", "x@GRAD"],
                     scope=scope, return_numpy=False)
    assert dy.lod() == LOD1
    assert dx.lod() == LOD1
    # d/dx of sum((rev(x) @ 1)^2) = 2 * row sums of x, at the same rows (reversal cancels)
    want = np.repeat(2 * data.sum(axis=1, keepdims=True), 3, axis=1)
    np.testing.assert_allclose(np.asarray(dx), want)


def test_sequence_reverse_grad_uses_the_lod_of_x_not_that_of_dy():
    """A Y@GRAD with no LoD, or with another one, is laid out as X: X's sequences decide."""
    dy = r(14, 3)
    for dy_value in (dy, (dy, [[0, 7, 14]])):
        (dx,) = _run("sequence_reverse_grad", {"X": (X14, LOD1), "Y@GRAD": dy_value},
                     ["X@GRAD"])
        want = np.concatenate([dy[a:b][::-1] for a, b in spans(LOD1[0])])
        np.testing.assert_array_equal(np.asarray(dx), want)
        assert dx.lod() == LOD1


def test_sequence_scatter_refuses_ids_beyond_the_row():
    with pytest.raises(InvalidArgument, match="sequence_scatter: input 'Ids' values"):
        _run("sequence_scatter", {"X": r(2, 3), "Ids": (np.array([[3]]), [[0, 1]]),
                                  "Updates": (r(1, 1), [[0, 1]])}, ["Out"])


@pytest.mark.parametrize("kind", ["SUM", "AVERAGE", "SQRT", "MAX"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sequence_pool_of_many_sequences_pools_each_on_its_own(kind, dtype):
    """Every sequence of a batch pooled at once is each sequence pooled alone: random LoDs
    with empty sequences, rows of several shapes, ties (the first maximal row wins) and NaN
    (maximal) for MAX; its gradient goes to the row MaxIndex names."""
    rng = np.random.RandomState(11)
    for tail in [(), (3,), (2, 2)]:
        lengths = rng.randint(0, 6, 40)
        lengths[rng.randint(40)] = 0
        offsets = [0] + np.cumsum(lengths).tolist()
        x = rng.randint(-3, 4, (offsets[-1],) + tail).astype(dtype)  # many ties
        if kind == "MAX":
            x.reshape(-1)[rng.randint(x.size, size=3)] = np.nan
        out, index = _run("sequence_pool", {"X": (x, [offsets])}, ["Out", "MaxIndex"],
                          {"pooltype": kind, "pad_value": -7.0})
        out, index = np.asarray(out), np.asarray(index)
        for i, (s, e) in enumerate(spans(offsets)):
            seq = x[s:e]
            if s == e:
                assert (out[i] == -7.0).all()
                continue
            want = {"SUM": lambda: seq.sum(0), "AVERAGE": lambda: seq.sum(0) / (e - s),
                    "SQRT": lambda: seq.sum(0) / np.sqrt(e - s), "MAX": lambda: seq.max(0)}
            np.testing.assert_allclose(out[i], want[kind](), rtol=1e-6)
            if kind == "MAX":
                np.testing.assert_array_equal(index[i], seq.argmax(0) + s)
                assert (index[lengths == 0] == -1).all()


def test_sequence_pool_max_gradient_goes_to_each_sequences_first_maximum():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4], dtype="float64", lod_level=1)
        x.stop_gradient = False
        pooled = fluid.layers.sequence_pool(x, "max")
        weights = fluid.layers.data(name="w", shape=[4], dtype="float64")
        loss = fluid.layers.reduce_sum(pooled * weights)
        fluid.backward.append_backward(loss)
    data = np.random.RandomState(2).randint(0, 3, (12, 4)).astype("float64")
    offsets = [0, 3, 3, 7, 8, 12]
    weights = np.arange(1, 21, dtype="float64").reshape(5, 4)
    dx, = fluid.Executor(fluid.CPUPlace()).run(
        main, feed={"x": (data, [offsets]), "w": weights}, fetch_list=["x@GRAD"],
        scope=fluid.Scope())
    want = np.zeros_like(data)
    for i, (s, e) in enumerate(spans(offsets)):
        if e > s:
            want[data[s:e].argmax(0) + s, np.arange(4)] = weights[i]
    np.testing.assert_array_equal(dx, want)


def test_sequence_max_in_c_leaves_what_it_does_not_take_untouched():
    """The host's one-pass MAX takes plain float arrays and sane offsets; anything else it
    refuses before writing, and the op pools one sequence at a time as before."""
    from fluid_nb.tensor.tensor import sequence_max
    data = np.arange(12, dtype="float32").reshape(6, 2)
    offsets = np.array([0, 2, 2, 6])
    out, index = np.full((3, 2), -5.0, "float32"), np.full((3, 2), -1, "int32")
    assert sequence_max(data, offsets, out, index)
    np.testing.assert_array_equal(out, [[2, 3], [-5, -5], [10, 11]])
    np.testing.assert_array_equal(index, [[1, 1], [-1, -1], [5, 5]])
    for args in [(data.astype("float16"), offsets, out.astype("float16"), index),
                 (data, np.array([0, 3, 2, 6]), out, index),  # decreasing
                 (data, np.array([0, 2, 2, 7]), out, index),  # past the rows
                 (data, offsets.astype("int32"), out, index),
                 (data, offsets, out[:2], index),
                 (data, offsets, out, index.astype("int64")),
                 (data[::2], np.array([0, 1, 1, 3]), out, index)]:  # strided rows
        before = [a.copy() for a in args[2:]]
        assert sequence_max(*args) is False
        for kept, now in zip(before, args[2:]):
            np.testing.assert_array_equal(kept, now)
    x = r(6, 2).astype("float16")
    got, got_index = _run("sequence_pool", {"X": (x, [[0, 2, 2, 6]])}, ["Out", "MaxIndex"],
                          {"pooltype": "MAX"})
    np.testing.assert_array_equal(np.asarray(got)[[0, 2]], [x[:2].max(0), x[2:].max(0)])
    np.testing.assert_array_equal(np.asarray(got_index)[[0, 2]],
                                  [x[:2].argmax(0), x[2:].argmax(0) + 2])
