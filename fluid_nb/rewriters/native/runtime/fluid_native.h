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
// (fluid_native_gemm.h): handing it to BLAS's threads costs more than it saves.
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "fluid_native_gemm.h"
#include "fluid_native_maps.h"

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
// makes no BLAS call)
#ifndef FLUID_NATIVE_RUNTIME_LIBRARY
__attribute__((visibility("default"))) fluid_native::sgemm_fn fluid_sgemm = nullptr;
__attribute__((visibility("default"))) fluid_native::dgemm_fn fluid_dgemm = nullptr;
#else
extern fluid_native::sgemm_fn fluid_sgemm;
extern fluid_native::dgemm_fn fluid_dgemm;
#endif
}

namespace fluid_native {

// --- matrix products ---------------------------------------------------------------------------
// C[M, N] = beta * C + op(A) @ op(B), op(A) [M, K], op(B) [K, N], all row-major
inline void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
                 const float* B, float* C, float beta = 0.0f) {
  if (M * N * K <= own_gemm::kOwnGemmLimit && (beta == 0.0f || beta == 1.0f)) {
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

template <class T>
void copy(const T* x, T* out, int64_t count) {
  if (x != out) memcpy(out, x, sizeof(T) * count);
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
// one row's softmax into o: exp(x - max) / sum; returns (max, sum) for a log-softmax
template <class T>
void softmax_row(const T* in, T* o, int64_t classes, T* top_out, T* total_out) {
  T top = in[0];
  for (int64_t c = 1; c < classes; ++c) top = std::max(top, in[c]);
  T total = 0;
  for (int64_t c = 0; c < classes; ++c) {
    o[c] = std::exp(in[c] - top);
    total += o[c];
  }
  for (int64_t c = 0; c < classes; ++c) o[c] /= total;
  *top_out = top;
  *total_out = total;
}

// softmax over the last dim of [rows, classes]
template <class T>
void softmax(const T* x, T* out, int64_t rows, int64_t classes) {
  T top, total;
  for (int64_t r = 0; r < rows; ++r) softmax_row(x + r * classes, out + r * classes, classes,
                                                 &top, &total);
}

// softmax_with_cross_entropy, hard labels: Softmax as above, Loss[r] = -log(Softmax[r, label])
// (0 for ignore_index); log-softmax computed as x - max - log(sum) for accuracy
template <class T>
void softmax_cross_entropy(const T* logits, const int64_t* label, T* softmax_out, T* loss,
                           int64_t rows, int64_t classes, int64_t ignore_index) {
  T top, total;
  for (int64_t r = 0; r < rows; ++r) {
    const T* in = logits + r * classes;
    softmax_row(in, softmax_out + r * classes, classes, &top, &total);
    const int64_t k = label[r];
    loss[r] = k == ignore_index ? T(0) : -(in[k] - top - std::log(total));
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
    if (k == ignore_index) {
      for (int64_t c = 0; c < classes; ++c) d[c] = 0;
      continue;
    }
    const T g = dloss[r];
    for (int64_t c = 0; c < classes; ++c) d[c] = s[c] * g;
    d[k] -= g;
  }
}

// --- convolution, pooling, batch norm (NCHW, inference) -----------------------------------------
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
      const T* xg = x + (n * C + g * cg) * H * W;
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            T* col = cols + ((c * kh + i) * kw + j) * spots;
            for (int64_t oy = 0; oy < oh; ++oy) {
              const int64_t y = oy * sh - pt + i * dh;
              for (int64_t ox = 0; ox < ow; ++ox) {
                const int64_t xx = ox * sw - pl + j * dw;
                col[oy * ow + ox] = (y >= 0 && y < H && xx >= 0 && xx < W)
                                        ? xg[(c * H + y) * W + xx] : T(0);
              }
            }
          }
      gemm(false, false, mg, spots, rows, w + g * mg * rows, cols,
           out + (n * M + g * mg) * spots);
    }
}

// pool2d, max or average over kh x kw windows starting at o*s - pad_before (Paddle's
// windows; positions outside X are skipped). Average divides by the positions inside X
// (exclusive) or by the whole kh x kw window (not exclusive), as Fluid 1.8 does.
template <class T>
void pool2d(const T* x, T* out, int64_t NC, int64_t H, int64_t W, int64_t kh, int64_t kw,
            int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t pt, int64_t pl, bool is_max,
            bool exclusive) {
  for (int64_t p = 0; p < NC; ++p) {
    const T* plane = x + p * H * W;
    for (int64_t oy = 0; oy < oh; ++oy) {
      const int64_t y0 = oy * sh - pt, y1 = std::min(y0 + kh, H + pt);
      for (int64_t ox = 0; ox < ow; ++ox) {
        const int64_t x0 = ox * sw - pl, x1 = std::min(x0 + kw, W + pl);
        T best = -INFINITY, total = 0;
        for (int64_t y = std::max(y0, int64_t(0)); y < std::min(y1, H); ++y)
          for (int64_t xx = std::max(x0, int64_t(0)); xx < std::min(x1, W); ++xx) {
            const T v = plane[y * W + xx];
            best = v > best ? v : best;
            total += v;
          }
        T count = exclusive ? T((std::min(y1, H) - std::max(y0, int64_t(0))) *
                                (std::min(x1, W) - std::max(x0, int64_t(0))))
                            : T(kh * kw);
        out[(p * oh + oy) * ow + ox] = is_max ? best : total / count;
      }
    }
  }
}

// batch_norm with the running statistics: Y = (X - Mean) * (Scale / sqrt(Variance + eps))
// + Bias per channel of [N, C, spots]
template <class T>
void batch_norm_inference(const T* x, const T* scale, const T* bias, const T* mean,
                          const T* variance, T* y, int64_t N, int64_t C, int64_t spots,
                          T epsilon) {
  for (int64_t c = 0; c < C; ++c) {
    const T inv_std = T(1) / std::sqrt(variance[c] + epsilon);
    const T k = inv_std * (scale ? scale[c] : T(1)), b = bias ? bias[c] : T(0), mu = mean[c];
    for (int64_t n = 0; n < N; ++n) {
      const T* in = x + (n * C + c) * spots;
      T* o = y + (n * C + c) * spots;
      for (int64_t i = 0; i < spots; ++i) o[i] = (in[i] - mu) * k + b;
    }
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
