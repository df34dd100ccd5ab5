"""pyramid_hash: its hashes against published values, its embedding rows against a loop over
the n-grams, dropout and Bloom filters, and the grad op's in-place update of W."""
import struct

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.ops import pyramid_hash as ph
from fluid_nb.ops import registry
from fluid_nb.tensor.tensor import LoDTensor
from .op_test import OpCase, assert_build_fails, run_case, table_tests

SPACE, RAND, EMB = 40, 4, 8
W = np.arange(SPACE + RAND, dtype="float32").reshape(-1, 1) / 10
TOKENS = np.array([[3], [7], [1], [9], [4], [4], [2], [8]], "int32")
SEQS = [[0, 3, 4, 8]]  # lengths 3, 1, 4


def test_xxh32_matches_published_values():
    assert ph.xxh32(b"", 0) == 0x02CC5D05
    assert ph.xxh32(b"abc", 0) == 0x32D153FF
    assert ph.xxh32(b"abc", 16) == 0x0CF4D293
    assert ph.xxh32(bytes(range(20)), 7) == 0xD6C3AE30  # the 16-byte stripe path


def test_murmur3_and_rand_r_match_their_references():
    assert ph.murmur3_x64_128(b"hello", 0) == (0xCBD8A7B341BD9B02, 0x5B1E906A48AE1D19)
    assert ph.murmur3_x64_128(bytes(range(20)), 1) == (0xC51040379E21385F,
                                                       0x5B83C74C4EA7D722)
    state, draws = 3, []
    for _ in range(3):
        value, state = ph.rand_r(state)
        draws.append(value)
    assert draws == [1430195325, 125974964, 80928584]  # glibc's rand_r from seed 3


def embed(key):
    row = np.empty(EMB, "float32")
    for k in range(EMB // RAND):
        pos = ph.xxh32(key, k * RAND) % SPACE
        row[k * RAND:(k + 1) * RAND] = W[pos:pos + RAND, 0]
    return row


def grams(tokens, layers):
    out = []
    for n in range(2, min(layers, len(tokens)) + 1):
        for s in range(len(tokens) - n + 1):
            out.append(tokens[s:s + n].astype("<f4").tobytes())
    return out


def pyramid_ref(i, a, kept=None):
    tokens, offsets = i["X"].reshape(-1), SEQS[0]
    rows, lod, flags = [], [0], []
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        n_used = 0
        for key in grams(tokens[lo:hi], a["pyramid_layer"]):
            use = kept(key) if kept else True
            flags.append(int(use))
            if use:
                rows.append(embed(key))
                n_used += 1
        if not n_used:
            rows.append(np.zeros(EMB, "float32"))
        lod.append(len(rows))
    out = np.array(rows)
    if not a.get("is_training"):
        out = out * np.float32(a["drop_out_percent"])
    return {"Out": (out.astype("float32"), [lod]),
            "DropPos": np.array(flags, "int32").reshape(-1, 1)}


ATTRS = {"num_emb": EMB, "space_len": SPACE, "rand_len": RAND, "pyramid_layer": 3,
         "drop_out_percent": 0.5, "is_training": 0, "use_filter": False, "seed": 3,
         "lr": 0.1}


def dropped_ref(i, a):
    state = a["seed"]

    def kept(key):
        nonlocal state
        draw, state = ph.rand_r(state)
        return np.float32(draw) / np.float32(ph.RAND_MAX) >= a["drop_out_percent"]
    return pyramid_ref(i, a, kept)


def bloom(keys, m=512, k=2):
    bits = bytearray(m // 8)
    for key in keys:
        for seed in range(k):
            for h in ph.murmur3_x64_128(key, seed):
                n = h % m
                bits[n >> 3] |= 1 << (7 - (n & 7))
    raw = struct.pack("<4Q", ph.BLOOM_MAGIC, m, k, len(keys)) + bytes(bits)
    return np.frombuffer(raw, "float32").reshape(-1, 1).copy()


WANTED = grams(TOKENS.reshape(-1)[4:8], 3)[::2]  # some n-grams of the last sequence
WHITE = bloom(WANTED)

CASES = [
    OpCase("pyramid_hash", {"X": TOKENS, "W": W}, attrs=ATTRS, lod={"X": SEQS},
           ref=pyramid_ref, name="inference_scales_by_drop_out_percent"),
    OpCase("pyramid_hash", {"X": TOKENS, "W": W}, attrs=dict(ATTRS, pyramid_layer=2),
           lod={"X": SEQS}, ref=pyramid_ref, name="bigrams_only"),
    OpCase("pyramid_hash", {"X": TOKENS, "W": W}, attrs=dict(ATTRS, is_training=1),
           lod={"X": SEQS}, ref=dropped_ref, name="training_drops_ngrams"),
    OpCase("pyramid_hash", {"X": TOKENS, "W": W, "WhiteList": WHITE},
           attrs=dict(ATTRS, use_filter=True, white_list_len=len(WHITE)), lod={"X": SEQS},
           ref=lambda i, a: pyramid_ref(i, a, lambda key: key in WANTED),
           name="white_list_filter"),
]

# the grad op is no derivative but an update of W (test below), so no finite differences
(test_output_matches_numpy, _, test_runs_on_the_strict_device) = table_tests(CASES)


@pytest.mark.parametrize("on_device", [False, True], ids=["host", "strict_device"])
def test_grad_op_updates_w_in_place_by_minus_lr_times_the_gradient(on_device):
    from fluid_nb.testing.strict_device import StrictDevicePlace, to_device
    move = to_device if on_device else (lambda a: a)
    _, op, result = run_case(CASES[0])
    (spec,) = registry.make_grad_ops(op)
    assert spec.type == "pyramid_hash_grad" and set(spec.inputs) == {
        "X", "W", "DropPos", "X_Temp_Out", "Out@GRAD"}
    out = result["Out"]
    grad = np.random.RandomState(1).rand(*np.asarray(out).shape).astype("float32")
    values = {"x": LoDTensor(move(TOKENS), SEQS), "w": LoDTensor(move(W.copy())),
              "out_droppos": LoDTensor(move(np.asarray(result["DropPos"]))),
              "out_x_temp_out": LoDTensor(move(np.asarray(result["X_Temp_Out"])), SEQS),
              "out_out@GRAD": LoDTensor(move(grad), out.lod())}
    program = fluid.Program()
    block = program.global_block()
    scope = fluid.Scope()
    for name, value in values.items():
        block.create_var(name=name, shape=value.array.shape, dtype=value.array.dtype,
                         persistable=True)
        scope.var(name).value = value
    block.append_op(type=spec.type, inputs=spec.inputs, outputs={}, attrs=spec.attrs)
    fluid.Executor(StrictDevicePlace() if on_device else fluid.CPUPlace()).run(
        program, scope=scope)
    want = W.copy().reshape(-1)
    row = 0
    for lo, hi in zip(SEQS[0][:-1], SEQS[0][1:]):
        keys = grams(TOKENS.reshape(-1)[lo:hi], 3)
        if not keys:
            row += 1
        for key in keys:
            for k in range(EMB // RAND):
                pos = ph.xxh32(key, k * RAND) % SPACE
                want[pos:pos + RAND] -= np.float32(0.1) * grad[row, k * RAND:(k + 1) * RAND]
            row += 1
    w = scope.find_var("w").value.array
    np.testing.assert_allclose((w.get() if on_device else w).reshape(-1), want, rtol=1e-5)


def test_num_emb_must_be_a_multiple_of_rand_len():
    assert_build_fails("pyramid_hash", {"X": TOKENS, "W": W}, dict(ATTRS, num_emb=6),
                       "num_emb", "multiple of rand_len")


def test_white_list_must_be_a_bloom_filter():
    case = OpCase("pyramid_hash", {"X": TOKENS, "W": W, "WhiteList": np.zeros((9, 1),
                                                                              "float32")},
                  attrs=dict(ATTRS, use_filter=True, white_list_len=9), lod={"X": SEQS})
    with pytest.raises(InvalidArgument, match="Bloom filter"):
        run_case(case)


def test_search_pyramid_hash_layer_builds_the_op():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[1], dtype="int32", lod_level=1)
        emb = fluid.contrib.search_pyramid_hash(
            input=x, num_emb=EMB, space_len=SPACE, pyramid_layer=3, rand_len=RAND,
            drop_out_percent=0.5, is_training=False, use_filter=False, white_list_len=0,
            black_list_len=0, seed=3, lr=0.1,
            param_attr=fluid.ParamAttr(name="hash_w",
                                       initializer=fluid.initializer.NumpyArrayInitializer(W)))
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    (got,) = exe.run(main, feed={"x": fluid.create_lod_tensor(TOKENS, [[3, 1, 4]],
                                                              fluid.CPUPlace())},
                     fetch_list=[emb], scope=scope, return_numpy=False)
    want, lod = pyramid_ref({"X": TOKENS}, ATTRS)["Out"]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    assert got.lod() == lod
    with pytest.raises(InvalidArgument, match="distribute_update_vars"):
        with fluid.program_guard(fluid.Program(), fluid.Program()):
            x = fluid.layers.data(name="x", shape=[1], dtype="int32", lod_level=1)
            fluid.contrib.search_pyramid_hash(
                x, EMB, SPACE, 3, RAND, 0.5, False, False, 0, 0, 3, 0.1,
                distribute_update_vars=["other"])
