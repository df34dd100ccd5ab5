// The pieces elementwise formulas are written with, shared by both targets. The code
// generator renders an op's formula (its record's expression, ops/expr.py) once, as a
// lambda both compilers take: math functions are called unqualified (exp, log1p, rint...:
// <cmath>'s float and double overloads on the host, CUDA's in device code), and what no
// library spells the way every target means it is a helper here.
#pragma once

#ifndef __CUDACC_RTC__  // (NVRTC, which CuPy compiles with, has the math built in)
#include <stdint.h>
#include <string.h>

#include <cmath>
#endif

#ifdef __CUDACC__
#define FLUID_HD __host__ __device__
#define FLUID_LAMBDA [] __device__
#else
#define FLUID_HD
#define FLUID_LAMBDA []
#endif

namespace fluid_native {

#ifndef __CUDACC__
using std::acos;
using std::asin;
using std::atan;
using std::ceil;
using std::cos;
using std::erf;
using std::exp;
using std::fabs;
using std::floor;
using std::log;
using std::log1p;
using std::rint;
using std::sin;
using std::sqrt;
#endif

// e^x as the formulas, softmax and the losses call it. On the host a float's is written so
// that a loop over it vectorises (glibc's expf does not: a softmax over a vocabulary spends
// its time there), within 1 ulp of the correctly rounded value over every float (NumPy's
// own float32 exp is within 2): x clamped to [-104, 89], where the result has rounded to 0
// or overflowed; x = n ln2 + r, Cephes' expf polynomial in r; 2^n as two powers of two that
// stay normal, so that a result below FLT_MIN rounds once, to its subnormal; a NaN stays
// NaN. Both targets' doubles, and CUDA's floats, take the library's exp.
#if defined(__CUDACC__)
FLUID_HD inline float exp_value(float x) { return expf(x); }
FLUID_HD inline double exp_value(double x) { return exp(x); }
#else
inline float exp_value(float x) {
  const float c = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  const float n = std::floor(c * 1.44269504088896341f + 0.5f);
  const float r = (c - n * 0.693359375f) + n * 2.12194440e-4f;
  const float p = ((((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r +
                      4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f) *
                       r * r + r) + 1.0f;
  const int32_t k = int32_t(n), half = k >> 1;  // k in [-150, 129]
  const int32_t low = (half + 127) << 23, high = (k - half + 127) << 23;
  float low_power, high_power;
  memcpy(&low_power, &low, sizeof low_power);
  memcpy(&high_power, &high, sizeof high_power);
  const float y = p * low_power * high_power;
  return x != x ? x : y;
}
inline double exp_value(double x) { return std::exp(x); }
#endif

// max and min that give NaN when either operand is NaN, as NumPy's maximum and minimum
// (std::max passes a NaN through or not by argument order; fmax drops it)
template <class T>
FLUID_HD inline T max_value(T a, T b) { return (a > b || a != a) ? a : b; }
template <class T>
FLUID_HD inline T min_value(T a, T b) { return (a < b || a != a) ? a : b; }

// -1, 0 or 1; a NaN stays NaN, as NumPy's sign
template <class T>
FLUID_HD inline T sign_value(T a) { return a > T(0) ? T(1) : a < T(0) ? T(-1) : a; }

// ln(1 + e^a) that never overflows: exp only ever sees a non-positive number
template <class T>
FLUID_HD inline T softplus_value(T a) {
  return a > T(0) ? a + log1p(exp_value(-a)) : log1p(exp_value(a));
}

// sgd on one element: Param -= LearningRate * Grad (the host loop, the CUDA kernel and the
// interpreter's fused host step, ops/_fused_updates.cc, all call it)
template <class T>
FLUID_HD inline void sgd_step(T& param, T grad, T rate) { param -= rate * grad; }

// momentum on one element (the interpreter's formula and order; the host loop and the CUDA
// kernel both call it):
//   g = Grad * rescale (+ l2 * Param with l2_decay);  Velocity = mu * Velocity + g
//   Param -= (g + mu * Velocity) * lr with Nesterov, else lr * Velocity
template <class T>
FLUID_HD inline void momentum_step(T& param, T grad, T& velocity, T rate, T mu, T rescale,
                                   bool l2_decay, T l2, bool nesterov) {
  T g = grad * rescale;
  if (l2_decay) g = g + l2 * param;
  const T v = velocity * mu + g;
  velocity = v;
  param -= nesterov ? (g + v * mu) * rate : rate * v;
}

// adagrad on one element (the interpreter's formula and order; the host loop and the CUDA
// kernel both call it): Moment += g^2;  Param -= rate * g / (sqrt(Moment) + eps)
template <class T>
FLUID_HD inline void adagrad_step(T& param, T grad, T& moment, T rate, T eps) {
  moment = moment + grad * grad;
  param -= rate * grad / (sqrt(moment) + eps);
}

// rmsprop on one element (the interpreter's formula and order; the host loop and the CUDA
// kernel both call it), with keep = 1 - decay:
//   MeanSquare = decay * MeanSquare + keep * g^2
//   centered:   MeanGrad = decay * MeanGrad + keep * g;  d = sqrt(MeanSquare - MeanGrad^2 + eps)
//   otherwise:  d = sqrt(MeanSquare + eps)
//   Moment = momentum * Moment + rate * g / d;  Param -= Moment
template <class T>
FLUID_HD inline void rmsprop_step(T& param, T grad, T& mean_square, T* mean_grad, T& moment,
                                  T rate, T decay, T keep, T eps, T momentum) {
  const T ms = decay * mean_square + keep * grad * grad;
  mean_square = ms;
  T d;
  if (mean_grad) {
    const T mg = decay * *mean_grad + keep * grad;
    *mean_grad = mg;
    d = sqrt(ms - mg * mg + eps);
  } else {
    d = sqrt(ms + eps);
  }
  const T m = momentum * moment + rate * grad / d;
  moment = m;
  param -= m;
}

// adam on one element, Paddle's formula in the parameter's type and the interpreter's
// order of operations (the host loop, the CUDA kernel and the interpreter's fused host
// step, ops/_fused_updates.cc, all call it; rate and eps_hat are worked out once per op):
//   Moment1 = beta1 * Moment1 + (1 - beta1) * g;  Moment2 = beta2 * Moment2 + (1 - beta2) * g^2
//   Param -= Moment1 / (sqrt(Moment2) + eps_hat) * rate
template <class T>
FLUID_HD inline void adam_step(T& param, T grad, T& m1, T& m2, T beta1, T beta2, T rate,
                               T eps_hat) {
  const T one = 1;
  m1 = m1 * beta1 + grad * (one - beta1);
  m2 = m2 * beta2 + grad * grad * (one - beta2);
  param -= m1 / (sqrt(m2) + eps_hat) * rate;
}

}  // namespace fluid_native
