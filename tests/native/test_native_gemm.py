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


def compiled_mul(rows, inner, columns):
    """(the compiled program, its feed, fetch list, executor, scope) of Out = X W, the mean
    of its square, and the gradients of X and W; X drawn from a seed of the shape."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[inner], dtype="float32")
        x.stop_gradient = False
        w = fluid.layers.create_parameter([inner, columns], "float32", name="w")
        out = fluid.layers.mul(x, w)
        loss = fluid.layers.mean(fluid.layers.square(out))
        fluid.backward.append_backward(loss)
    rng = np.random.RandomState(rows + inner + columns)
    feed = {"x": rng.uniform(-1, 1, (rows, inner)).astype("float32")}
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    fetch = [out, "x@GRAD", "w@GRAD"]
    return native.compile(main, feed, fetch, scope=scope), feed, fetch, exe, scope


def assert_numpys_products(got, x, w):
    """The fetched Out, X@GRAD and W@GRAD are the float64 products to float32 rounding."""
    x64, w64 = x.astype("float64"), np.asarray(w).astype("float64")
    product = x64 @ w64
    dout = 2 * product / product.size
    want = [product, dout @ w64.T, x64.T @ dout]
    for g, r, name in zip(got, want, ["Out", "X@GRAD", "Y@GRAD"]):
        # float32 products of k terms of magnitude up to |r| + k: rounding of that size
        scale = np.abs(x64) @ np.abs(w64) if name == "Out" else np.max(np.abs(r)) + 1
        np.testing.assert_allclose(g, r, rtol=0,
                                   atol=float(np.max(scale)) * x.shape[1] * 2e-7, err_msg=name)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_a_compiled_mul_and_its_gradient_give_numpys_products(shape):
    program, feed, fetch, exe, scope = compiled_mul(*shape)
    assert program.source.fallbacks == []
    w = np.array(scope.find_var("w").get_tensor())
    got = exe.run(program, feed=feed, fetch_list=fetch, scope=scope)
    assert_numpys_products(got, feed["x"], w)


# A driver that multiplies with the header's sgemm and checks each product against a
# double-precision triple loop: (M, N, K) over every path a product can take (a dot product
# per value, the portable loop along B's rows, packed 6 x 16 tiles with B in place, packed
# last panels, K past one block), each transposition, written or added to C.
_DRIVER = r"""
#include <math.h>
#include <stdio.h>
#include <vector>
#include "fluid_native_gemm.h"

int main() {
  const int64_t shapes[][3] = {{16, 16, 16}, {16, 8, 16}, {16, 4, 16}, {20, 1, 13},
                               {4, 16, 4}, {2, 16, 2}, {1, 64, 16}, {16, 20, 12},
                               {7, 33, 300}, {13, 48, 70}, {75, 37, 300}, {6, 16, 1}};
  uint32_t seed = 12345;
  auto next = [&seed] {
    seed = seed * 1664525u + 1013904223u;
    return (seed >> 8) / 16777216.0f - 0.5f;
  };
  int cases = 0;
  double worst = 0;
  for (auto& s : shapes)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (int acc = 0; acc < 2; ++acc) {
          const int64_t M = s[0], N = s[1], K = s[2];
          std::vector<float> A(M * K), B(K * N), C(M * N), C0(M * N);
          for (auto& v : A) v = next();
          for (auto& v : B) v = next();
          for (auto& v : C0) v = next();
          C = C0;
          fluid_native::own_gemm::sgemm(ta, tb, M, N, K, A.data(), B.data(), C.data(), acc);
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              double want = acc ? C0[i * N + j] : 0.0, size = fabs(want);
              for (int64_t p = 0; p < K; ++p) {
                const double a = ta ? A[p * M + i] : A[i * K + p];
                const double b = tb ? B[j * K + p] : B[p * N + j];
                want += a * b, size += fabs(a * b);
              }
              // float32 rounding of a sum of K + 1 terms: at most about (K + 1) eps |terms|
              const double bound = (K + 1) * 1.2e-7 * size + 1e-30;
              worst = fmax(worst, fabs(C[i * N + j] - want) / bound);
            }
          ++cases;
        }
  printf("%d %.6f\n", cases, worst);
}
"""


@pytest.mark.parametrize("kernels", ["as this CPU chooses", "portable"])
def test_every_path_of_the_products_gives_the_reference_values(kernels, tmp_path):
    from fluid_nb.rewriters.native import build as build_module
    from fluid_nb.rewriters.native.runtime_library import RUNTIME
    import subprocess
    (tmp_path / "driver.cc").write_text(_DRIVER)
    portable = ["-DFLUID_GEMM_PORTABLE"] if kernels == "portable" else []
    subprocess.run([build_module.compiler_command(), "-O2", "-std=c++17", *portable,
                    f"-I{RUNTIME}", str(tmp_path / "driver.cc"), "-o",
                    str(tmp_path / "driver")], check=True, timeout=120)
    cases, worst = subprocess.run([str(tmp_path / "driver")], check=True, capture_output=True,
                                  text=True, timeout=60).stdout.split()
    assert int(cases) == 12 * 8
    assert float(worst) <= 1.0, f"a product off by {worst} times float32 rounding"
