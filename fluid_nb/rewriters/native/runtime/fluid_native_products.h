// The products of a batch of matrices, written once for both targets: each header
// (fluid_native.h, fluid_native_cuda.cuh) defines gemm and scale for its device and
// includes this after them.
#pragma once

namespace fluid_native {

// matmul (Fluid's legacy op): Out[b] = alpha op(X[b]) op(Y[b]), op(X) [M, K], op(Y) [K, N]
// (tx, ty: X stored [K, M], Y [N, K]); an operand of stride 0 is one matrix every batch
// item shares
template <class T>
void matmul(const T* x, const T* y, T* out, int64_t batch, int64_t x_stride, int64_t y_stride,
            int64_t M, int64_t K, int64_t N, bool tx, bool ty, T alpha) {
  for (int64_t b = 0; b < batch; ++b)
    gemm(tx, ty, M, N, K, x + b * x_stride, y + b * y_stride, out + b * M * N);
  if (alpha != T(1)) scale(out, out, batch * M * N, alpha, T(0), true);
}

// its gradient, each in its operand's stored layout (either may be absent); a shared
// operand's gradient is the sum over the batch:
//   dX = alpha dOut op(Y)^T (tx: its transpose), dY = alpha op(X)^T dOut (ty: its transpose)
template <class T>
void matmul_grad(const T* x, const T* y, const T* dout, T* dx, T* dy, int64_t batch,
                 int64_t x_stride, int64_t y_stride, int64_t M, int64_t K, int64_t N, bool tx,
                 bool ty, T alpha) {
  for (int64_t b = 0; b < batch; ++b) {
    const T* d = dout + b * M * N;
    const T* xb = x + b * x_stride;
    const T* yb = y + b * y_stride;
    if (dx) {
      T* o = dx + b * x_stride;
      const T beta = x_stride == 0 && b > 0 ? T(1) : T(0);
      if (!tx)
        gemm(false, !ty, M, K, N, d, yb, o, beta);
      else
        gemm(ty, true, K, M, N, yb, d, o, beta);
    }
    if (dy) {
      T* o = dy + b * y_stride;
      const T beta = y_stride == 0 && b > 0 ? T(1) : T(0);
      if (!ty)
        gemm(!tx, false, K, N, M, xb, d, o, beta);
      else
        gemm(true, tx, N, K, M, d, xb, o, beta);
    }
  }
  if (alpha != T(1)) {
    if (dx) scale(dx, dx, (x_stride ? batch : 1) * M * K, alpha, T(0), true);
    if (dy) scale(dy, dy, (y_stride ? batch : 1) * K * N, alpha, T(0), true);
  }
}

}  // namespace fluid_native
