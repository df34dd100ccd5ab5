"""Bad-input corpus, parameter files: every header field of Paddle's LoDTensor stream
corrupted (version, LoD level count and sizes, offsets, tensor version, TensorDesc length
and bytes, dtype codes, negative and overflowing dims), truncated data and trailing bytes;
and hostile files (directories for files, empty files, a pickle where a tensor is
expected, symlink loops, a file that changes size). Each load goes into a scope that already
holds values, and a failed load must leave it exactly as it was."""
import io
import os
import pathlib
import pickle
import random
import shutil
import struct
import tempfile

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb import layers
from fluid_nb.proto import tensor_stream
from tests.errors.corpus import Case, check, state_of

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "paddle"
MLP = FIXTURES / "inference" / "mlp" / "separate"
WORK = pathlib.Path(tempfile.mkdtemp(prefix="param-corpus-"))


@pytest.fixture(scope="module", autouse=True)
def _remove_work_folder():
    """The folder is made at import (the cases name files in it); it goes with the module."""
    yield
    shutil.rmtree(WORK, ignore_errors=True)



def _record(array, lod=()):
    out = io.BytesIO()
    tensor_stream.write_lod_tensor(out, array, lod)
    return out.getvalue()


def _varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _header(lod_levels=(), version=0, tensor_version=0):
    head = struct.pack("<IQ", version, len(lod_levels))
    for level in lod_levels:
        raw = np.asarray(level, "<u8").tobytes()
        head += struct.pack("<Q", len(raw)) + raw
    return head + struct.pack("<I", tensor_version)


def _desc(data_type, dims):
    return b"\x08" + _varint(data_type) + b"".join(b"\x10" + _varint(d) for d in dims)


def _assembled(desc, data, lod=(), desc_size=None):
    size = len(desc) if desc_size is None else desc_size
    return _header(lod) + struct.pack("<i", size) + desc + data


# --- the setting: a program with one LoD-free weight and one sequence variable ----------
def _program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = layers.data("x", [13], dtype="float32")
        layers.fc(x, size=4, param_attr="w", bias_attr=False)
        seq = main.global_block().create_var(name="seq", shape=(-1, 2), dtype="float32",
                                             lod_level=1, persistable=True)
    return main, seq


MAIN, SEQ = _program()
WEIGHT = np.arange(52, dtype="float32").reshape(13, 4)
SEQ_VALUE = np.arange(10, dtype="float32").reshape(5, 2)
GOOD = {"w": _record(WEIGHT), "seq": _record(SEQ_VALUE, [[0, 2, 5]])}
EXE = fluid.Executor(fluid.CPUPlace())


def _scope():
    scope = fluid.Scope()
    scope.var("w").get_tensor().set(np.ones((13, 4), "float32"))
    scope.var("other").get_tensor().set(np.zeros(3, "float32"))
    return scope


def _load_case(family, name, files, must_fail=True, combined=False, mentions=("byte",)):
    """Write ``files`` (name -> bytes) into a fresh folder; the act loads both variables
    (each from its own file, or ``__params__`` when ``combined``) into a filled scope."""
    folder = WORK / f"{family}-{name}"
    scope = _scope()

    def setup():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for fname, data in files.items():
            (folder / fname).write_bytes(data)

    def act():
        fluid.io.load_vars(EXE, str(folder), MAIN, predicate=fluid.io.is_persistable,
                           filename="__params__" if combined else None, scope=scope)

    return Case(family, name, act=act, state=state_of(MAIN, scope=scope), setup=setup,
                must_fail=must_fail, mentions=mentions)


def _weight_case(family, name, data, must_fail=True, mentions=("byte",)):
    return _load_case(family, name, {"w": data, "seq": GOOD["seq"]}, must_fail,
                      mentions=mentions)


def _seq_case(family, name, data, must_fail=True, mentions=("byte",)):
    # a bad "w" is found after "seq" was read, and a bad "seq" before "w": both orders
    return _load_case(family, name, {"w": GOOD["w"], "seq": data}, must_fail,
                      mentions=mentions)


def _header_cases():
    cases = []
    w_desc = _desc(5, [13, 4])
    w_data = WEIGHT.tobytes()
    for version in (1, 2, 0xFFFFFFFF, 0x80):
        data = bytearray(GOOD["w"])
        data[0:4] = struct.pack("<I", version)
        cases.append(_weight_case("param_version", str(version), bytes(data)))
    for count in (1, 2, 17, 1 << 40, (1 << 64) - 1):
        data = bytearray(GOOD["w"])
        data[4:12] = struct.pack("<Q", count)
        cases.append(_weight_case("param_lod_count", str(count), bytes(data)))
    for size in (0, 7, 9, 8 * 1000, 1 << 62):
        data = bytearray(GOOD["seq"])
        data[12:20] = struct.pack("<Q", size)
        cases.append(_seq_case("param_lod_size", str(size), bytes(data)))
    for level in ([1, 2, 5], [0, 3, 2, 5], [0, 2, 6], [0, 2, 4], [0], [0, 5, 5, 5, 5],
                  [0, (1 << 64) - 1, 5]):
        must = None if level == [0, 5, 5, 5, 5] else True
        cases.append(_seq_case("param_lod_offsets", "-".join(map(str, level))[:40],
                               _assembled(_desc(5, [5, 2]), SEQ_VALUE.tobytes(), [level]), must))
    cases.append(_seq_case("param_lod_offsets", "two-levels-mismatch",
                           _assembled(_desc(5, [5, 2]), SEQ_VALUE.tobytes(),
                                      [[0, 1, 4], [0, 2, 5]])))
    cases.append(_seq_case("param_lod_offsets", "two-levels-valid",
                           _assembled(_desc(5, [5, 2]), SEQ_VALUE.tobytes(),
                                      [[0, 1, 2], [0, 2, 5]]), False, ()))
    for tv in (1, 7, 0xFFFFFFFF):
        data = _header(version=0, tensor_version=tv) + struct.pack("<i", len(w_desc)) \
            + w_desc + w_data
        cases.append(_weight_case("param_tensor_version", str(tv), data))
    for size in (-1, -(1 << 31), len(w_desc) - 1, len(w_desc) + 1, 1 << 30, 0):
        cases.append(_weight_case("param_desc_size", str(size),
                                  _assembled(w_desc, w_data, desc_size=size)))
    rng = random.Random("desc-bytes")
    for k in range(12):
        bad = bytearray(w_desc)
        at = rng.randrange(len(bad))
        bad[at] ^= 1 << rng.randrange(8)
        cases.append(_weight_case("param_desc_bytes", f"{at}-{k}",
                                  _assembled(bytes(bad), w_data), None))
    cases.append(_weight_case("param_desc_bytes", "not-utf8-garbage",
                              _assembled(b"\xff\xff\xff", w_data)))
    cases.append(_weight_case("param_desc_bytes", "no-dtype",
                              _assembled(b"\x10\x0d\x10\x04", w_data)))
    for code in list(range(0, 34)) + [34, 99, -1, 1 << 31]:
        # INT32 and UINT32-sized codes fit the data exactly: the file is sound, the program
        # wants another dtype
        mentions = () if code == 5 else ("dtype",) if code == 2 else ("byte",)
        cases.append(_weight_case("param_dtype", str(code),
                                  _assembled(_desc(code, [13, 4]), w_data), code != 5, mentions))
    for dims in ([13, -4], [-1], [13, 4, -1], [-(1 << 62)]):
        cases.append(_weight_case("param_dims_negative", "x".join(map(str, dims)),
                                  _assembled(_desc(5, dims), w_data)))
    for dims in ([1 << 40, 1 << 40], [1 << 62, 4], [(1 << 63) - 1, (1 << 63) - 1], [1 << 31] * 3,
                 [13, 1 << 60]):
        cases.append(_weight_case("param_dims_overflow", "x".join(map(str, dims)),
                                  _assembled(_desc(5, dims), w_data)))
    cases.append(_weight_case("param_dims", "wrong-shape", _assembled(_desc(5, [4, 13]), w_data),
                              True, ("shape",)))
    for cut in sorted(rng.sample(range(1, len(GOOD["w"])), 16)):
        cases.append(_weight_case("param_truncated", str(cut), GOOD["w"][:cut]))
    for extra in (b"\x00", b"\x00" * 8, GOOD["w"]):
        cases.append(_weight_case("param_trailing", str(len(extra)), GOOD["w"] + extra))
    # the combined file: the same damage found in the second record
    combined = GOOD["seq"] + GOOD["w"]
    for cut in (len(GOOD["seq"]) + 3, len(combined) - 1):
        cases.append(_load_case("param_combined", f"truncated-{cut}",
                                {"__params__": combined[:cut]}, combined=True))
    cases.append(_load_case("param_combined", "three-records",
                            {"__params__": combined + GOOD["w"]}, combined=True,
                            mentions=("tensors",)))
    cases.append(_load_case("param_combined", "valid", {"__params__": combined}, False,
                            combined=True, mentions=()))
    return cases


def _hostile_cases():
    cases = [
        _load_case("hostile", "pickle-for-tensor",
                   {"w": pickle.dumps(WEIGHT), "seq": GOOD["seq"]}),
        _load_case("hostile", "empty-file", {"w": b"", "seq": GOOD["seq"]}),
        _load_case("hostile", "missing-file", {"seq": GOOD["seq"]}, mentions=("'",)),
    ]
    folder = WORK / "hostile-dir-for-file"
    scope = _scope()

    def dir_setup():
        shutil.rmtree(folder, ignore_errors=True)
        (folder / "w").mkdir(parents=True)
        (folder / "seq").write_bytes(GOOD["seq"])
    cases.append(Case("hostile", "directory-for-file", setup=dir_setup,
                      act=lambda: fluid.io.load_vars(EXE, str(folder), MAIN,
                                                     predicate=fluid.io.is_persistable,
                                                     scope=scope),
                      state=state_of(MAIN, scope=scope), mentions=("directory",)))
    loop = WORK / "hostile-symlink-loop"
    scope2 = _scope()

    def loop_setup():
        shutil.rmtree(loop, ignore_errors=True)
        loop.mkdir(parents=True)
        (loop / "seq").write_bytes(GOOD["seq"])
        os.symlink("w2", loop / "w")
        os.symlink("w", loop / "w2")
    cases.append(Case("hostile", "symlink-loop", setup=loop_setup,
                      act=lambda: fluid.io.load_vars(EXE, str(loop), MAIN,
                                                     predicate=fluid.io.is_persistable,
                                                     scope=scope2),
                      state=state_of(MAIN, scope=scope2), mentions=(str(loop / "w"),)))
    afile = WORK / "hostile-file-for-dir"
    scope3 = _scope()
    cases.append(Case("hostile", "file-for-directory",
                      setup=lambda: afile.write_bytes(GOOD["w"]),
                      act=lambda: fluid.io.load_vars(EXE, str(afile), MAIN,
                                                     predicate=fluid.io.is_persistable,
                                                     scope=scope3),
                      state=state_of(MAIN, scope=scope3), mentions=("directory",)))
    model_dir = WORK / "hostile-model-dir"
    cases.append(Case("hostile", "model-file-is-a-directory",
                      setup=lambda: (model_dir / "__model__").mkdir(parents=True, exist_ok=True),
                      act=lambda: fluid.io.load_inference_model(str(model_dir), EXE,
                                                                scope=fluid.Scope()),
                      mentions=("directory",)))
    cases.append(Case("hostile", "model-folder-missing",
                      act=lambda: fluid.io.load_inference_model(str(WORK / "nowhere"), EXE,
                                                                scope=fluid.Scope()),
                      mentions=("nowhere",)))
    changing = WORK / "hostile-changing"
    scope4 = _scope()

    def change_setup():  # a first load works; then the file shrinks under the same name
        shutil.rmtree(changing, ignore_errors=True)
        changing.mkdir(parents=True)
        (changing / "w").write_bytes(GOOD["w"])
        (changing / "seq").write_bytes(GOOD["seq"])
        fluid.io.load_vars(EXE, str(changing), MAIN, predicate=fluid.io.is_persistable,
                           scope=scope4)
        with open(changing / "w", "r+b") as f:
            f.truncate(len(GOOD["w"]) // 2)
    cases.append(Case("hostile", "file-shrinks-between-loads", setup=change_setup,
                      act=lambda: fluid.io.load_vars(EXE, str(changing), MAIN,
                                                     predicate=fluid.io.is_persistable,
                                                     scope=scope4),
                      state=state_of(MAIN, scope=scope4), mentions=("byte",)))
    real = FIXTURES / "inference" / "mlp" / "separate"
    for name in sorted(p.name for p in real.iterdir() if p.name != "__model__"):
        data = (real / name).read_bytes()
        cases.append(Case("param_real", f"{name}-read",
                          act=lambda data=data, name=name: tensor_stream.read_one(data, name),
                          must_fail=False))
        cases.append(Case("param_real", f"{name}-cut",
                          act=lambda data=data, name=name: tensor_stream.read_one(
                              data[:len(data) - 1], name), mentions=("byte", name)))
    return cases


CASES = _header_cases() + _hostile_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_parameter_file(case):
    check(case)


def test_parameter_file_corpus_size():
    assert len(CASES) >= 100
