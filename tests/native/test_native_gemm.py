"""The float matrix products compiled code runs on its own thread (runtime/
fluid_native_gemm.h): every shape that reaches its edges (rows and columns that fill no
whole tile, a K longer than one packed block, more rows than one block, a product so small
it skips packing, slivers of one to five rows, B read in place beside a packed last panel,
K and N not multiples of the block) and each transposition a
mul and its gradient make give NumPy's values to float32 rounding, also where the result
is added to (a while loop's gradient)."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.rewriters import native

# (rows, inner, columns): a partial tile each way; K past one 256 block and rows past one
# 72-row block; whole 6 x 16 tiles only; a product of a few hundred multiply-adds; five
# rows (one short sliver) against two whole panels and a partial one, with odd K and N in
# the input gradient; two whole slivers and a one-row one; three slivers, the last of five
# rows; a single row
SHAPES = [(7, 5, 3), (75, 300, 37), (12, 300, 32), (80, 520, 20), (1, 1, 1), (5, 45, 35),
          (13, 70, 48), (17, 40, 33), (1, 128, 64)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_a_compiled_mul_and_its_gradient_give_numpys_products(shape):
    m, k, n = shape
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[k], dtype="float32")
        x.stop_gradient = False
        w = fluid.layers.create_parameter([k, n], "float32", name="w")
        out = fluid.layers.mul(x, w)
        loss = fluid.layers.mean(fluid.layers.square(out))
        fluid.backward.append_backward(loss)
    rng = np.random.RandomState(m + k + n)
    xv = rng.uniform(-1, 1, (m, k)).astype("float32")
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    wv = np.array(scope.find_var("w").get_tensor())
    fetch = [out, "x@GRAD", "w@GRAD"]
    program = native.compile(main, {"x": xv}, fetch, scope=scope)
    assert program.source.fallbacks == []
    got = exe.run(program, feed={"x": xv}, fetch_list=fetch, scope=scope)
    x64, w64 = xv.astype("float64"), wv.astype("float64")
    product = x64 @ w64
    dout = 2 * product / product.size
    want = [product, dout @ w64.T, x64.T @ dout]
    for g, r, name in zip(got, want, ["Out", "X@GRAD", "Y@GRAD"]):
        # float32 products of k terms of magnitude up to |r| + k: rounding of that size
        scale = np.abs(x64) @ np.abs(w64) if name == "Out" else np.max(np.abs(r)) + 1
        np.testing.assert_allclose(g, r, rtol=0, atol=float(np.max(scale)) * k * 2e-7,
                                   err_msg=name)
