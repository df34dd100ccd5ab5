// The pieces elementwise formulas are written with, shared by both targets. The code
// generator renders an op's formula (its record's expression, ops/expr.py) once, as a
// lambda both compilers take: math functions are called unqualified (exp, log1p, rint...:
// <cmath>'s float and double overloads on the host, CUDA's in device code), and what no
// library spells the way every target means it is a helper here.
#pragma once

#ifndef __CUDACC_RTC__  // (NVRTC, which CuPy compiles with, has the math built in)
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
  return a > T(0) ? a + log1p(exp(-a)) : log1p(exp(a));
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
