// The per-row and per-window pieces of the kernels, written once for both targets: the host
// loops of fluid_native.h call them row by row, the CUDA kernels of fluid_native_cuda.cuh
// one row (or window) a thread. Math is called unqualified, as in fluid_native_maps.h.
#pragma once

#include <stdint.h>

#include <algorithm>

#include "fluid_native_maps.h"

namespace fluid_native {

// (inlined into each caller, so that each of a host kernel's clones vectorises its rows for
// its machine)
#ifdef __CUDACC__
#define FLUID_ROW_INLINE __forceinline__
#else
#define FLUID_ROW_INLINE __attribute__((always_inline)) inline
#endif

// A sum over a row kept in kLanes lanes (term c in lane c % kLanes), folded in halves at
// the end: a loop that vectorises on the host and stays in a GPU thread's registers, and
// a sum whose rounding depends on the row alone, not on the machine's vector width.
constexpr int kLanes = 16;

// A loop over the lanes unrolled whole, so that each lane's index is fixed and the lanes
// stay in registers: a fold left as a loop kept them on the stack, and a softmax row of 16
// classes spent half its time there
#if defined(__CUDACC__) || defined(__clang__)
#define FLUID_LANES_UNROLLED _Pragma("unroll")
#else
#define FLUID_LANES_UNROLLED _Pragma("GCC unroll 8")
#endif

template <class A>
FLUID_HD FLUID_ROW_INLINE A fold_lanes(A* lane) {
  FLUID_LANES_UNROLLED
  for (int width = kLanes / 2; width; width /= 2)
    FLUID_LANES_UNROLLED
    for (int l = 0; l < width; ++l) lane[l] += lane[l + width];
  return lane[0];
}

// the sum of term(c) for c < n, in type A
template <class A, class F>
FLUID_HD FLUID_ROW_INLINE A lane_sum(int64_t n, F term) {
  A lane[kLanes] = {};
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += term(c + l);
  for (int l = 0; l < kLanes; ++l)
    if (c + l < n) lane[l] += term(c + l);
  return fold_lanes(lane);
}

#ifndef __CUDACC__
// (host code: a CUDA kernel takes a line a thread, softmax_line below)
// A row's largest value and its sum, kept in kLanes lanes that are then folded in halves:
// loops that vectorise, and a sum whose rounding depends on the row alone, not on the
// machine's vector width. A NaN is the largest only as the first value (std::max's rule,
// as a single running maximum).
template <class T>
FLUID_ROW_INLINE T row_max(const T* v, int64_t n) {
  T lane[kLanes];
  for (int l = 0; l < kLanes; ++l) lane[l] = v[0];
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] = std::max(lane[l], v[c + l]);
  // the tail, lane l at a fixed index (so that the lanes stay in registers)
  for (int l = 0; l < kLanes; ++l)
    if (c + l < n) lane[l] = std::max(lane[l], v[c + l]);
  FLUID_LANES_UNROLLED
  for (int width = kLanes / 2; width; width /= 2)
    FLUID_LANES_UNROLLED
    for (int l = 0; l < width; ++l) lane[l] = std::max(lane[l], lane[l + width]);
  return lane[0];
}

template <class T>
FLUID_ROW_INLINE T row_sum(const T* v, int64_t n) {
  return lane_sum<T>(n, [v](int64_t c) { return v[c]; });
}

// one row's softmax into o: exp(x - max) / sum; returns (max, sum) for a log-softmax.
// Inlined into its callers, so that each of their clones vectorises it for its machine
// (compiled code's softmax and losses, and the interpreter's softmax: ops/_norms.cc).
template <class T>
FLUID_ROW_INLINE void softmax_row(const T* in, T* o, int64_t classes, T* top_out,
                                  T* total_out) {
  const T top = row_max(in, classes);
  for (int64_t c = 0; c < classes; ++c) o[c] = exp_value(in[c] - top);
  const T total = row_sum(o, classes);
  for (int64_t c = 0; c < classes; ++c) o[c] /= total;
  *top_out = top;
  *total_out = total;
}
#endif

// whether hard label k counts: not ignore_index and a class id. A label out of range
// counts as ignored (loss and gradient 0), as on a GPU: compiled code has no host copy to
// check it against, and must not read outside the row.
template <class L>
FLUID_HD inline bool counts(L k, int64_t classes, int64_t ignore_index) {
  return int64_t(k) != ignore_index && k >= 0 && int64_t(k) < classes;
}

// cross_entropy2 of one row of probabilities: MatchX = the label's probability, Y =
// -log(MatchX) (log 0 taken as -1e20, as Paddle), both 0 where the label does not count
template <class T, class L>
FLUID_HD inline void cross_entropy2_row(const T* x, L k, int64_t classes, int64_t ignore_index,
                                        T* y, T* match) {
  const bool keep = counts(k, classes, ignore_index);
  const T p = keep ? x[int64_t(k)] : T(0);
  if (match) *match = p;
  *y = !keep ? T(0) : p > T(0) ? -log(p) : T(1e20);
}

// softmax of n values `step` apart: exp(x - max) / sum
template <class T>
FLUID_HD inline void softmax_line(const T* in, T* o, int64_t n, int64_t step) {
  T top = in[0];
  for (int64_t c = 1; c < n; ++c) top = in[c * step] > top ? in[c * step] : top;
  for (int64_t c = 0; c < n; ++c) o[c * step] = exp_value(in[c * step] - top);
  T total = 0;
  for (int64_t c = 0; c < n; ++c) total += o[c * step];
  for (int64_t c = 0; c < n; ++c) o[c * step] /= total;
}

// its gradient on one line: dX = Out * (dOut - sum(dOut * Out))
template <class T>
FLUID_HD inline void softmax_grad_line(const T* out, const T* dout, T* dx, int64_t n,
                                       int64_t step) {
  T dot = 0;
  for (int64_t c = 0; c < n; ++c) dot += dout[c * step] * out[c * step];
  for (int64_t c = 0; c < n; ++c) dx[c * step] = out[c * step] * (dout[c * step] - dot);
}

// softmax_with_cross_entropy on one line of n logits `step` apart (the general form: any
// axis, hard or soft labels, with or without the softmax). Softmax is exp(x - max) / sum,
// or the logits themselves without it; log p is x - max - log(sum), or log x (log 0 taken
// as -1e20, as Paddle). Loss: -log p[k] for the hard label k at *hard (0 where it does not
// count), else -sum(label * log p) over the soft label line `soft` (as the logits, `step`
// apart).
template <class T, class L>
FLUID_HD inline void softmax_xent_line(const T* x, const L* hard, const T* soft, T* out,
                                       T* loss, int64_t n, int64_t step, int64_t ignore_index,
                                       bool use_softmax) {
  T top = 0, log_total = 0;
  if (use_softmax) {
    top = x[0];
    for (int64_t c = 1; c < n; ++c) top = x[c * step] > top ? x[c * step] : top;
    for (int64_t c = 0; c < n; ++c) out[c * step] = exp_value(x[c * step] - top);
    T total = 0;
    for (int64_t c = 0; c < n; ++c) total += out[c * step];
    for (int64_t c = 0; c < n; ++c) out[c * step] /= total;
    log_total = log(total);
  } else {
    for (int64_t c = 0; c < n; ++c) out[c * step] = x[c * step];
  }
  const auto log_p = [&](int64_t c) -> T {
    const T v = x[c * step];
    return use_softmax ? v - top - log_total : v > T(0) ? T(log(v)) : T(-1e20);
  };
  if (hard) {
    *loss = counts(*hard, n, ignore_index) ? -log_p(int64_t(*hard)) : T(0);
    return;
  }
  T sum = 0;
  for (int64_t c = 0; c < n; ++c) sum += soft[c * step] * log_p(c);
  *loss = -sum;
}

// its gradient on one line, g the line's dLoss: with the softmax g * (Softmax - onehot(k))
// (soft: Softmax - label), without it -g / p at k (soft: g * -label / p); a hard label
// that does not count gets 0
template <class T, class L>
FLUID_HD inline void softmax_xent_grad_line(const T* s, const L* hard, const T* soft, T g,
                                            T* d, int64_t n, int64_t step,
                                            int64_t ignore_index, bool use_softmax) {
  if (hard && !counts(*hard, n, ignore_index)) {
    for (int64_t c = 0; c < n; ++c) d[c * step] = T(0);
    return;
  }
  for (int64_t c = 0; c < n; ++c) {
    const T p = s[c * step];
    if (hard) {
      const bool hit = c == int64_t(*hard);
      d[c * step] = use_softmax ? g * (p - (hit ? T(1) : T(0))) : hit ? -g / p : T(0);
    } else {
      d[c * step] = use_softmax ? g * (p - soft[c * step]) : g * (-soft[c * step] / p);
    }
  }
}

// whether value a at index i comes before value b at index j in a top-k: larger first,
// NaN largest, ties by the lower index
template <class T>
FLUID_HD inline bool ranks_before(T a, int64_t i, T b, int64_t j) {
  const bool a_nan = a != a, b_nan = b != b;
  if (a_nan || b_nan) return a_nan && (!b_nan || i < j);
  return a > b || (a == b && i < j);
}

// the k best of a row of `size`, best first, with their indices: k passes, each the best
// not yet taken (k is small)
template <class T>
FLUID_HD inline void top_k_row(const T* in, int64_t size, int64_t k, T* out, int64_t* idx) {
  for (int64_t q = 0; q < k; ++q) {
    int64_t best = -1;
    for (int64_t i = 0; i < size; ++i) {
      bool taken = false;
      for (int64_t t = 0; t < q && !taken; ++t) taken = idx[t] == i;
      if (!taken && (best < 0 || ranks_before(in[i], i, in[best], best))) best = i;
    }
    idx[q] = best;
    out[q] = in[best];
  }
}

// the rows whose label is among their k indices
template <class L>
FLUID_HD inline int64_t accuracy_hits(const int64_t* indices, const L* label, int64_t rows,
                                      int64_t k) {
  int64_t hits = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t q = 0; q < k; ++q)
      if (indices[r * k + q] == int64_t(label[r])) {
        ++hits;
        break;
      }
  return hits;
}

// pool2d's window along one dim for output o: [a, b) inside [0, size). Paddle's windows
// start at o*s - pad_before and reach k on (clipped to size + pad, then to X); adaptive
// ones are the bins [floor(o size / out), ceil((o + 1) size / out)).
FLUID_HD inline void pool_window(int64_t o, int64_t size, int64_t k, int64_t s, int64_t pad,
                                 int64_t out, bool adaptive, int64_t& a, int64_t& b) {
  if (adaptive) {
    a = o * size / out;
    b = ((o + 1) * size + out - 1) / out;
    return;
  }
  const int64_t start = o * s - pad, stop = start + k < size + pad ? start + k : size + pad;
  a = start > 0 ? start : 0;
  b = stop < size ? stop : size;
}

// the value of one window of a plane [H, W]: max (NaN kept, as NumPy's maximum) or the
// sum over its positions divided by `count`
template <class T>
FLUID_HD inline T pool_value(const T* plane, int64_t W, int64_t ya, int64_t yb, int64_t xa,
                             int64_t xb, bool is_max, T count) {
  T best = -INFINITY, total = 0;
  for (int64_t y = ya; y < yb; ++y)
    for (int64_t xx = xa; xx < xb; ++xx) {
      const T v = plane[y * W + xx];
      best = v != v || v > best ? (best != best ? best : v) : best;
      total += v;
    }
  return is_max ? best : total / count;
}

// the place of a window's first maximum (NaN the largest, as NumPy's argmax); -1 when empty
template <class T>
FLUID_HD inline int64_t pool_first_max(const T* plane, int64_t W, int64_t ya, int64_t yb,
                                       int64_t xa, int64_t xb) {
  int64_t best = -1;
  for (int64_t y = ya; y < yb; ++y)
    for (int64_t xx = xa; xx < xb; ++xx) {
      const T v = plane[y * W + xx];
      if (best < 0 || (v != v ? plane[best] == plane[best] : v > plane[best])) best = y * W + xx;
    }
  return best;
}

// the divisor of an average window: its positions inside X (exclusive, and adaptive bins)
// or the whole kh x kw window, as Fluid 1.8
template <class T>
FLUID_HD inline T pool_count(int64_t ya, int64_t yb, int64_t xa, int64_t xb, int64_t kh,
                             int64_t kw, bool exclusive, bool adaptive) {
  return exclusive || adaptive ? T((yb - ya) * (xb - xa)) : T(kh * kw);
}

// layer_norm of one row of `right` values: its mean and biased variance (summed in double,
// in lanes); Y = (X - mean) / sqrt(variance + eps) * Scale + Bias
template <class T>
FLUID_HD FLUID_ROW_INLINE void layer_norm_row(const T* in, const T* scale, const T* bias, T* o,
                                              int64_t right, T epsilon, T* mean, T* variance) {
  const T mu = T(lane_sum<double>(right, [&](int64_t j) { return double(in[j]); }) /
                 double(right));
  const T var = T(lane_sum<double>(right, [&](int64_t j) {
                    const double d = double(in[j] - mu);
                    return d * d;
                  }) / double(right));
  const T std_dev = sqrt(var + epsilon);
  for (int64_t j = 0; j < right; ++j) {
    T v = (in[j] - mu) / std_dev;
    if (scale) v = v * scale[j];
    if (bias) v = v + bias[j];
    o[j] = v;
  }
  if (mean) *mean = mu;
  if (variance) *variance = var;
}

// its X gradient on one row, x_hat = (X - mean) / sqrt(variance + eps), g = dY * Scale:
// dX = (g - mean(g) - x_hat mean(g x_hat)) / sqrt(variance + eps)
template <class T>
FLUID_HD FLUID_ROW_INLINE void layer_norm_dx_row(const T* in, const T* d, const T* scale, T mu,
                                                 T var, T epsilon, T* o, int64_t right) {
  const T inv_std = T(1) / sqrt(var + epsilon);
  const double g_total = lane_sum<double>(right, [&](int64_t j) {
    return double(scale ? d[j] * scale[j] : d[j]);
  });
  const double gx_total = lane_sum<double>(right, [&](int64_t j) {
    const T g = scale ? d[j] * scale[j] : d[j];
    return double(g * ((in[j] - mu) * inv_std));
  });
  const T g_mean = T(g_total / double(right)), gx_mean = T(gx_total / double(right));
  for (int64_t j = 0; j < right; ++j) {
    const T g = scale ? d[j] * scale[j] : d[j];
    o[j] = inv_std * (g - g_mean - (in[j] - mu) * inv_std * gx_mean);
  }
}

#ifndef __CUDACC__
// layer_norm over the rows of X [left, right] (layer_norm_row) on the host: the compiled
// code's kernel (fluid_native.h, in clones for the machine) and the interpreter's
// (ops/_norms.cc). A GPU runs a row a thread (fluid_native_cuda.cuh).
template <class T>
FLUID_ROW_INLINE void layer_norm_rows(const T* x, const T* scale, const T* bias, T* y, T* mean,
                                      T* variance, int64_t left, int64_t right, T epsilon) {
  for (int64_t r = 0; r < left; ++r)
    layer_norm_row(x + r * right, scale, bias, y + r * right, right, epsilon,
                   mean ? mean + r : mean, variance ? variance + r : variance);
}

// its gradient: dX row by row (layer_norm_dx_row); Scale@GRAD = sum over rows of
// dY x_hat, Bias@GRAD = sum over rows of dY (each absent where its pointer is null)
template <class T>
FLUID_ROW_INLINE void layer_norm_grad_rows(const T* x, const T* scale, const T* mean,
                                           const T* variance, const T* dy, T* dx, T* dscale,
                                           T* dbias, int64_t left, int64_t right, T epsilon) {
  for (int64_t j = 0; dscale && j < right; ++j) dscale[j] = T(0);
  for (int64_t j = 0; dbias && j < right; ++j) dbias[j] = T(0);
  for (int64_t r = 0; r < left; ++r) {
    const T* in = x + r * right;
    const T* d = dy + r * right;
    const T inv_std = T(1) / sqrt(variance[r] + epsilon), mu = mean[r];
    if (dscale)
      for (int64_t j = 0; j < right; ++j) dscale[j] += d[j] * ((in[j] - mu) * inv_std);
    if (dbias)
      for (int64_t j = 0; j < right; ++j) dbias[j] += d[j];
    if (dx) layer_norm_dx_row(in, d, scale, mu, variance[r], epsilon, dx + r * right, right);
  }
}
#endif

// batch_norm_grad's X gradient of one value: k dY with the running statistics (global),
// k (dY - (Bias@GRAD + x_hat Scale@GRAD) / m) with the batch's; k = Scale inv_std
template <class T>
FLUID_HD inline T batch_norm_dx(T d, T x, T mu, T inv_std, T k, T d_bias, T d_scale, int64_t m,
                                bool global_stats) {
  return global_stats ? d * k : k * (d - (d_bias + (x - mu) * inv_std * d_scale) / T(m));
}

}  // namespace fluid_native
