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
#include <type_traits>

#include "fluid_native_maps.h"
#include "fluid_native_rows.h"

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
__global__ void div_reduce_to_y_kernel(const T* dout, const T* out, const T* y, T* dy,
                                       int64_t pre, int64_t n, int64_t post) {
  FLUID_GRID_STRIDE(j, n) {
    T total = 0;
    for (int64_t i = 0; i < pre; ++i)
      for (int64_t k = 0; k < post; ++k) {
        const int64_t at = (i * n + j) * post + k;
        total += -dout[at] * out[at] / y[j];
      }
    dy[j] = total;
  }
}

template <class T>
void div_reduce_to_y(const T* dout, const T* out, const T* y, T* dy, int64_t pre, int64_t n,
                     int64_t post) {
  if (n) div_reduce_to_y_kernel<<<blocks_for(n), kThreads>>>(dout, out, y, dy, pre, n, post);
}

template <class T>
void copy(const T* x, T* out, int64_t count) {
  if (x != out && count) cudaMemcpyAsync(out, x, sizeof(T) * count, cudaMemcpyDeviceToDevice);
}

// concat's part and its gradient (fluid_native.h says what they do): a thread an element
template <class T>
__global__ void concat_part_kernel(const T* x, T* out, int64_t pre, int64_t width,
                                   int64_t total, int64_t post, int64_t offset, bool split) {
  FLUID_GRID_STRIDE(i, pre * width) {
    const int64_t at = (i / width * total + offset) * post + i % width;
    if (split)
      out[i] = x[at];
    else
      out[at] = x[i];
  }
}

template <class T>
void concat_part(const T* x, T* out, int64_t pre, int64_t n, int64_t post, int64_t total,
                 int64_t offset) {
  if (pre * n * post)
    concat_part_kernel<<<blocks_for(pre * n * post), kThreads>>>(x, out, pre, n * post, total,
                                                                  post, offset, false);
}

template <class T>
void split_part(const T* dout, T* dx, int64_t pre, int64_t n, int64_t post, int64_t total,
                int64_t offset) {
  if (pre * n * post)
    concat_part_kernel<<<blocks_for(pre * n * post), kThreads>>>(dout, dx, pre, n * post,
                                                                  total, post, offset, true);
}

template <class S, class D>
__global__ void convert_kernel(const S* x, D* out, int64_t count) {
  FLUID_GRID_STRIDE(i, count) out[i] = D(x[i]);
}

template <class S, class D>
void convert(const S* x, D* out, int64_t count) {
  if (count) convert_kernel<<<blocks_for(count), kThreads>>>(x, out, count);
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
      loss[r] = !counts(k, classes, ignore_index) ? T(0) : -(in[k] - top - log(total));
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
    d[i] = !counts(k, classes, ignore_index) ? T(0) : (s[i] - (c == k ? T(1) : T(0))) * dloss[r];
  }
}

template <class T>
void softmax_cross_entropy_grad(const T* softmax_in, const int64_t* label, const T* dloss,
                                T* dlogits, int64_t rows, int64_t classes,
                                int64_t ignore_index) {
  softmax_xent_grad_kernel<<<blocks_for(rows * classes), kThreads>>>(
      softmax_in, label, dloss, dlogits, rows, classes, ignore_index);
}

// softmax_with_cross_entropy's general form: one thread per line of [pre, n, post]
template <class T, class L>
__global__ void softmax_xent_axis_kernel(const T* x, const L* hard, const T* soft, T* out,
                                         T* loss, int64_t pre, int64_t n, int64_t post,
                                         int64_t ignore_index, bool use_softmax) {
  FLUID_GRID_STRIDE(line, pre * post) {
    const int64_t at = (line / post) * n * post + line % post;
    softmax_xent_line(x + at, hard ? hard + line : hard, soft ? soft + at : soft, out + at,
                      loss + line, n, post, ignore_index, use_softmax);
  }
}

template <class T, class L>
void softmax_cross_entropy_axis(const T* logits, const L* hard, const T* soft, T* softmax_out,
                                T* loss, int64_t pre, int64_t n, int64_t post,
                                int64_t ignore_index, bool use_softmax) {
  softmax_xent_axis_kernel<<<blocks_for(pre * post), kThreads>>>(
      logits, hard, soft, softmax_out, loss, pre, n, post, ignore_index, use_softmax);
}

template <class T, class L>
__global__ void softmax_xent_axis_grad_kernel(const T* s, const L* hard, const T* soft,
                                              const T* dloss, T* d, int64_t pre, int64_t n,
                                              int64_t post, int64_t ignore_index,
                                              bool use_softmax) {
  FLUID_GRID_STRIDE(line, pre * post) {
    const int64_t at = (line / post) * n * post + line % post;
    softmax_xent_grad_line(s + at, hard ? hard + line : hard, soft ? soft + at : soft,
                           dloss[line], d + at, n, post, ignore_index, use_softmax);
  }
}

template <class T, class L>
void softmax_cross_entropy_axis_grad(const T* softmax_in, const L* hard, const T* soft,
                                     const T* dloss, T* dlogits, int64_t pre, int64_t n,
                                     int64_t post, int64_t ignore_index, bool use_softmax) {
  softmax_xent_axis_grad_kernel<<<blocks_for(pre * post), kThreads>>>(
      softmax_in, hard, soft, dloss, dlogits, pre, n, post, ignore_index, use_softmax);
}

// one thread per line along the middle dim of [pre, n, post]
template <class T>
__global__ void softmax_axis_kernel(const T* x, T* out, int64_t pre, int64_t n, int64_t post) {
  FLUID_GRID_STRIDE(line, pre * post) {
    const int64_t at = (line / post) * n * post + line % post;
    softmax_line(x + at, out + at, n, post);
  }
}

template <class T>
void softmax_axis(const T* x, T* out, int64_t pre, int64_t n, int64_t post) {
  softmax_axis_kernel<<<blocks_for(pre * post), kThreads>>>(x, out, pre, n, post);
}

template <class T>
__global__ void softmax_grad_kernel(const T* out, const T* dout, T* dx, int64_t pre, int64_t n,
                                    int64_t post) {
  FLUID_GRID_STRIDE(line, pre * post) {
    const int64_t at = (line / post) * n * post + line % post;
    softmax_grad_line(out + at, dout + at, dx + at, n, post);
  }
}

template <class T>
void softmax_grad(const T* out, const T* dout, T* dx, int64_t pre, int64_t n, int64_t post) {
  softmax_grad_kernel<<<blocks_for(pre * post), kThreads>>>(out, dout, dx, pre, n, post);
}

template <class T, class L>
__global__ void cross_entropy2_kernel(const T* x, const L* label, T* y, T* match, int64_t rows,
                                      int64_t classes, int64_t ignore_index) {
  FLUID_GRID_STRIDE(r, rows) {
    cross_entropy2_row(x + r * classes, label[r], classes, ignore_index, y + r,
                       match ? match + r : match);
  }
}

template <class T, class L>
void cross_entropy2(const T* x, const L* label, T* y, T* match, int64_t rows, int64_t classes,
                    int64_t ignore_index) {
  cross_entropy2_kernel<<<blocks_for(rows), kThreads>>>(x, label, y, match, rows, classes,
                                                        ignore_index);
}

template <class T, class L>
__global__ void cross_entropy_grad2_kernel(const L* label, const T* match, const T* dy, T* dx,
                                           int64_t rows, int64_t classes,
                                           int64_t ignore_index) {
  FLUID_GRID_STRIDE(i, rows * classes) {
    const int64_t r = i / classes, k = int64_t(label[r]);
    dx[i] = counts(label[r], classes, ignore_index) && i % classes == k ? -dy[r] / match[r]
                                                                         : T(0);
  }
}

template <class T, class L>
void cross_entropy_grad2(const L* label, const T* match, const T* dy, T* dx, int64_t rows,
                         int64_t classes, int64_t ignore_index) {
  cross_entropy_grad2_kernel<<<blocks_for(rows * classes), kThreads>>>(
      label, match, dy, dx, rows, classes, ignore_index);
}

// one thread per row (top_k_row)
template <class T>
__global__ void top_k_kernel(const T* x, T* out, int64_t* indices, int64_t rows, int64_t size,
                             int64_t k) {
  FLUID_GRID_STRIDE(r, rows) top_k_row(x + r * size, size, k, out + r * k, indices + r * k);
}

template <class T>
void top_k(const T* x, T* out, int64_t* indices, int64_t rows, int64_t size, int64_t k) {
  top_k_kernel<<<blocks_for(rows), kThreads>>>(x, out, indices, rows, size, k);
}

template <class L>
__global__ void accuracy_kernel(const int64_t* indices, const L* label, float* accuracy_out,
                                int32_t* correct, int32_t* total, int64_t rows, int64_t k) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;  // (a metric of a batch: one thread)
  const int64_t hits = accuracy_hits(indices, label, rows, k);
  if (correct) correct[0] = int32_t(hits);
  if (total) total[0] = int32_t(rows);
  accuracy_out[0] = float(int32_t(hits)) / float(rows > 0 ? rows : 1);
}

template <class L>
void accuracy(const int64_t* indices, const L* label, float* accuracy_out, int32_t* correct,
              int32_t* total, int64_t rows, int64_t k) {
  accuracy_kernel<<<1, 1>>>(indices, label, accuracy_out, correct, total, rows, k);
}

struct Dims8 {
  int64_t v[8];
};

// one thread per output element, its input offset from its index
template <class T>
__global__ void transpose_kernel(const T* x, T* out, int64_t rank, Dims8 dims, Dims8 perm,
                                 int64_t count) {
  FLUID_GRID_STRIDE(i, count) {
    int64_t rest = i, at = 0;
    for (int64_t k = rank - 1; k >= 0; --k) {
      const int64_t d = perm.v[k], size = dims.v[d];
      int64_t stride = 1;
      for (int64_t q = d + 1; q < rank; ++q) stride *= dims.v[q];
      at += (rest % size) * stride;
      rest /= size;
    }
    out[i] = x[at];
  }
}

template <class T>
void transpose(const T* x, T* out, int64_t rank, Dims8 dims, Dims8 perm) {
  int64_t count = 1;
  for (int64_t k = 0; k < rank; ++k) count *= dims.v[k];
  if (count) transpose_kernel<<<blocks_for(count), kThreads>>>(x, out, rank, dims, perm, count);
}

// the place of X's element i in the reduction's output
inline __device__ int64_t reduced_at(int64_t i, int64_t rank, const Dims8& dims,
                                     const Dims8& reduced) {
  int64_t at = 0, stride = 1;
  for (int64_t k = rank - 1; k >= 0; --k) {
    const int64_t index = i % dims.v[k];
    i /= dims.v[k];
    if (!reduced.v[k]) {
      at += index * stride;
      stride *= dims.v[k];
    }
  }
  return at;
}

// one thread per output element, summing the elements that reduce into it
template <class T, class O>
__global__ void reduce_sum_kernel(const T* x, O* out, int64_t rank, Dims8 dims, Dims8 reduced,
                                  int64_t count, int64_t out_count, O factor) {
  typedef typename std::conditional<std::is_floating_point<O>::value, double, O>::type Total;
  FLUID_GRID_STRIDE(o, out_count) {
    Total total = 0;
    for (int64_t i = 0; i < count; ++i)
      if (reduced_at(i, rank, dims, reduced) == o) total += Total(x[i]);
    out[o] = factor == O(1) ? O(total) : O(total) * factor;
  }
}

template <class T, class O>
void reduce_sum(const T* x, O* out, int64_t rank, Dims8 dims, Dims8 reduced, int64_t out_count,
                O factor) {
  int64_t count = 1;
  for (int64_t k = 0; k < rank; ++k) count *= dims.v[k];
  reduce_sum_kernel<<<blocks_for(out_count), kThreads>>>(x, out, rank, dims, reduced, count,
                                                         out_count, factor);
}

template <class T>
__global__ void reduce_sum_grad_kernel(const T* dout, T* dx, int64_t rank, Dims8 dims,
                                       Dims8 reduced, int64_t count, T factor) {
  FLUID_GRID_STRIDE(i, count) dx[i] = dout[reduced_at(i, rank, dims, reduced)] * factor;
}

template <class T>
void reduce_sum_grad(const T* dout, T* dx, int64_t rank, Dims8 dims, Dims8 reduced, T factor) {
  int64_t count = 1;
  for (int64_t k = 0; k < rank; ++k) count *= dims.v[k];
  if (count) reduce_sum_grad_kernel<<<blocks_for(count), kThreads>>>(dout, dx, rank, dims,
                                                                     reduced, count, factor);
}

// one thread per row (layer_norm_row)
template <class T>
__global__ void layer_norm_kernel(const T* x, const T* scale, const T* bias, T* y, T* mean,
                                  T* variance, int64_t left, int64_t right, T epsilon) {
  FLUID_GRID_STRIDE(r, left) {
    layer_norm_row(x + r * right, scale, bias, y + r * right, right, epsilon,
                   mean ? mean + r : mean, variance ? variance + r : variance);
  }
}

template <class T>
void layer_norm(const T* x, const T* scale, const T* bias, T* y, T* mean, T* variance,
                int64_t left, int64_t right, T epsilon) {
  layer_norm_kernel<<<blocks_for(left), kThreads>>>(x, scale, bias, y, mean, variance, left,
                                                    right, epsilon);
}

template <class T>
__global__ void layer_norm_dx_kernel(const T* x, const T* scale, const T* mean,
                                     const T* variance, const T* dy, T* dx, int64_t left,
                                     int64_t right, T epsilon) {
  FLUID_GRID_STRIDE(r, left) {
    layer_norm_dx_row(x + r * right, dy + r * right, scale, mean[r], variance[r], epsilon,
                      dx + r * right, right);
  }
}

// one thread per column: the sums over the rows
template <class T>
__global__ void layer_norm_params_kernel(const T* x, const T* mean, const T* variance,
                                         const T* dy, T* dscale, T* dbias, int64_t left,
                                         int64_t right, T epsilon) {
  FLUID_GRID_STRIDE(j, right) {
    T s = 0, b = 0;
    for (int64_t r = 0; r < left; ++r) {
      const T inv_std = T(1) / sqrt(variance[r] + epsilon);
      s += dy[r * right + j] * ((x[r * right + j] - mean[r]) * inv_std);
      b += dy[r * right + j];
    }
    if (dscale) dscale[j] = s;
    if (dbias) dbias[j] = b;
  }
}

template <class T>
void layer_norm_grad(const T* x, const T* scale, const T* mean, const T* variance, const T* dy,
                     T* dx, T* dscale, T* dbias, int64_t left, int64_t right, T epsilon) {
  if (dx) layer_norm_dx_kernel<<<blocks_for(left), kThreads>>>(x, scale, mean, variance, dy,
                                                              dx, left, right, epsilon);
  if (dscale || dbias)
    layer_norm_params_kernel<<<blocks_for(right), kThreads>>>(x, mean, variance, dy, dscale,
                                                              dbias, left, right, epsilon);
}

template <class T, class I>
__global__ void lookup_table_kernel(const T* w, const I* ids, T* out, int64_t count, int64_t V,
                                    int64_t D, int64_t padding_idx) {
  FLUID_GRID_STRIDE(i, count * D) {
    const int64_t id = int64_t(ids[i / D]);
    out[i] = id == padding_idx || id < 0 || id >= V ? T(0) : w[id * D + i % D];
  }
}

template <class T, class I>
void lookup_table(const T* w, const I* ids, T* out, int64_t count, int64_t V, int64_t D,
                  int64_t padding_idx) {
  if (count * D) lookup_table_kernel<<<blocks_for(count * D), kThreads>>>(w, ids, out, count, V,
                                                                         D, padding_idx);
}

template <class T, class I>
__global__ void one_hot_kernel(const I* ids, T* out, int64_t count, int64_t depth) {
  FLUID_GRID_STRIDE(i, count * depth) out[i] = T(int64_t(ids[i / depth]) == i % depth);
}

template <class T, class I>
void one_hot(const I* ids, T* out, int64_t count, int64_t depth) {
  if (count * depth) one_hot_kernel<<<blocks_for(count * depth), kThreads>>>(ids, out, count,
                                                                             depth);
}

template <class T, class I>
__global__ void lookup_table_grad_kernel(const I* ids, const T* dout, T* dw, int64_t count,
                                         int64_t V, int64_t D, int64_t padding_idx) {
  FLUID_GRID_STRIDE(i, count * D) {
    const int64_t id = int64_t(ids[i / D]);
    if (id != padding_idx && id >= 0 && id < V) atomicAdd(dw + id * D + i % D, dout[i]);
  }
}

template <class T, class I>
void lookup_table_grad(const I* ids, const T* dout, T* dw, int64_t count, int64_t V, int64_t D,
                       int64_t padding_idx) {
  fill(dw, V * D, T(0));
  if (count * D) lookup_table_grad_kernel<<<blocks_for(count * D), kThreads>>>(
      ids, dout, dw, count, V, D, padding_idx);
}

template <class T>
__global__ void dropout_grad_kernel(const uint8_t* mask, const T* dout, T* dx, int64_t count,
                                    T factor, bool upscale) {
  FLUID_GRID_STRIDE(i, count) dx[i] = upscale ? dout[i] * T(mask[i]) / factor
                                               : dout[i] * T(mask[i]);
}

template <class T>
void dropout_grad(const uint8_t* mask, const T* dout, T* dx, int64_t count, T factor,
                  bool upscale) {
  if (count) dropout_grad_kernel<<<blocks_for(count), kThreads>>>(mask, dout, dx, count, factor,
                                                                 upscale);
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

// NHWC <-> NCHW, an image's [spots, C] and [C, spots] swapped
template <class T>
__global__ void channels_first_kernel(const T* x, T* out, int64_t N, int64_t spots, int64_t C) {
  FLUID_GRID_STRIDE(i, N * spots * C) {
    const int64_t c = i % C, s = (i / C) % spots, n = i / (C * spots);
    out[(n * C + c) * spots + s] = x[i];
  }
}

template <class T>
void to_channels_first(const T* x, T* out, int64_t N, int64_t spots, int64_t C) {
  channels_first_kernel<<<blocks_for(N * spots * C), kThreads>>>(x, out, N, spots, C);
}

template <class T>
__global__ void channels_last_kernel(const T* x, T* out, int64_t N, int64_t C, int64_t spots) {
  FLUID_GRID_STRIDE(i, N * C * spots) {
    const int64_t s = i % spots, c = (i / spots) % C, n = i / (spots * C);
    out[(n * spots + s) * C + c] = x[i];
  }
}

template <class T>
void to_channels_last(const T* x, T* out, int64_t N, int64_t C, int64_t spots) {
  channels_last_kernel<<<blocks_for(N * C * spots), kThreads>>>(x, out, N, C, spots);
}

template <class T>
__global__ void channel_bias_kernel(T* out, const T* bias, int64_t N, int64_t C,
                                    int64_t spots) {
  FLUID_GRID_STRIDE(i, N * C * spots) out[i] += bias[(i / spots) % C];
}

template <class T>
void add_channel_bias(T* out, const T* bias, int64_t N, int64_t C, int64_t spots) {
  channel_bias_kernel<<<blocks_for(N * C * spots), kThreads>>>(out, bias, N, C, spots);
}

// the sum of the block's values v (every thread gets it)
inline __device__ double block_sum(double v, double* part) {
  part[threadIdx.x] = v;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  const double total = part[0];
  __syncthreads();
  return total;
}

// one block per channel, its sum in double (fluid_native.h's channel_sums)
template <class T>
__global__ void channel_sums_kernel(const T* x, T* out, int64_t N, int64_t C, int64_t spots) {
  __shared__ double part[kThreads];
  const int64_t c = blockIdx.x;
  double total = 0;
  for (int64_t i = threadIdx.x; i < N * spots; i += blockDim.x)
    total += x[((i / spots) * C + c) * spots + i % spots];
  total = block_sum(total, part);
  if (threadIdx.x == 0) out[c] = T(total);
}

template <class T>
void channel_sums(const T* x, T* out, int64_t N, int64_t C, int64_t spots) {
  channel_sums_kernel<<<(unsigned)C, kThreads>>>(x, out, N, C, spots);
}

template <class T>
__global__ void add_into_kernel(T* out, const T* x, int64_t count) {
  FLUID_GRID_STRIDE(i, count) out[i] += x[i];
}

template <class T>
void add_into(T* out, const T* x, int64_t count) {
  if (count) add_into_kernel<<<blocks_for(count), kThreads>>>(out, x, count);
}

// the adjoint of im2col_kernel, one thread per input pixel of the image's group: the sum of
// the column entries taken from it (each pixel written once, so no atomics)
template <class T>
__global__ void col2im_kernel(const T* cols, T* xg, int64_t cg, int64_t H, int64_t W,
                              int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
                              int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw) {
  const int64_t spots = oh * ow;
  FLUID_GRID_STRIDE(p, cg * H * W) {
    const int64_t x = p % W, y = (p / W) % H, c = p / (W * H);
    T total = 0;
    for (int64_t ii = 0; ii < kh; ++ii) {
      const int64_t ry = y + pt - ii * dh;
      if (ry < 0 || ry % sh != 0 || ry / sh >= oh) continue;
      for (int64_t j = 0; j < kw; ++j) {
        const int64_t rx = x + pl - j * dw;
        if (rx < 0 || rx % sw != 0 || rx / sw >= ow) continue;
        total += cols[((c * kh + ii) * kw + j) * spots + (ry / sh) * ow + rx / sw];
      }
    }
    xg[p] = total;
  }
}

template <class T>
void conv2d_grad(const T* x, const T* w, const T* dout, T* dx, T* dw, T* cols, int64_t N,
                 int64_t C, int64_t H, int64_t W, int64_t M, int64_t kh, int64_t kw, int64_t oh,
                 int64_t ow, int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh,
                 int64_t dwid, int64_t groups) {
  const int64_t cg = C / groups, mg = M / groups, rows = cg * kh * kw, spots = oh * ow;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      const T* d = dout + (n * M + g * mg) * spots;
      if (dw) {
        im2col_kernel<<<blocks_for(rows * spots), kThreads>>>(
            x + (n * C + g * cg) * H * W, cols, cg, H, W, kh, kw, oh, ow, sh, sw, pt, pl, dh,
            dwid);
        gemm(false, true, mg, rows, spots, d, cols, dw + g * mg * rows, T(n == 0 ? 0 : 1));
      }
      if (dx) {
        gemm(true, false, rows, spots, mg, w + g * mg * rows, d, cols);
        col2im_kernel<<<blocks_for(cg * H * W), kThreads>>>(
            cols, dx + (n * C + g * cg) * H * W, cg, H, W, kh, kw, oh, ow, sh, sw, pt, pl, dh,
            dwid);
      }
    }
}

// one thread per output window (pool_window, pool_value)
template <class T>
__global__ void pool2d_kernel(const T* x, T* out, int64_t NC, int64_t H, int64_t W,
                              int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
                              int64_t sw, int64_t pt, int64_t pl, bool is_max, bool exclusive,
                              bool adaptive) {
  FLUID_GRID_STRIDE(i, NC * oh * ow) {
    const int64_t ox = i % ow, oy = (i / ow) % oh, p = i / (ow * oh);
    int64_t ya, yb, xa, xb;
    pool_window(oy, H, kh, sh, pt, oh, adaptive, ya, yb);
    pool_window(ox, W, kw, sw, pl, ow, adaptive, xa, xb);
    out[i] = pool_value(x + p * H * W, W, ya, yb, xa, xb, is_max,
                        pool_count<T>(ya, yb, xa, xb, kh, kw, exclusive, adaptive));
  }
}

template <class T>
void pool2d(const T* x, T* out, int64_t NC, int64_t H, int64_t W, int64_t kh, int64_t kw,
            int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t pt, int64_t pl, bool is_max,
            bool exclusive, bool adaptive) {
  pool2d_kernel<<<blocks_for(NC * oh * ow), kThreads>>>(x, out, NC, H, W, kh, kw, oh, ow, sh,
                                                        sw, pt, pl, is_max, exclusive, adaptive);
}

// one thread per output window, each adding its share into dX (windows overlap: atomics)
template <class T>
__global__ void pool2d_grad_kernel(const T* x, const T* dout, T* dx, int64_t NC, int64_t H,
                                   int64_t W, int64_t kh, int64_t kw, int64_t oh, int64_t ow,
                                   int64_t sh, int64_t sw, int64_t pt, int64_t pl, bool is_max,
                                   bool exclusive, bool adaptive) {
  FLUID_GRID_STRIDE(i, NC * oh * ow) {
    const int64_t ox = i % ow, oy = (i / ow) % oh, p = i / (ow * oh);
    T* grad = dx + p * H * W;
    int64_t ya, yb, xa, xb;
    pool_window(oy, H, kh, sh, pt, oh, adaptive, ya, yb);
    pool_window(ox, W, kw, sw, pl, ow, adaptive, xa, xb);
    if (is_max) {
      const int64_t best = pool_first_max(x + p * H * W, W, ya, yb, xa, xb);
      if (best >= 0) atomicAdd(grad + best, dout[i]);
      continue;
    }
    const T share = dout[i] / pool_count<T>(ya, yb, xa, xb, kh, kw, exclusive, adaptive);
    for (int64_t y = ya; y < yb; ++y)
      for (int64_t xx = xa; xx < xb; ++xx) atomicAdd(grad + y * W + xx, share);
  }
}

template <class T>
void pool2d_grad(const T* x, const T* dout, T* dx, int64_t NC, int64_t H, int64_t W, int64_t kh,
                 int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t pt,
                 int64_t pl, bool is_max, bool exclusive, bool adaptive) {
  fill(dx, NC * H * W, T(0));
  pool2d_grad_kernel<<<blocks_for(NC * oh * ow), kThreads>>>(
      x, dout, dx, NC, H, W, kh, kw, oh, ow, sh, sw, pt, pl, is_max, exclusive, adaptive);
}

inline __device__ int64_t channel_at(int64_t i, int64_t C, int64_t post, int64_t c) {
  return ((i / post) * C + c) * post + i % post;
}

template <class T>
__global__ void batch_norm_kernel(const T* x, const T* scale, const T* bias, const T* mean,
                                  const T* variance, T* y, int64_t pre, int64_t C,
                                  int64_t post, T epsilon, bool relu) {
  FLUID_GRID_STRIDE(i, pre * C * post) {
    const int64_t c = (i / post) % C;
    const T k = (T(1) / sqrt(variance[c] + epsilon)) * (scale ? scale[c] : T(1));
    const T v = (x[i] - mean[c]) * k + (bias ? bias[c] : T(0));
    y[i] = relu && v < T(0) ? T(0) : v;
  }
}

template <class T>
void batch_norm_inference(const T* x, const T* scale, const T* bias, const T* mean,
                          const T* variance, T* y, int64_t pre, int64_t C, int64_t post,
                          T epsilon, bool relu) {
  batch_norm_kernel<<<blocks_for(pre * C * post), kThreads>>>(x, scale, bias, mean, variance,
                                                              y, pre, C, post, epsilon, relu);
}

// one block per channel (fluid_native.h's batch_norm_training says what it computes)
template <class T>
__global__ void batch_norm_training_kernel(const T* x, const T* scale, const T* bias,
                                           const T* mean, const T* variance, T* y,
                                           T* mean_out, T* variance_out, T* saved_mean,
                                           T* saved_inv_std, int64_t pre, int64_t C,
                                           int64_t post, T epsilon, T momentum, T keep,
                                           bool relu) {
  __shared__ double part[kThreads];
  const int64_t c = blockIdx.x, m = pre * post;
  T mu = 0, inv_std = 0, var = 0;
  if (m > 1) {
    double total = 0;
    for (int64_t i = threadIdx.x; i < m; i += blockDim.x) total += x[channel_at(i, C, post, c)];
    mu = T(block_sum(total, part) / double(m));
    double squares = 0;
    for (int64_t i = threadIdx.x; i < m; i += blockDim.x) {
      const double d = double(x[channel_at(i, C, post, c)] - mu);
      squares += d * d;
    }
    var = T(block_sum(squares, part) / double(m));
    inv_std = T(1) / sqrt(var + epsilon);
    const T k = inv_std * (scale ? scale[c] : T(1)), b = bias ? bias[c] : T(0);
    for (int64_t i = threadIdx.x; i < m; i += blockDim.x) {
      const int64_t at = channel_at(i, C, post, c);
      const T v = (x[at] - mu) * k + b;
      y[at] = relu && v < T(0) ? T(0) : v;
    }
  }
  if (threadIdx.x == 0) {
    const T mean_c = mean[c], variance_c = variance[c];
    if (m == 1) {
      y[c] = x[c];
      mean_out[c] = mean_c;
      variance_out[c] = variance_c;
    } else {
      mean_out[c] = mean_c * momentum + mu * keep;
      variance_out[c] = variance_c * momentum + var * keep;
    }
    if (saved_mean) saved_mean[c] = mu;
    if (saved_inv_std) saved_inv_std[c] = inv_std;
  }
}

template <class T>
void batch_norm_training(const T* x, const T* scale, const T* bias, const T* mean,
                         const T* variance, T* y, T* mean_out, T* variance_out, T* saved_mean,
                         T* saved_inv_std, int64_t pre, int64_t C, int64_t post, T epsilon,
                         T momentum, T keep, bool relu) {
  if (C) batch_norm_training_kernel<<<(unsigned)C, kThreads>>>(
      x, scale, bias, mean, variance, y, mean_out, variance_out, saved_mean, saved_inv_std, pre,
      C, post, epsilon, momentum, keep, relu);
}

template <class T>
__global__ void batch_norm_grad_kernel(const T* x, const T* scale, const T* mean,
                                       const T* stat, const T* dy, T* dx, T* dscale, T* dbias,
                                       int64_t pre, int64_t C, int64_t post, bool global_stats,
                                       T epsilon) {
  __shared__ double part[kThreads];
  const int64_t c = blockIdx.x, m = pre * post;
  if (!global_stats && m == 1) {
    if (threadIdx.x == 0) {
      if (dx) dx[c] = dy[c];
      if (dscale) dscale[c] = T(0);
      if (dbias) dbias[c] = T(0);
    }
    return;
  }
  const T mu = mean[c];
  const T inv_std = global_stats ? T(1) / sqrt(stat[c] + epsilon) : stat[c];
  double total = 0, weighted = 0;
  for (int64_t i = threadIdx.x; i < m; i += blockDim.x) {
    const int64_t at = channel_at(i, C, post, c);
    total += dy[at];
    weighted += double(dy[at]) * double((x[at] - mu) * inv_std);
  }
  const T d_bias = T(block_sum(total, part)), d_scale = T(block_sum(weighted, part));
  if (dx) {
    const T k = scale ? scale[c] * inv_std : inv_std;
    for (int64_t i = threadIdx.x; i < m; i += blockDim.x) {
      const int64_t at = channel_at(i, C, post, c);
      dx[at] = batch_norm_dx(dy[at], x[at], mu, inv_std, k, d_bias, d_scale, m, global_stats);
    }
  }
  if (threadIdx.x == 0) {
    if (dscale) dscale[c] = d_scale;
    if (dbias) dbias[c] = d_bias;
  }
}

template <class T>
void batch_norm_grad(const T* x, const T* scale, const T* mean, const T* stat, const T* dy,
                     T* dx, T* dscale, T* dbias, int64_t pre, int64_t C, int64_t post,
                     bool global_stats, T epsilon) {
  if (C) batch_norm_grad_kernel<<<(unsigned)C, kThreads>>>(
      x, scale, mean, stat, dy, dx, dscale, dbias, pre, C, post, global_stats, epsilon);
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

template <class T, class L>
__global__ void adagrad_kernel(T* param, const T* grad, T* moment, const L* lr, int64_t count,
                               T eps) {
  const T rate = static_cast<T>(lr[0]);
  FLUID_GRID_STRIDE(i, count) adagrad_step(param[i], grad[i], moment[i], rate, eps);
}

template <class T, class L>
void adagrad(T* param, const T* grad, T* moment, const L* lr, int64_t count, T eps) {
  if (count)
    adagrad_kernel<<<blocks_for(count), kThreads>>>(param, grad, moment, lr, count, eps);
}

template <class T, class L>
__global__ void rmsprop_kernel(T* param, const T* grad, T* mean_square, T* mean_grad,
                               T* moment, const L* lr, int64_t count, T decay, T keep, T eps,
                               T momentum) {
  const T rate = static_cast<T>(lr[0]);
  FLUID_GRID_STRIDE(i, count) {
    rmsprop_step(param[i], grad[i], mean_square[i], mean_grad ? mean_grad + i : mean_grad,
                 moment[i], rate, decay, keep, eps, momentum);
  }
}

template <class T, class L>
void rmsprop(T* param, const T* grad, T* mean_square, T* mean_grad, T* moment, const L* lr,
             int64_t count, T decay, T keep, T eps, T momentum) {
  if (count)
    rmsprop_kernel<<<blocks_for(count), kThreads>>>(param, grad, mean_square, mean_grad,
                                                    moment, lr, count, decay, keep, eps,
                                                    momentum);
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

#include "fluid_native_products.h"
