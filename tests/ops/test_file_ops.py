"""save, save_combine and load_combine: Paddle's tensor stream written and read back, with
LoD, float16 on request, and the refusals."""
import io
import os
import shutil
import tempfile

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument, PreconditionNotMet
from fluid_nb.proto.tensor_stream import read_lod_tensors, read_one, write_lod_tensor
from .op_test import OpCase, check_output, table_tests

rng = np.random.RandomState(29)
FOLDER = tempfile.mkdtemp(prefix="fluid_nb_file_ops_")


@pytest.fixture(scope="module", autouse=True)
def _remove_work_folder():
    """The folder is made at import (the cases name files in it); it goes with the module."""
    yield
    shutil.rmtree(FOLDER, ignore_errors=True)

A, B = rng.uniform(-1, 1, (3, 2)).astype("float32"), np.arange(4, dtype="int64")
COMBINED = os.path.join(FOLDER, "combined.bin")
with open(COMBINED, "wb") as _f:
    _buffer = io.BytesIO()
    write_lod_tensor(_buffer, A, [[0, 1, 3]])
    write_lod_tensor(_buffer, B)
    _f.write(_buffer.getvalue())


def saved_one(outs, inputs, attrs):
    with open(attrs["file_path"], "rb") as f:
        array, lod = read_one(f.read(), attrs["file_path"])
    np.testing.assert_array_equal(array, inputs["X"])


def saved_all(outs, inputs, attrs):
    with open(attrs["file_path"], "rb") as f:
        records = read_lod_tensors(f.read(), attrs["file_path"])
    assert len(records) == len(inputs["X"])
    for (array, _), want in zip(records, inputs["X"]):
        np.testing.assert_array_equal(array, want)


CASES = [
    OpCase("save", {"X": A}, attrs={"file_path": os.path.join(FOLDER, "sub", "a.bin")},
           check=saved_one),
    OpCase("save_combine", {"X": [A, B]}, attrs={"file_path": os.path.join(FOLDER, "ab.bin")},
           check=saved_all),
]

(test_output_matches_numpy, test_grad_matches_finite_differences,
 test_runs_on_the_strict_device) = table_tests(CASES)


def test_save_keeps_the_lod_and_can_write_float16(tmp_path):
    path = str(tmp_path / "x.bin")
    check_output(OpCase("save", {"X": A}, attrs={"file_path": path, "save_as_fp16": True},
                        lod={"X": [[0, 2, 3]]}))
    with open(path, "rb") as f:
        array, lod = read_one(f.read(), path)
    assert array.dtype == np.float16 and lod == [[0, 2, 3]]
    np.testing.assert_allclose(array, A, atol=1e-3)


def test_save_refuses_an_existing_file_without_overwrite(tmp_path):
    path = tmp_path / "x.bin"
    path.write_bytes(b"")
    with pytest.raises(PreconditionNotMet, match="save: attribute 'file_path' expected"):
        check_output(OpCase("save", {"X": A}, attrs={"file_path": str(path),
                                                     "overwrite": False}))


def test_load_combine_reads_every_record_with_its_lod():
    # not a table row: its outputs take their shapes from the file, as load's do
    program = fluid.Program()
    block = program.global_block()
    for name in ("a", "b"):
        block.create_var(name=name)
    block.append_op(type="load_combine", outputs={"Out": ["a", "b"]},
                    attrs={"file_path": COMBINED})
    a, b = fluid.Executor(fluid.CPUPlace()).run(program, fetch_list=["a", "b"],
                                                scope=fluid.Scope(), return_numpy=False)
    np.testing.assert_array_equal(np.asarray(a), A)
    assert a.lod() == [[0, 1, 3]]
    np.testing.assert_array_equal(np.asarray(b), B)


def test_load_combine_wants_one_output_per_record():
    program = fluid.Program()
    block = program.global_block()
    for name in ("a", "b", "c"):
        block.create_var(name=name)
    block.append_op(type="load_combine", outputs={"Out": ["a", "b", "c"]},
                    attrs={"file_path": COMBINED})
    with pytest.raises(InvalidArgument, match="3 \\(one per output\\)"):
        fluid.Executor(fluid.CPUPlace()).run(program, fetch_list=["a"], scope=fluid.Scope())


def test_saved_file_loads_with_the_load_op(tmp_path):
    path = str(tmp_path / "b.bin")
    check_output(OpCase("save", {"X": B}, attrs={"file_path": path}))
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="b", shape=[4], dtype="int64")
    block.append_op(type="load", outputs={"Out": ["b"]}, attrs={"file_path": path})
    out, = fluid.Executor(fluid.CPUPlace()).run(program, fetch_list=["b"], scope=fluid.Scope())
    np.testing.assert_array_equal(out, B)


def test_load_combine_loads_onto_the_strict_device():
    from fluid_nb.testing.strict_device import StrictDevicePlace
    program = fluid.Program()
    block = program.global_block()
    for name in ("a", "b"):
        block.create_var(name=name)
    block.append_op(type="load_combine", outputs={"Out": ["a", "b"]},
                    attrs={"file_path": COMBINED})
    a, b = fluid.Executor(StrictDevicePlace()).run(program, fetch_list=["a", "b"],
                                                   scope=fluid.Scope())
    np.testing.assert_array_equal(a, A)
    np.testing.assert_array_equal(b, B)
