// The CUDA runtime of programs compiled by fluid_nb's native code generator: the same
// kernel calls as fluid_native.h (the emitters write one set of calls for both targets),
// each launching a CUDA kernel on device pointers, on the default stream. Matrix products go
// to cuBLAS through a function pointer and a handle the loader sets (the cuBLAS and handle
// CuPy already has), so the library links no cuBLAS of its own.
#pragma once

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include <algorithm>

#include "fluid_native_maps.h"

namespace fluid_native {

typedef int (*cublas_sgemm_fn)(void*, int, int, int, int, int, const float*, const float*,
                               int, const float*, int, const float*, float*, int);
typedef int (*cublas_dgemm_fn)(void*, int, int, int, int, int, const double*, const double*,
                               int, const double*, int, const double*, double*, int);

}  // namespace fluid_native

extern "C" {
// set by the loader before fluid_run is called
__attribute__((visibility("default"))) void* fluid_cublas_handle = nullptr;
__attribute__((visibility("default"))) fluid_native::cublas_sgemm_fn fluid_cublas_sgemm = nullptr;
__attribute__((visibility("default"))) fluid_native::cublas_dgemm_fn fluid_cublas_dgemm = nullptr;
}

namespace fluid_native {

const int kThreads = 256;
inline int blocks_for(int64_t count) {
  return (int)std::min<int64_t>((count + kThreads - 1) / kThreads, 65535);
}

#define FLUID_GRID_STRIDE(i, count) \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (count); \
       i += (int64_t)blockDim.x * gridDim.x)

// --- matrix products: row-major C = op(A) op(B) as cuBLAS's column-major C^T = op(B)^T op(A)^T
inline void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
                 const float* B, float* C, float beta = 0.0f) {
  const float one = 1.0f;
  fluid_cublas_sgemm(fluid_cublas_handle, trans_b ? 1 : 0, trans_a ? 1 : 0, (int)N, (int)M,
                     (int)K, &one, B, trans_b ? (int)K : (int)N, A, trans_a ? (int)M : (int)K,
                     &beta, C, (int)N);
}

inline void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const double* A,
                 const double* B, double* C, double beta = 0.0) {
  const double one = 1.0;
  fluid_cublas_dgemm(fluid_cublas_handle, trans_b ? 1 : 0, trans_a ? 1 : 0, (int)N, (int)M,
                     (int)K, &one, B, trans_b ? (int)K : (int)N, A, trans_a ? (int)M : (int)K,
                     &beta, C, (int)N);
}

template <class T>
void mul(const T* x, const T* y, T* out, int64_t M, int64_t K, int64_t N) {
  gemm(false, false, M, N, K, x, y, out);
}

template <class T>
void mul_grad(const T* x, const T* y, const T* dout, T* dx, T* dy, int64_t M, int64_t K,
              int64_t N) {
  if (dx) gemm(false, true, M, K, N, dout, y, dx);
  if (dy) gemm(true, false, K, N, M, x, dout, dy);
}

// --- elementwise maps -----------------------------------------------------------------------------
template <class T, class F>
__global__ void map1_kernel(const T* x, T* out, int64_t count, F f) {
  FLUID_GRID_STRIDE(i, count) out[i] = f(x[i]);
}

template <class T, class F>
__global__ void map2_kernel(const T* a, const T* b, T* out, int64_t count, F f) {
  FLUID_GRID_STRIDE(i, count) out[i] = f(a[i], b[i]);
}

template <class T, class F>
void map1(const T* x, T* out, int64_t count, F f) {
  if (count) map1_kernel<<<blocks_for(count), kThreads>>>(x, out, count, f);
}

template <class T, class F>
void map2(const T* a, const T* b, T* out, int64_t count, F f) {
  if (count) map2_kernel<<<blocks_for(count), kThreads>>>(a, b, out, count, f);
}

// Out = f(X, Y), Y broadcast into X ([pre, n, post] against [n]); Out is X's type, or bool
// for a comparison
template <class T, class O, class F>
__global__ void broadcast_kernel(const T* x, const T* y, O* out, int64_t count, int64_t n,
                                 int64_t post, F f) {
  FLUID_GRID_STRIDE(i, count) out[i] = f(x[i], y[(i / post) % n]);
}

template <class T, class O, class F>
void broadcast(const T* x, const T* y, O* out, int64_t pre, int64_t n, int64_t post, F f) {
  const int64_t count = pre * n * post;
  if (count) broadcast_kernel<<<blocks_for(count), kThreads>>>(x, y, out, count, n, post, f);
}

// dY[j] = sign * sum over pre and post of dOut[i, j, k]: one thread per j
template <class T>
__global__ void reduce_to_y_kernel(const T* dout, T* dy, int64_t pre, int64_t n, int64_t post,
                                   T sign) {
  FLUID_GRID_STRIDE(j, n) {
    T total = 0;
    for (int64_t i = 0; i < pre; ++i)
      for (int64_t k = 0; k < post; ++k) total += dout[(i * n + j) * post + k];
    dy[j] = sign * total;
  }
}

template <class T>
void reduce_to_y(const T* dout, T* dy, int64_t pre, int64_t n, int64_t post, T sign) {
  reduce_to_y_kernel<<<blocks_for(n), kThreads>>>(dout, dy, pre, n, post, sign);
}

// dY[j] = sum over pre and post of dOut[i, j, k] * X[i, j, k]: one thread per j
template <class T>
__global__ void mul_reduce_to_y_kernel(const T* dout, const T* x, T* dy, int64_t pre, int64_t n,
                                       int64_t post) {
  FLUID_GRID_STRIDE(j, n) {
    T total = 0;
    for (int64_t i = 0; i < pre; ++i)
      for (int64_t k = 0; k < post; ++k) {
        const int64_t at = (i * n + j) * post + k;
        total += dout[at] * x[at];
      }
    dy[j] = total;
  }
}

template <class T>
void mul_reduce_to_y(const T* dout, const T* x, T* dy, int64_t pre, int64_t n, int64_t post) {
  if (n) mul_reduce_to_y_kernel<<<blocks_for(n), kThreads>>>(dout, x, dy, pre, n, post);
}

template <class T>
void copy(const T* x, T* out, int64_t count) {
  if (x != out && count) cudaMemcpyAsync(out, x, sizeof(T) * count, cudaMemcpyDeviceToDevice);
}

struct Negate { template <class T> __device__ T operator()(T a) const { return -a; } };
template <class T> void negate(const T* x, T* out, int64_t n) { map1(x, out, n, Negate()); }

// tanh as the formulas call it (the host's is a vectorisable polynomial; here CUDA's own)
__device__ inline float tanh_value(float x) { return tanhf(x); }
__device__ inline double tanh_value(double x) { return tanh(x); }

template <class T>
struct Scale {
  T s, bias;
  bool after;
  __device__ T operator()(T a) const { return after ? s * a + bias : s * (a + bias); }
};

template <class T>
void scale(const T* x, T* out, int64_t count, T s, T bias, bool bias_after_scale) {
  map1(x, out, count, Scale<T>{s, bias, bias_after_scale});
}

template <class T>
__global__ void fill_kernel(T* out, int64_t count, T value) {
  FLUID_GRID_STRIDE(i, count) out[i] = value;
}

template <class T>
void fill(T* out, int64_t count, T value) {
  if (count) fill_kernel<<<blocks_for(count), kThreads>>>(out, count, value);
}

// --- reductions ------------------------------------------------------------------------------------
// mean: one block sums (each thread a strided share, then a tree in shared memory)
template <class T>
__global__ void mean_kernel(const T* x, T* out, int64_t count) {
  __shared__ T partial[kThreads];
  T total = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) total += x[i];
  partial[threadIdx.x] = total;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = partial[0] / T(count);
}

template <class T>
void mean(const T* x, T* out, int64_t count) {
  mean_kernel<<<1, kThreads>>>(x, out, count);
}

template <class T>
__global__ void mean_grad_kernel(const T* dout, T* dx, int64_t count) {
  const T value = dout[0] / T(count);
  FLUID_GRID_STRIDE(i, count) dx[i] = value;
}

template <class T>
void mean_grad(const T* dout, T* dx, int64_t count) {
  if (count) mean_grad_kernel<<<blocks_for(count), kThreads>>>(dout, dx, count);
}

// --- softmax and cross-entropy: one thread per row ----------------------------------------------------
template <class T>
__global__ void softmax_kernel(const T* x, T* out, const int64_t* label, T* loss, int64_t rows,
                               int64_t classes, int64_t ignore_index) {
  FLUID_GRID_STRIDE(r, rows) {
    const T* in = x + r * classes;
    T* o = out + r * classes;
    T top = in[0];
    for (int64_t c = 1; c < classes; ++c) top = in[c] > top ? in[c] : top;
    T total = 0;
    for (int64_t c = 0; c < classes; ++c) {
      o[c] = exp(in[c] - top);
      total += o[c];
    }
    for (int64_t c = 0; c < classes; ++c) o[c] /= total;
    if (loss) {
      const int64_t k = label[r];
      loss[r] = k == ignore_index ? T(0) : -(in[k] - top - log(total));
    }
  }
}

template <class T>
void softmax(const T* x, T* out, int64_t rows, int64_t classes) {
  softmax_kernel<<<blocks_for(rows), kThreads>>>(x, out, (const int64_t*)nullptr, (T*)nullptr,
                                                 rows, classes, int64_t(-100));
}

template <class T>
void softmax_cross_entropy(const T* logits, const int64_t* label, T* softmax_out, T* loss,
                           int64_t rows, int64_t classes, int64_t ignore_index) {
  softmax_kernel<<<blocks_for(rows), kThreads>>>(logits, softmax_out, label, loss, rows,
                                                 classes, ignore_index);
}

template <class T>
__global__ void softmax_xent_grad_kernel(const T* s, const int64_t* label, const T* dloss,
                                         T* d, int64_t rows, int64_t classes,
                                         int64_t ignore_index) {
  FLUID_GRID_STRIDE(i, rows * classes) {
    const int64_t r = i / classes, c = i % classes, k = label[r];
    d[i] = k == ignore_index ? T(0) : (s[i] - (c == k ? T(1) : T(0))) * dloss[r];
  }
}

template <class T>
void softmax_cross_entropy_grad(const T* softmax_in, const int64_t* label, const T* dloss,
                                T* dlogits, int64_t rows, int64_t classes,
                                int64_t ignore_index) {
  softmax_xent_grad_kernel<<<blocks_for(rows * classes), kThreads>>>(
      softmax_in, label, dloss, dlogits, rows, classes, ignore_index);
}

// --- convolution, pooling, batch norm (NCHW, inference) -------------------------------------------------
template <class T>
__global__ void im2col_kernel(const T* xg, T* cols, int64_t cg, int64_t H, int64_t W,
                              int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
                              int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw) {
  const int64_t spots = oh * ow;
  FLUID_GRID_STRIDE(i, cg * kh * kw * spots) {
    const int64_t spot = i % spots, row = i / spots;
    const int64_t j = row % kw, ii = (row / kw) % kh, c = row / (kw * kh);
    const int64_t y = (spot / ow) * sh - pt + ii * dh, x = (spot % ow) * sw - pl + j * dw;
    cols[i] = (y >= 0 && y < H && x >= 0 && x < W) ? xg[(c * H + y) * W + x] : T(0);
  }
}

template <class T>
void conv2d(const T* x, const T* w, T* out, T* cols, int64_t N, int64_t C, int64_t H,
            int64_t W, int64_t M, int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
            int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t groups) {
  const int64_t cg = C / groups, mg = M / groups, rows = cg * kh * kw, spots = oh * ow;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      im2col_kernel<<<blocks_for(rows * spots), kThreads>>>(
          x + (n * C + g * cg) * H * W, cols, cg, H, W, kh, kw, oh, ow, sh, sw, pt, pl, dh, dw);
      gemm(false, false, mg, spots, rows, w + g * mg * rows, cols,
           out + (n * M + g * mg) * spots);
    }
}

template <class T>
__global__ void pool2d_kernel(const T* x, T* out, int64_t NC, int64_t H, int64_t W,
                              int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
                              int64_t sw, int64_t pt, int64_t pl, bool is_max, bool exclusive) {
  FLUID_GRID_STRIDE(i, NC * oh * ow) {
    const int64_t ox = i % ow, oy = (i / ow) % oh, p = i / (ow * oh);
    const T* plane = x + p * H * W;
    const int64_t y0 = oy * sh - pt, y1 = min(y0 + kh, H + pt);
    const int64_t x0 = ox * sw - pl, x1 = min(x0 + kw, W + pl);
    T best = -INFINITY, total = 0;
    for (int64_t y = max(y0, int64_t(0)); y < min(y1, H); ++y)
      for (int64_t xx = max(x0, int64_t(0)); xx < min(x1, W); ++xx) {
        const T v = plane[y * W + xx];
        best = v > best ? v : best;
        total += v;
      }
    const T count = exclusive ? T((min(y1, H) - max(y0, int64_t(0))) *
                                  (min(x1, W) - max(x0, int64_t(0))))
                              : T(kh * kw);
    out[i] = is_max ? best : total / count;
  }
}

template <class T>
void pool2d(const T* x, T* out, int64_t NC, int64_t H, int64_t W, int64_t kh, int64_t kw,
            int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t pt, int64_t pl, bool is_max,
            bool exclusive) {
  pool2d_kernel<<<blocks_for(NC * oh * ow), kThreads>>>(x, out, NC, H, W, kh, kw, oh, ow, sh,
                                                        sw, pt, pl, is_max, exclusive);
}

template <class T>
__global__ void batch_norm_kernel(const T* x, const T* scale, const T* bias, const T* mean,
                                  const T* variance, T* y, int64_t N, int64_t C,
                                  int64_t spots, T epsilon) {
  FLUID_GRID_STRIDE(i, N * C * spots) {
    const int64_t c = (i / spots) % C;
    const T k = (T(1) / sqrt(variance[c] + epsilon)) * (scale ? scale[c] : T(1));
    y[i] = (x[i] - mean[c]) * k + (bias ? bias[c] : T(0));
  }
}

template <class T>
void batch_norm_inference(const T* x, const T* scale, const T* bias, const T* mean,
                          const T* variance, T* y, int64_t N, int64_t C, int64_t spots,
                          T epsilon) {
  batch_norm_kernel<<<blocks_for(N * C * spots), kThreads>>>(x, scale, bias, mean, variance, y,
                                                             N, C, spots, epsilon);
}

// --- optimizers ------------------------------------------------------------------------------------------
// the learning rate (L) and Adam's powers (P) keep their own types, as on the host
template <class T, class L>
__global__ void sgd_kernel(T* param, const T* grad, const L* lr, int64_t count) {
  const T rate = static_cast<T>(lr[0]);
  FLUID_GRID_STRIDE(i, count) sgd_step(param[i], grad[i], rate);
}

template <class T, class L>
void sgd(T* param, const T* grad, const L* lr, int64_t count) {
  if (count) sgd_kernel<<<blocks_for(count), kThreads>>>(param, grad, lr, count);
}

template <class T, class L>
__global__ void momentum_kernel(T* param, const T* grad, T* velocity, const L* lr,
                                int64_t count, T mu, T rescale, bool l2_decay, T l2,
                                bool nesterov) {
  const T rate = static_cast<T>(lr[0]);
  FLUID_GRID_STRIDE(i, count) {
    momentum_step(param[i], grad[i], velocity[i], rate, mu, rescale, l2_decay, l2, nesterov);
  }
}

template <class T, class L>
void momentum(T* param, const T* grad, T* velocity, const L* lr, int64_t count, T mu,
              T rescale, bool l2_decay, T l2, bool nesterov) {
  if (count)
    momentum_kernel<<<blocks_for(count), kThreads>>>(param, grad, velocity, lr, count, mu,
                                                      rescale, l2_decay, l2, nesterov);
}

template <class T, class L, class P>
__global__ void adam_kernel(T* param, const T* grad, const L* lr, T* m1, T* m2,
                            const P* beta1_pow, const P* beta2_pow, int64_t count, T beta1,
                            T beta2, T epsilon) {
  const T one = 1, pow1 = static_cast<T>(beta1_pow[0]), pow2 = static_cast<T>(beta2_pow[0]);
  const T rate = static_cast<T>(lr[0]) * sqrt(one - pow2) / (one - pow1);
  const T eps_hat = epsilon * sqrt(one - pow2);
  FLUID_GRID_STRIDE(i, count) {
    adam_step(param[i], grad[i], m1[i], m2[i], beta1, beta2, rate, eps_hat);
  }
}

// the powers advance after every element has read them: a kernel of their own
template <class T, class P>
__global__ void advance_pows_kernel(P* beta1_pow, P* beta2_pow, T beta1, T beta2) {
  beta1_pow[0] = static_cast<P>(static_cast<T>(beta1_pow[0]) * beta1);
  beta2_pow[0] = static_cast<P>(static_cast<T>(beta2_pow[0]) * beta2);
}

template <class T, class L, class P>
void adam(T* param, const T* grad, const L* lr, T* m1, T* m2, P* beta1_pow, P* beta2_pow,
          int64_t count, T beta1, T beta2, T epsilon, bool update_pows) {
  if (count)
    adam_kernel<<<blocks_for(count), kThreads>>>(param, grad, lr, m1, m2, beta1_pow, beta2_pow,
                                                 count, beta1, beta2, epsilon);
  if (update_pows) advance_pows_kernel<<<1, 1>>>(beta1_pow, beta2_pow, beta1, beta2);
}

// comparisons: Out (bool) = X op Y, Y broadcast into X as in the elementwise ops
struct Less { template <class T> __device__ bool operator()(T a, T b) const { return a < b; } };
struct LessEqual {
  template <class T> __device__ bool operator()(T a, T b) const { return a <= b; }
};
struct Greater { template <class T> __device__ bool operator()(T a, T b) const { return a > b; } };
struct GreaterEqual {
  template <class T> __device__ bool operator()(T a, T b) const { return a >= b; }
};
template <class T>
__device__ bool equal_values(T a, T b) {
  if (a == b) return true;
  if (T(0.5) == T(0)) return false;  // integers: exact
  return isfinite((double)a) && isfinite((double)b) && fabs((double)a - (double)b) < 1e-8;
}
struct Equal { template <class T> __device__ bool operator()(T a, T b) const { return equal_values(a, b); } };
struct NotEqual {
  template <class T> __device__ bool operator()(T a, T b) const { return !equal_values(a, b); }
};

template <class T, class F>
void compare(const T* x, const T* y, bool* out, int64_t pre, int64_t n, int64_t post, F f) {
  broadcast(x, y, out, pre, n, post, f);
}

}  // namespace fluid_native
