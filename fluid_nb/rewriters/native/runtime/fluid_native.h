// The runtime of programs compiled by fluid_nb's native code generator: the kernels the
// generated op functions call. Every buffer is a contiguous row-major array whose shape
// the generated code knows (it is specialised on the shapes of one set of feeds), so a
// kernel takes pointers and sizes.
//
// Matrix products go to CBLAS's sgemm and dgemm through two function pointers the loader
// sets (fluid_sgemm, fluid_dgemm): in a Python process, those of the OpenBLAS NumPy already
// loaded, so compiled code and NumPy share one BLAS and one thread pool. FLUID_BLAS_INT is
// that library's integer (int64_t for an ILP64 build, int otherwise). A float product of
// at most kOwnGemmLimit multiply-adds runs on the calling thread instead
// (fluid_native_gemm.h): handing it to BLAS's threads costs more than it saves; unless the
// loader found the BLAS faster at such products on this machine (fluid_small_gemm_by_blas:
// an OpenBLAS with small-matrix kernels for the core runs them on the calling thread too).
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "fluid_native_gemm.h"
#include "fluid_native_maps.h"
#include "fluid_native_rows.h"

#ifndef FLUID_BLAS_INT
#define FLUID_BLAS_INT int64_t
#endif

// the loops that are bound by arithmetic rather than memory get an AVX2 clone as well
// as the baseline one, picked at load time for the machine (a portable binary either way)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FLUID_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
// a loop bound by its arithmetic over 16 floats at a time pays for an AVX-512 clone too
#define FLUID_WIDE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define FLUID_VECTOR_CLONES
#define FLUID_WIDE_CLONES
#endif

namespace fluid_native {

typedef FLUID_BLAS_INT blas_int;
enum { kRowMajor = 101, kNoTrans = 111, kTrans = 112 };  // CBLAS's enum values
typedef void (*sgemm_fn)(int, int, int, blas_int, blas_int, blas_int, float, const float*,
                         blas_int, const float*, blas_int, float, float*, blas_int);
typedef void (*dgemm_fn)(int, int, int, blas_int, blas_int, blas_int, double, const double*,
                         blas_int, const double*, blas_int, double, double*, blas_int);

}  // namespace fluid_native

extern "C" {
// set by the loader before fluid_run is called: each program's own (the runtime library
// calls a BLAS only through the pointer its caller passes: fluid_small_gemm_choice)
#ifndef FLUID_NATIVE_RUNTIME_LIBRARY
__attribute__((visibility("default"))) fluid_native::sgemm_fn fluid_sgemm = nullptr;
__attribute__((visibility("default"))) fluid_native::dgemm_fn fluid_dgemm = nullptr;
// 1: small float products go to fluid_sgemm too (the loader's choice, timed once a
// process: fluid_small_gemm_choice in fluid_native_runtime.cc)
__attribute__((visibility("default"))) int fluid_small_gemm_by_blas = 0;
#else
extern fluid_native::sgemm_fn fluid_sgemm;
extern fluid_native::dgemm_fn fluid_dgemm;
extern int fluid_small_gemm_by_blas;
#endif
}

namespace fluid_native {

// --- matrix products ---------------------------------------------------------------------------
// C[M, N] = beta * C + op(A) @ op(B), op(A) [M, K], op(B) [K, N], all row-major
inline void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
                 const float* B, float* C, float beta = 0.0f) {
  if (M * N * K <= own_gemm::kOwnGemmLimit && !fluid_small_gemm_by_blas &&
      (beta == 0.0f || beta == 1.0f)) {
    own_gemm::sgemm(trans_a, trans_b, M, N, K, A, B, C, beta == 1.0f);
    return;
  }
  fluid_sgemm(kRowMajor, trans_a ? kTrans : kNoTrans, trans_b ? kTrans : kNoTrans, M, N, K,
              1.0f, A, trans_a ? M : K, B, trans_b ? K : N, beta, C, N);
}

inline void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const double* A,
                 const double* B, double* C, double beta = 0.0) {
  fluid_dgemm(kRowMajor, trans_a ? kTrans : kNoTrans, trans_b ? kTrans : kNoTrans, M, N, K,
              1.0, A, trans_a ? M : K, B, trans_b ? K : N, beta, C, N);
}

// mul: Out[M, N] = X[M, K] @ Y[K, N] (X and Y flattened at their num_col_dims)
template <class T>
void mul(const T* x, const T* y, T* out, int64_t M, int64_t K, int64_t N) {
  gemm(false, false, M, N, K, x, y, out);
}

// mul_grad: dX = dOut @ Y^T, dY = X^T @ dOut (either may be absent)
template <class T>
void mul_grad(const T* x, const T* y, const T* dout, T* dx, T* dy, int64_t M, int64_t K,
              int64_t N) {
  if (dx) gemm(false, true, M, K, N, dout, y, dx);
  if (dy) gemm(true, false, K, N, M, x, dout, dy);
}

// the dims of a tensor of rank <= 8, passed by value (a CUDA kernel's argument too)
struct Dims8 {
  int64_t v[8];
};

// transpose: Out[i_0, .., i_r-1] = X[j] with j_perm[k] = i_k, Out walked in order
template <class T>
void transpose(const T* x, T* out, int64_t rank, Dims8 dims, Dims8 perm) {
  int64_t x_strides[8], step[8], out_dims[8], index[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t count = 1;
  for (int64_t k = rank - 1, stride = 1; k >= 0; --k) {
    x_strides[k] = stride;
    stride *= dims.v[k];
  }
  for (int64_t k = 0; k < rank; ++k) {
    out_dims[k] = dims.v[perm.v[k]];
    step[k] = x_strides[perm.v[k]];
    count *= out_dims[k];
  }
  if (count == 0) return;
  const int64_t inner = out_dims[rank - 1], inner_step = step[rank - 1];
  for (int64_t o = 0; o < count; o += inner) {
    int64_t at = 0;
    for (int64_t k = 0; k < rank - 1; ++k) at += index[k] * step[k];
    for (int64_t j = 0; j < inner; ++j) out[o + j] = x[at + j * inner_step];
    for (int64_t k = rank - 2; k >= 0; --k) {  // the next index of the outer dims
      if (++index[k] < out_dims[k]) break;
      index[k] = 0;
    }
  }
}

// sum of X over the dims marked in `reduced` (rank <= 8) into Out (of X's type or another:
// int32 sums to int64), times scale; a float sum is kept in double (a float running sum
// of many values drifts)
template <class T, class O>
void reduce_sum(const T* x, O* out, int64_t rank, Dims8 dims, Dims8 reduced, int64_t out_count,
                O scale) {
  typedef typename std::conditional<std::is_floating_point<O>::value, double, O>::type Total;
  int64_t out_strides[8], index[8] = {0, 0, 0, 0, 0, 0, 0, 0}, count = 1;
  for (int64_t k = rank - 1, stride = 1; k >= 0; --k) {
    out_strides[k] = reduced.v[k] ? 0 : stride;
    if (!reduced.v[k]) stride *= dims.v[k];
    count *= dims.v[k];
  }
  std::vector<Total> totals(out_count, Total(0));
  for (int64_t i = 0; i < count; ++i) {
    int64_t at = 0;
    for (int64_t k = 0; k < rank; ++k) at += index[k] * out_strides[k];
    totals[at] += Total(x[i]);
    for (int64_t k = rank - 1; k >= 0; --k) {
      if (++index[k] < dims.v[k]) break;
      index[k] = 0;
    }
  }
  for (int64_t i = 0; i < out_count; ++i)
    out[i] = scale == O(1) ? O(totals[i]) : O(totals[i]) * scale;
}

// its gradient: dX[i] = dOut[the place i was summed into] * scale
template <class T>
void reduce_sum_grad(const T* dout, T* dx, int64_t rank, Dims8 dims, Dims8 reduced, T scale) {
  int64_t out_strides[8], index[8] = {0, 0, 0, 0, 0, 0, 0, 0}, count = 1;
  for (int64_t k = rank - 1, stride = 1; k >= 0; --k) {
    out_strides[k] = reduced.v[k] ? 0 : stride;
    if (!reduced.v[k]) stride *= dims.v[k];
    count *= dims.v[k];
  }
  for (int64_t i = 0; i < count; ++i) {
    int64_t at = 0;
    for (int64_t k = 0; k < rank; ++k) at += index[k] * out_strides[k];
    dx[i] = dout[at] * scale;
    for (int64_t k = rank - 1; k >= 0; --k) {
      if (++index[k] < dims.v[k]) break;
      index[k] = 0;
    }
  }
}

// layer_norm over the rows of X [left, right], and its gradient (fluid_native_rows.h)
template <class T>
FLUID_WIDE_CLONES void layer_norm(const T* x, const T* scale, const T* bias, T* y, T* mean,
                                  T* variance, int64_t left, int64_t right, T epsilon) {
  layer_norm_rows(x, scale, bias, y, mean, variance, left, right, epsilon);
}

template <class T>
FLUID_WIDE_CLONES void layer_norm_grad(const T* x, const T* scale, const T* mean,
                                       const T* variance, const T* dy, T* dx, T* dscale,
                                       T* dbias, int64_t left, int64_t right, T epsilon) {
  layer_norm_grad_rows(x, scale, mean, variance, dy, dx, dscale, dbias, left, right, epsilon);
}

// lookup_table: Out[i] = W[Ids[i]] (rows of D values), 0 for padding_idx, and for an id
// outside [0, V) (compiled code has no host copy to check ids against, and must not read
// outside W)
template <class T, class I>
void lookup_table(const T* w, const I* ids, T* out, int64_t count, int64_t V, int64_t D,
                  int64_t padding_idx) {
  for (int64_t i = 0; i < count; ++i) {
    const int64_t id = int64_t(ids[i]);
    T* o = out + i * D;
    if (id == padding_idx || id < 0 || id >= V)
      std::fill(o, o + D, T(0));
    else
      std::copy(w + id * D, w + (id + 1) * D, o);
  }
}

// one_hot: Out[i, j] = 1 where ids[i] == j; the row of an id outside [0, depth) is zeros
template <class T, class I>
void one_hot(const I* ids, T* out, int64_t count, int64_t depth) {
  for (int64_t i = 0; i < count; ++i) {
    T* o = out + i * depth;
    const int64_t id = int64_t(ids[i]);
    for (int64_t j = 0; j < depth; ++j) o[j] = T(j == id);
  }
}

// its dense gradient: W@GRAD[Ids[i]] += dOut[i] (padding_idx and ids out of range add none)
template <class T, class I>
void lookup_table_grad(const I* ids, const T* dout, T* dw, int64_t count, int64_t V, int64_t D,
                       int64_t padding_idx) {
  std::fill(dw, dw + V * D, T(0));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t id = int64_t(ids[i]);
    if (id == padding_idx || id < 0 || id >= V) continue;
    for (int64_t j = 0; j < D; ++j) dw[id * D + j] += dout[i * D + j];
  }
}

// dropout_grad in training: dX = dOut * Mask * factor (1, or 1 / (1 - p) upscaled)
template <class T>
void dropout_grad(const uint8_t* mask, const T* dout, T* dx, int64_t count, T factor,
                  bool upscale) {
  for (int64_t i = 0; i < count; ++i)
    dx[i] = upscale ? dout[i] * T(mask[i]) / factor : dout[i] * T(mask[i]);
}

// --- elementwise with Paddle's axis broadcast: X viewed as [pre, n, post], Y as [n] --------------
template <class T, class F>
void broadcast(const T* x, const T* y, T* out, int64_t pre, int64_t n, int64_t post, F f) {
  for (int64_t i = 0; i < pre; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const T b = y[j];
      const int64_t at = (i * n + j) * post;
      for (int64_t k = 0; k < post; ++k) out[at + k] = f(x[at + k], b);
    }
}

// the gradient reaching Y of a broadcast add (sign +1) or sub (sign -1): dOut summed over
// the pre and post dims; X's is dOut itself (times nothing)
template <class T>
void reduce_to_y(const T* dout, T* dy, int64_t pre, int64_t n, int64_t post, T sign) {
  for (int64_t j = 0; j < n; ++j) dy[j] = 0;
  for (int64_t i = 0; i < pre; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const T* row = dout + (i * n + j) * post;
      T total = 0;
      for (int64_t k = 0; k < post; ++k) total += row[k];
      dy[j] += sign * total;
    }
}

// the gradient reaching Y of a broadcast mul: dOut * X summed over the pre and post dims
template <class T>
void mul_reduce_to_y(const T* dout, const T* x, T* dy, int64_t pre, int64_t n, int64_t post) {
  for (int64_t j = 0; j < n; ++j) dy[j] = 0;
  for (int64_t i = 0; i < pre; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = (i * n + j) * post;
      T total = 0;
      for (int64_t k = 0; k < post; ++k) total += dout[at + k] * x[at + k];
      dy[j] += total;
    }
}

// the gradient reaching Y of a broadcast div: -dOut * Out / Y summed over the pre and post
// dims (each term in the interpreter's order: (-dOut * Out) / Y)
template <class T>
void div_reduce_to_y(const T* dout, const T* out, const T* y, T* dy, int64_t pre, int64_t n,
                     int64_t post) {
  for (int64_t j = 0; j < n; ++j) dy[j] = 0;
  for (int64_t i = 0; i < pre; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = (i * n + j) * post;
      T total = 0;
      for (int64_t k = 0; k < post; ++k) total += -dout[at + k] * out[at + k] / y[j];
      dy[j] += total;
    }
}

template <class T>
void copy(const T* x, T* out, int64_t count) {
  if (x != out) memcpy(out, x, sizeof(T) * count);
}

// concat: X, viewed as [pre, n, post], into Out's [pre, total, post] at `offset` along the
// middle dim; split_part is its gradient, the same slice of dOut back into dX
template <class T>
void concat_part(const T* x, T* out, int64_t pre, int64_t n, int64_t post, int64_t total,
                 int64_t offset) {
  const int64_t width = n * post;
  if (width)
    for (int64_t p = 0; p < pre; ++p)
      memcpy(out + (p * total + offset) * post, x + p * width, sizeof(T) * width);
}

template <class T>
void split_part(const T* dout, T* dx, int64_t pre, int64_t n, int64_t post, int64_t total,
                int64_t offset) {
  const int64_t width = n * post;
  if (width)
    for (int64_t p = 0; p < pre; ++p)
      memcpy(dx + p * width, dout + (p * total + offset) * post, sizeof(T) * width);
}

// cast: each value converted as C converts it (floats to ints truncate toward zero, to
// bool x != 0), which is what NumPy's astype does
template <class S, class D>
void convert(const S* x, D* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = D(x[i]);
}

template <class T>
void negate(const T* x, T* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = -x[i];
}

// --- comparisons: Out (bool) = X op Y, Y broadcast into X as in the elementwise ops ------------
// floats are equal within 1e-8, as the interpreter's (equal infinities match exactly)
template <class T>
bool equal_values(T a, T b) {
  if (a == b) return true;
  if constexpr (std::is_floating_point<T>::value)
    return std::isfinite(a) && std::isfinite(b) && std::abs(a - b) < T(1e-8);
  return false;
}

struct Less { template <class T> bool operator()(T a, T b) const { return a < b; } };
struct LessEqual { template <class T> bool operator()(T a, T b) const { return a <= b; } };
struct Greater { template <class T> bool operator()(T a, T b) const { return a > b; } };
struct GreaterEqual { template <class T> bool operator()(T a, T b) const { return a >= b; } };
struct Equal { template <class T> bool operator()(T a, T b) const { return equal_values(a, b); } };
struct NotEqual {
  template <class T> bool operator()(T a, T b) const { return !equal_values(a, b); }
};

template <class T, class F>
void compare(const T* x, const T* y, bool* out, int64_t pre, int64_t n, int64_t post, F f) {
  for (int64_t i = 0; i < pre; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const T b = y[j];
      const int64_t at = (i * n + j) * post;
      for (int64_t k = 0; k < post; ++k) out[at + k] = f(x[at + k], b);
    }
}

// --- activations ---------------------------------------------------------------------------------
// tanh of a float, written so that a loop over it vectorises (glibc's tanhf does not, and a
// tanh per element of a recurrent net's hidden state is no small part of its step), within
// 3 ulp: |x| < 0.625, Cephes' odd polynomial; else 1 - 2 / (e^{2|x|} + 1), e^y as Cephes'
// expf (y = n ln2 + r, a polynomial in r, 2^n from the exponent's bits; y is clamped at 20,
// where tanh is 1.0f already). Both branches are computed, then one is picked, so the loop
// vectorises (with -fno-trapping-math).
inline float tanh_value(float x) {
  const float a = std::fabs(x), z = x * x;
  const float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
                        1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
  float y = 2.0f * a;
  y = y < 20.0f ? y : 20.0f;
  const float n = std::floor(y * 1.44269504088896341f + 0.5f);
  const float r = (y - n * 0.693359375f) + n * 2.12194440e-4f;
  const float p = (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r +
                     4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f) * r * r +
                  r + 1.0f;
  const int32_t bits = ((int32_t)n + 127) << 23;
  float two_n;
  memcpy(&two_n, &bits, sizeof two_n);
  const float t = 1.0f - 2.0f / (p * two_n + 1.0f);
  const float large = a == a ? (x < 0 ? -t : t) : x;  // NaN stays NaN
  return a < 0.625f ? small : large;
}

inline double tanh_value(double x) { return std::tanh(x); }

// an elementwise formula's loops (its lambda from the op's record): one input, two inputs
template <class T, class F>
FLUID_WIDE_CLONES void map1(const T* x, T* out, int64_t count, F f) {
  for (int64_t i = 0; i < count; ++i) out[i] = f(x[i]);
}

template <class T, class F>
FLUID_WIDE_CLONES void map2(const T* a, const T* b, T* out, int64_t count, F f) {
  for (int64_t i = 0; i < count; ++i) out[i] = f(a[i], b[i]);
}

// scale: Out = scale * X + bias (bias_after_scale) or scale * (X + bias)
template <class T>
void scale(const T* x, T* out, int64_t count, T s, T bias, bool bias_after_scale) {
  if (bias_after_scale)
    for (int64_t i = 0; i < count; ++i) out[i] = s * x[i] + bias;
  else
    for (int64_t i = 0; i < count; ++i) out[i] = s * (x[i] + bias);
}

// --- reductions ------------------------------------------------------------------------------------
// mean: Out[0] = sum(X) / count, summed pairwise as NumPy sums (its rounding, not a loop's)
template <class T>
T pairwise_sum(const T* x, int64_t count) {
  if (count < 8) {
    T total = 0;
    for (int64_t i = 0; i < count; ++i) total += x[i];
    return total;
  }
  if (count <= 128) {  // NumPy's unrolled block: eight partial sums
    T r[8];
    for (int k = 0; k < 8; ++k) r[k] = x[k];
    int64_t i = 8;
    for (; i < count - (count % 8); i += 8)
      for (int k = 0; k < 8; ++k) r[k] += x[i + k];
    T total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < count; ++i) total += x[i];
    return total;
  }
  int64_t half = count / 2;
  half -= half % 8;
  return pairwise_sum(x, half) + pairwise_sum(x + half, count - half);
}

template <class T>
void mean(const T* x, T* out, int64_t count) {
  out[0] = pairwise_sum(x, count) / T(count);
}

// mean_grad: dX = dOut[0] / count everywhere
template <class T>
void mean_grad(const T* dout, T* dx, int64_t count) {
  const T value = dout[0] / T(count);
  for (int64_t i = 0; i < count; ++i) dx[i] = value;
}

template <class T>
void fill(T* out, int64_t count, T value) {
  for (int64_t i = 0; i < count; ++i) out[i] = value;
}

// --- softmax and cross-entropy ----------------------------------------------------------------------
// softmax over the last dim of [rows, classes]
template <class T>
FLUID_WIDE_CLONES void softmax(const T* x, T* out, int64_t rows, int64_t classes) {
  T top, total;
  for (int64_t r = 0; r < rows; ++r) softmax_row(x + r * classes, out + r * classes, classes,
                                                 &top, &total);
}

// softmax along the middle dim of [pre, n, post] (an axis other than the last)
template <class T>
void softmax_axis(const T* x, T* out, int64_t pre, int64_t n, int64_t post) {
  for (int64_t p = 0; p < pre; ++p)
    for (int64_t s = 0; s < post; ++s)
      softmax_line(x + p * n * post + s, out + p * n * post + s, n, post);
}

// softmax_with_cross_entropy, hard labels: Softmax as above, Loss[r] = -log(Softmax[r, label])
// (0 for ignore_index); log-softmax computed as x - max - log(sum) for accuracy
template <class T>
FLUID_WIDE_CLONES void softmax_cross_entropy(const T* logits, const int64_t* label,
                                             T* softmax_out, T* loss, int64_t rows,
                                             int64_t classes, int64_t ignore_index) {
  T top, total;
  for (int64_t r = 0; r < rows; ++r) {
    const T* in = logits + r * classes;
    softmax_row(in, softmax_out + r * classes, classes, &top, &total);
    const int64_t k = label[r];
    loss[r] = !counts(k, classes, ignore_index) ? T(0) : -(in[k] - top - std::log(total));
  }
}

// softmax_with_cross_entropy's general form along the middle dim of [pre, n, post]
// (softmax_xent_line per line): hard labels [pre, 1, post] or soft ones shaped as the
// logits (the other pointer null); Loss is [pre, 1, post]
template <class T, class L>
void softmax_cross_entropy_axis(const T* logits, const L* hard, const T* soft, T* softmax_out,
                                T* loss, int64_t pre, int64_t n, int64_t post,
                                int64_t ignore_index, bool use_softmax) {
  for (int64_t p = 0; p < pre; ++p)
    for (int64_t s = 0; s < post; ++s) {
      const int64_t at = p * n * post + s, line = p * post + s;
      softmax_xent_line(logits + at, hard ? hard + line : hard, soft ? soft + at : soft,
                        softmax_out + at, loss + line, n, post, ignore_index, use_softmax);
    }
}

template <class T, class L>
void softmax_cross_entropy_axis_grad(const T* softmax_in, const L* hard, const T* soft,
                                     const T* dloss, T* dlogits, int64_t pre, int64_t n,
                                     int64_t post, int64_t ignore_index, bool use_softmax) {
  for (int64_t p = 0; p < pre; ++p)
    for (int64_t s = 0; s < post; ++s) {
      const int64_t at = p * n * post + s, line = p * post + s;
      softmax_xent_grad_line(softmax_in + at, hard ? hard + line : hard,
                             soft ? soft + at : soft, dloss[line], dlogits + at, n, post,
                             ignore_index, use_softmax);
    }
}

// its gradient: dLogits[r] = (Softmax[r] - onehot(label[r])) * dLoss[r]
template <class T>
void softmax_cross_entropy_grad(const T* softmax_in, const int64_t* label, const T* dloss,
                                T* dlogits, int64_t rows, int64_t classes,
                                int64_t ignore_index) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* s = softmax_in + r * classes;
    T* d = dlogits + r * classes;
    const int64_t k = label[r];
    if (!counts(k, classes, ignore_index)) {
      for (int64_t c = 0; c < classes; ++c) d[c] = 0;
      continue;
    }
    const T g = dloss[r];
    for (int64_t c = 0; c < classes; ++c) d[c] = s[c] * g;
    d[k] -= g;
  }
}

// softmax_grad along the middle dim of [pre, n, post]: dX = Out * (dOut - sum(dOut * Out))
template <class T>
void softmax_grad(const T* out, const T* dout, T* dx, int64_t pre, int64_t n, int64_t post) {
  for (int64_t p = 0; p < pre; ++p)
    for (int64_t s = 0; s < post; ++s) {
      const int64_t at = p * n * post + s;
      softmax_grad_line(out + at, dout + at, dx + at, n, post);
    }
}

// cross_entropy2 on probabilities with hard labels (cross_entropy2_row, per row)
template <class T, class L>
void cross_entropy2(const T* x, const L* label, T* y, T* match, int64_t rows, int64_t classes,
                    int64_t ignore_index) {
  for (int64_t r = 0; r < rows; ++r)
    cross_entropy2_row(x + r * classes, label[r], classes, ignore_index, y + r,
                       match ? match + r : match);
}

// its gradient: dX[r, Label[r]] = -dY[r] / MatchX[r], 0 elsewhere
template <class T, class L>
void cross_entropy_grad2(const L* label, const T* match, const T* dy, T* dx, int64_t rows,
                         int64_t classes, int64_t ignore_index) {
  std::fill(dx, dx + rows * classes, T(0));
  for (int64_t r = 0; r < rows; ++r) {
    const L k = label[r];
    if (counts(k, classes, ignore_index)) dx[r * classes + int64_t(k)] = -dy[r] / match[r];
  }
}

// top_k over the last dim: the k largest of each row, best first, with their indices
template <class T>
void top_k(const T* x, T* out, int64_t* indices, int64_t rows, int64_t size, int64_t k) {
  for (int64_t r = 0; r < rows; ++r) top_k_row(x + r * size, size, k, out + r * k, indices + r * k);
}

// accuracy: Correct = the rows whose label is among their k indices, Total = rows,
// Accuracy = Correct / Total
template <class L>
void accuracy(const int64_t* indices, const L* label, float* accuracy_out, int32_t* correct,
              int32_t* total, int64_t rows, int64_t k) {
  const int64_t hits = accuracy_hits(indices, label, rows, k);
  if (correct) correct[0] = int32_t(hits);
  if (total) total[0] = int32_t(rows);
  accuracy_out[0] = float(int32_t(hits)) / float(rows > 0 ? rows : 1);
}

// --- convolution, pooling, batch norm (NCHW) --------------------------------------------------------
// The output columns [lo, hi) whose tap at input column ox*sw + x0 lies inside [0, W).
inline void tap_range(int64_t x0, int64_t sw, int64_t W, int64_t ow, int64_t& lo, int64_t& hi) {
  lo = x0 >= 0 ? 0 : std::min(ow, (-x0 + sw - 1) / sw);
  hi = W - x0 > 0 ? std::min(ow, (W - x0 + sw - 1) / sw) : 0;
  hi = std::max(lo, hi);
}

// im2col of one image's C channels: cols[(c kh + i) kw + j][oy ow + ox] =
// X[c, oy*sh - pt + i*dh, ox*sw - pl + j*dw], 0 outside X, row r at cols + r ld. A row of
// taps inside X is one copy at stride 1; the parts outside are filled, so no element tests
// its bounds.
template <class T>
void im2col(const T* x, T* cols, int64_t ld, int64_t C, int64_t H, int64_t W, int64_t kh,
            int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t pt, int64_t pl,
            int64_t dh, int64_t dw) {
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        T* col = cols + ((c * kh + i) * kw + j) * ld;
        const int64_t x0 = j * dw - pl;
        int64_t lo, hi;
        tap_range(x0, sw, W, ow, lo, hi);
        for (int64_t oy = 0; oy < oh; ++oy) {
          T* row = col + oy * ow;
          const int64_t y = oy * sh - pt + i * dh;
          if (y < 0 || y >= H) {
            std::fill(row, row + ow, T(0));
            continue;
          }
          const T* line = x + (c * H + y) * W;
          std::fill(row, row + lo, T(0));
          if (sw == 1)
            std::copy(line + lo + x0, line + hi + x0, row + lo);
          else
            for (int64_t ox = lo; ox < hi; ++ox) row[ox] = line[ox * sw + x0];
          std::fill(row + hi, row + ow, T(0));
        }
      }
}

// The adjoint of im2col: each column entry added onto the input pixel it was taken from.
template <class T>
void col2im_add(const T* cols, int64_t ld, T* x, int64_t C, int64_t H, int64_t W, int64_t kh,
                int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t pt,
                int64_t pl, int64_t dh, int64_t dw) {
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        const T* col = cols + ((c * kh + i) * kw + j) * ld;
        const int64_t x0 = j * dw - pl;
        int64_t lo, hi;
        tap_range(x0, sw, W, ow, lo, hi);
        for (int64_t oy = 0; oy < oh; ++oy) {
          const int64_t y = oy * sh - pt + i * dh;
          if (y < 0 || y >= H) continue;
          const T* row = col + oy * ow;
          T* line = x + (c * H + y) * W;
          for (int64_t ox = lo; ox < hi; ++ox) line[ox * sw + x0] += row[ox];
        }
      }
}

// NHWC <-> NCHW, an image's [spots, C] and [C, spots] swapped
template <class T>
void to_channels_first(const T* x, T* out, int64_t N, int64_t spots, int64_t C) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t s = 0; s < spots; ++s)
      for (int64_t c = 0; c < C; ++c) out[(n * C + c) * spots + s] = x[(n * spots + s) * C + c];
}

template <class T>
void to_channels_last(const T* x, T* out, int64_t N, int64_t C, int64_t spots) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t s = 0; s < spots; ++s)
      for (int64_t c = 0; c < C; ++c) out[(n * spots + s) * C + c] = x[(n * C + c) * spots + s];
}

// out[n, c, s] += bias[c] over [N, C, spots]
template <class T>
void add_channel_bias(T* out, const T* bias, int64_t N, int64_t C, int64_t spots) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      T* o = out + (n * C + c) * spots;
      const T b = bias[c];
      for (int64_t s = 0; s < spots; ++s) o[s] += b;
    }
}

// Sums of a channel's run in double, kept as eight partial sums: one running sum would wait
// on each add before the next (and a float sum may not be reordered into vectors).
template <class T, class F>
double sum_in_double(int64_t count, F term) {
  double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= count; i += 8)
    for (int j = 0; j < 8; ++j) part[j] += term(i + j);
  for (; i < count; ++i) part[0] += term(i);
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

// out[c] = sum over n and s of x[n, c, s] (in double)
template <class T>
void channel_sums(const T* x, T* out, int64_t N, int64_t C, int64_t spots) {
  for (int64_t c = 0; c < C; ++c) {
    double total = 0;
    for (int64_t n = 0; n < N; ++n) {
      const T* in = x + (n * C + c) * spots;
      total += sum_in_double<T>(spots, [in](int64_t s) { return double(in[s]); });
    }
    out[c] = T(total);
  }
}

// out += x (also a while_grad's step adding into its total)
template <class T>
void add_into(T* out, const T* x, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] += x[i];
}

// conv2d: Out[n, m] = sum over the group's channels and taps of W[m, c, i, j] *
// X[n, c, oy*sh - pt + i*dh, ox*sw - pl + j*dw] (zero outside X), as im2col columns per
// sample and group times the group's filters. cols: a scratch of (C/g) kh kw * oh ow values.
template <class T>
void conv2d(const T* x, const T* w, T* out, T* cols, int64_t N, int64_t C, int64_t H,
            int64_t W, int64_t M, int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
            int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw, int64_t groups) {
  const int64_t cg = C / groups, mg = M / groups, rows = cg * kh * kw, spots = oh * ow;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      im2col(x + (n * C + g * cg) * H * W, cols, spots, cg, H, W, kh, kw, oh, ow, sh, sw, pt,
             pl, dh, dw);
      gemm(false, false, mg, spots, rows, w + g * mg * rows, cols,
           out + (n * M + g * mg) * spots);
    }
}

// conv2d_grad, per sample and group, with the same columns as the forward:
//   dW_g += dOut_{n,g} [mg, spots] @ cols(X_{n,g})^T,  dX_{n,g} = col2im(W_g^T @ dOut_{n,g})
// (either may be absent). cols: a scratch of (C/g) kh kw * oh ow values.
template <class T>
void conv2d_grad(const T* x, const T* w, const T* dout, T* dx, T* dw, T* cols, int64_t N,
                 int64_t C, int64_t H, int64_t W, int64_t M, int64_t kh, int64_t kw, int64_t oh,
                 int64_t ow, int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t dh,
                 int64_t dwid, int64_t groups) {
  const int64_t cg = C / groups, mg = M / groups, rows = cg * kh * kw, spots = oh * ow;
  if (dx) std::fill(dx, dx + N * C * H * W, T(0));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      const T* d = dout + (n * M + g * mg) * spots;
      if (dw) {
        im2col(x + (n * C + g * cg) * H * W, cols, spots, cg, H, W, kh, kw, oh, ow, sh, sw, pt,
               pl, dh, dwid);
        gemm(false, true, mg, rows, spots, d, cols, dw + g * mg * rows, T(n == 0 ? 0 : 1));
      }
      if (dx) {
        gemm(true, false, rows, spots, mg, w + g * mg * rows, d, cols);
        col2im_add(cols, spots, dx + (n * C + g * cg) * H * W, cg, H, W, kh, kw, oh, ow, sh, sw,
                   pt, pl, dh, dwid);
      }
    }
}

// pool2d, max or average over each window (pool_window, pool_value)
template <class T>
void pool2d(const T* x, T* out, int64_t NC, int64_t H, int64_t W, int64_t kh, int64_t kw,
            int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t pt, int64_t pl, bool is_max,
            bool exclusive, bool adaptive) {
  for (int64_t p = 0; p < NC; ++p)
    for (int64_t oy = 0; oy < oh; ++oy) {
      int64_t ya, yb;
      pool_window(oy, H, kh, sh, pt, oh, adaptive, ya, yb);
      for (int64_t ox = 0; ox < ow; ++ox) {
        int64_t xa, xb;
        pool_window(ox, W, kw, sw, pl, ow, adaptive, xa, xb);
        out[(p * oh + oy) * ow + ox] =
            pool_value(x + p * H * W, W, ya, yb, xa, xb, is_max,
                       pool_count<T>(ya, yb, xa, xb, kh, kw, exclusive, adaptive));
      }
    }
}

// pool2d_grad over pool2d's windows: average spreads each dOut over its window's positions
// (divided as the forward divides); max routes it to the window's first maximum
template <class T>
void pool2d_grad(const T* x, const T* dout, T* dx, int64_t NC, int64_t H, int64_t W, int64_t kh,
                 int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t pt,
                 int64_t pl, bool is_max, bool exclusive, bool adaptive) {
  std::fill(dx, dx + NC * H * W, T(0));
  for (int64_t p = 0; p < NC; ++p) {
    T* grad = dx + p * H * W;
    for (int64_t oy = 0; oy < oh; ++oy) {
      int64_t ya, yb;
      pool_window(oy, H, kh, sh, pt, oh, adaptive, ya, yb);
      for (int64_t ox = 0; ox < ow; ++ox) {
        int64_t xa, xb;
        pool_window(ox, W, kw, sw, pl, ow, adaptive, xa, xb);
        const T d = dout[(p * oh + oy) * ow + ox];
        if (is_max) {
          const int64_t best = pool_first_max(x + p * H * W, W, ya, yb, xa, xb);
          if (best >= 0) grad[best] += d;
          continue;
        }
        const T share = d / pool_count<T>(ya, yb, xa, xb, kh, kw, exclusive, adaptive);
        for (int64_t y = ya; y < yb; ++y)
          for (int64_t xx = xa; xx < xb; ++xx) grad[y * W + xx] += share;
      }
    }
  }
}

// batch_norm, X viewed as [pre, C, post] (NCHW: [N, C, H W]; NHWC: [N H W, C, 1]); a
// channel's values are pre runs of post. relu: Y = max(Y, 0) after (NaN kept).
// Y = (X - mu) k + b over channel c, then the relu
template <class T>
void normalise_channel(const T* x, T* y, int64_t pre, int64_t C, int64_t post, int64_t c, T mu,
                       T k, T b, bool relu) {
  for (int64_t p = 0; p < pre; ++p) {
    const T* in = x + (p * C + c) * post;
    T* o = y + (p * C + c) * post;
    for (int64_t i = 0; i < post; ++i) {
      const T v = (in[i] - mu) * k + b;
      o[i] = relu && v < T(0) ? T(0) : v;
    }
  }
}

// With the running statistics: Y = (X - Mean) * (Scale / sqrt(Variance + eps)) + Bias.
template <class T>
void batch_norm_inference(const T* x, const T* scale, const T* bias, const T* mean,
                          const T* variance, T* y, int64_t pre, int64_t C, int64_t post,
                          T epsilon, bool relu) {
  for (int64_t c = 0; c < C; ++c) {
    const T inv_std = T(1) / std::sqrt(variance[c] + epsilon);
    normalise_channel(x, y, pre, C, post, c, mean[c], inv_std * (scale ? scale[c] : T(1)),
                      bias ? bias[c] : T(0), relu);
  }
}

// With the batch's statistics (training): mu, var = the mean and biased variance of the
// channel's pre * post values (summed in double); Y = (X - mu) * Scale / sqrt(var + eps) +
// Bias; MeanOut = Mean momentum + mu keep, VarianceOut likewise with var (keep = 1 -
// momentum); SavedMean = mu, SavedVariance = 1 / sqrt(var + eps). One value per channel:
// Y = X, the statistics pass through and the saved ones are 0, as Paddle. MeanOut may be
// Mean itself (read first).
template <class T>
void batch_norm_training(const T* x, const T* scale, const T* bias, const T* mean,
                         const T* variance, T* y, T* mean_out, T* variance_out, T* saved_mean,
                         T* saved_inv_std, int64_t pre, int64_t C, int64_t post, T epsilon,
                         T momentum, T keep, bool relu) {
  const int64_t m = pre * post;
  for (int64_t c = 0; c < C; ++c) {
    const T mean_c = mean[c], variance_c = variance[c];
    T mu = 0, inv_std = 0;
    if (m == 1) {
      y[c] = x[c];
      mean_out[c] = mean_c;
      variance_out[c] = variance_c;
    } else {
      double total = 0, squares = 0;
      for (int64_t p = 0; p < pre; ++p) {
        const T* in = x + (p * C + c) * post;
        total += sum_in_double<T>(post, [in](int64_t i) { return double(in[i]); });
      }
      mu = T(total / double(m));
      for (int64_t p = 0; p < pre; ++p) {
        const T* in = x + (p * C + c) * post;
        squares += sum_in_double<T>(post, [in, mu](int64_t i) {
          const double d = double(in[i] - mu);
          return d * d;
        });
      }
      const T var = T(squares / double(m));
      inv_std = T(1) / std::sqrt(var + epsilon);
      normalise_channel(x, y, pre, C, post, c, mu, inv_std * (scale ? scale[c] : T(1)),
                        bias ? bias[c] : T(0), relu);
      mean_out[c] = mean_c * momentum + mu * keep;
      variance_out[c] = variance_c * momentum + var * keep;
    }
    if (saved_mean) saved_mean[c] = mu;
    if (saved_inv_std) saved_inv_std[c] = inv_std;
  }
}

// batch_norm_grad, x_hat = (X - mu) * inv_std: Bias@GRAD = sum(dY), Scale@GRAD =
// sum(dY x_hat) per channel (in double); X@GRAD = k dY with the running statistics
// (global: mu = Mean, inv_std = 1 / sqrt(Variance + eps)), k (dY - (Bias@GRAD + x_hat
// Scale@GRAD) / m) with the batch's (mu = SavedMean, inv_std = SavedVariance), k = Scale
// inv_std. One value per channel with the batch's: dX = dY and no Scale or Bias gradient.
// stat: SavedVariance (batch) or the running Variance (global).
template <class T>
void batch_norm_grad(const T* x, const T* scale, const T* mean, const T* stat, const T* dy,
                     T* dx, T* dscale, T* dbias, int64_t pre, int64_t C, int64_t post,
                     bool global_stats, T epsilon) {
  const int64_t m = pre * post;
  for (int64_t c = 0; c < C; ++c) {
    if (!global_stats && m == 1) {
      if (dx) dx[c] = dy[c];
      if (dscale) dscale[c] = T(0);
      if (dbias) dbias[c] = T(0);
      continue;
    }
    const T mu = mean[c];
    const T inv_std = global_stats ? T(1) / std::sqrt(stat[c] + epsilon) : stat[c];
    double total = 0, weighted = 0;
    for (int64_t p = 0; p < pre; ++p) {
      const T* in = x + (p * C + c) * post;
      const T* d = dy + (p * C + c) * post;
      total += sum_in_double<T>(post, [d](int64_t i) { return double(d[i]); });
      weighted += sum_in_double<T>(post, [d, in, mu, inv_std](int64_t i) {
        return double(d[i]) * double((in[i] - mu) * inv_std);
      });
    }
    const T d_bias = T(total), d_scale = T(weighted);
    if (dx) {
      const T k = scale ? scale[c] * inv_std : inv_std;
      for (int64_t p = 0; p < pre; ++p) {
        const T* in = x + (p * C + c) * post;
        const T* d = dy + (p * C + c) * post;
        T* o = dx + (p * C + c) * post;
        for (int64_t i = 0; i < post; ++i)
          o[i] = batch_norm_dx(d[i], in[i], mu, inv_std, k, d_bias, d_scale, m, global_stats);
      }
    }
    if (dscale) dscale[c] = d_scale;
    if (dbias) dbias[c] = d_bias;
  }
}

// --- optimizers (in place: ParamOut is Param) ---------------------------------------------------------
// sgd: Param -= LearningRate[0] * Grad
// The learning rate (L) and Adam's powers (P) keep their own types: a float64 parameter is
// trained with Fluid's float32 learning rate and accumulators, read and written as such.
template <class T, class L>
void sgd(T* param, const T* grad, const L* lr, int64_t count) {
  const T rate = static_cast<T>(lr[0]);
  for (int64_t i = 0; i < count; ++i) sgd_step(param[i], grad[i], rate);
}

// momentum, one pass over the four arrays (momentum_step, fluid_native_maps.h)
template <class T, class L>
FLUID_VECTOR_CLONES void momentum(T* __restrict__ param, const T* __restrict__ grad,
                                  T* __restrict__ velocity, const L* lr, int64_t count, T mu,
                                  T rescale, bool l2_decay, T l2, bool nesterov) {
  const T rate = static_cast<T>(lr[0]);
  for (int64_t i = 0; i < count; ++i)
    momentum_step(param[i], grad[i], velocity[i], rate, mu, rescale, l2_decay, l2, nesterov);
}

// adagrad, one pass over the three arrays (adagrad_step, fluid_native_maps.h)
template <class T, class L>
FLUID_VECTOR_CLONES void adagrad(T* __restrict__ param, const T* __restrict__ grad,
                                 T* __restrict__ moment, const L* lr, int64_t count, T eps) {
  const T rate = static_cast<T>(lr[0]);
  for (int64_t i = 0; i < count; ++i) adagrad_step(param[i], grad[i], moment[i], rate, eps);
}

// rmsprop, one pass (rmsprop_step, fluid_native_maps.h); mean_grad null when not centered
template <class T, class L>
FLUID_VECTOR_CLONES void rmsprop(T* __restrict__ param, const T* __restrict__ grad,
                                 T* __restrict__ mean_square, T* __restrict__ mean_grad,
                                 T* __restrict__ moment, const L* lr, int64_t count, T decay,
                                 T keep, T eps, T momentum) {
  const T rate = static_cast<T>(lr[0]);
  if (mean_grad)
    for (int64_t i = 0; i < count; ++i)
      rmsprop_step(param[i], grad[i], mean_square[i], mean_grad + i, moment[i], rate, decay,
                   keep, eps, momentum);
  else
    for (int64_t i = 0; i < count; ++i)
      rmsprop_step(param[i], grad[i], mean_square[i], static_cast<T*>(nullptr), moment[i],
                   rate, decay, keep, eps, momentum);
}

// adam, one pass over the four arrays (adam_step, fluid_native_maps.h), with
//   rate = lr sqrt(1 - beta2^t) / (1 - beta1^t), eps_hat = eps sqrt(1 - beta2^t);
//   beta1^t *= beta1, beta2^t *= beta2 when the op has Beta1PowOut and Beta2PowOut
template <class T, class L, class P>
FLUID_VECTOR_CLONES void adam(T* __restrict__ param, const T* __restrict__ grad, const L* lr,
          T* __restrict__ m1, T* __restrict__ m2, P* beta1_pow, P* beta2_pow, int64_t count,
          T beta1, T beta2, T epsilon, bool update_pows) {
  const T one = 1;
  const T pow1 = static_cast<T>(beta1_pow[0]), pow2 = static_cast<T>(beta2_pow[0]);
  const T rate = static_cast<T>(lr[0]) * std::sqrt(one - pow2) / (one - pow1);
  const T eps_hat = epsilon * std::sqrt(one - pow2);
  for (int64_t i = 0; i < count; ++i)
    adam_step(param[i], grad[i], m1[i], m2[i], beta1, beta2, rate, eps_hat);
  if (update_pows) {  // Beta1PowOut and Beta2PowOut given: the op carries the powers on
    beta1_pow[0] = static_cast<P>(pow1 * beta1);
    beta2_pow[0] = static_cast<P>(pow2 * beta2);
  }
}

}  // namespace fluid_native

#include "fluid_native_products.h"
