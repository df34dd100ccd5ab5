// A single-threaded float matrix product for the small and middling products of training
// steps (a 64-row batch through a few hundred units, a recurrent step's [32, 128] x
// [128, 128]). For those a threaded BLAS spends more time handing the work to its threads
// and waiting for them than multiplying, and more so on a machine whose cores are busy; a
// product this small runs faster on the calling thread. Large products still go to BLAS
// (fluid_native.h picks by size, kOwnGemmLimit).
//
// The method is the usual one: a 6 x 16 tile of C kept in twelve 8-float registers while
// the kernel runs down K in blocks of kKc (two FMAs per row and step), reading six values
// of op(A) and 16 of op(B) per step. B is read in place where its rows run along N, and a
// transposed A where its columns do (a weight gradient's X^T); an untransposed A is packed
// into 6-row slivers, k-major, and a transposed B, or a last panel of fewer than 16
// columns, into zero-padded 16-column panels. A sliver of fewer than 6 rows runs a kernel
// of as many rows, so a recurrent step whose batch has shrunk to a few sequences costs
// what its rows cost, not a whole tile's.
// The AVX2 + FMA kernels are chosen at run time when the CPU has them; otherwise a plain
// loop over the same operands (any CPU, any compiler). Products too small to pack go
// their own ways: a dot product per value for few columns, and without FMA a loop along
// B's rows.
#pragma once

#include <stdint.h>
#include <string.h>

#include <stdlib.h>

#include <algorithm>

// (FLUID_GEMM_PORTABLE: the portable kernels only, as a CPU without AVX2 and FMA runs them)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(FLUID_GEMM_PORTABLE)
#define FLUID_GEMM_X86 1
#endif

// the runtime library defines sgemm for the programs that link it; a program built alone
// (a standalone binary, the CUDA host code) has its own inline copy
#ifdef FLUID_NATIVE_RUNTIME_LIBRARY
#define FLUID_GEMM_ENTRY __attribute__((visibility("default")))
#else
#define FLUID_GEMM_ENTRY inline
#endif

namespace fluid_native {
namespace own_gemm {

constexpr int64_t kMr = 6, kNr = 16, kKc = 256, kMc = 72, kNc = 2048;
// products of at most this many multiply-adds are plain loops (no packing)
constexpr int64_t kTiny = 4096;
// and of at most this many run here rather than in BLAS: about 40 us on one core, where a
// threaded BLAS's hand-off and wait are no longer small beside the work (a recurrent
// step's [32, 128] x [128, 128] is half of it; a [64, 784] x [784, 200] ten times)
constexpr int64_t kOwnGemmLimit = int64_t(1) << 20;

#if defined(FLUID_NATIVE_PRECOMPILED) && !defined(FLUID_NATIVE_RUNTIME_LIBRARY)
// compiled once, in the runtime library the program links (fluid_native_runtime.cc)
void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
           const float* B, float* C, bool accumulate);
#else
// a growing buffer whose data starts on a cache line, so that a 16-float panel row is one
// line and no load of the kernel splits across two
struct Scratch {
  float* data = nullptr;
  int64_t size = 0;
  ~Scratch() { free(data); }
  float* take(int64_t count) {
    if (count > size) {
      free(data);
      size = count;
      data = static_cast<float*>(aligned_alloc(64, (count * sizeof(float) + 63) / 64 * 64));
    }
    return data;
  }
};

// A[i0 + i, p0 + p] for i < mc, p < kc as kMr-row slivers, k-major (sliver s at
// s * kMr * kc); A is [M, K] (lda K). The rows past mc of a last, short sliver are left
// as they were: its kernel (one of as many rows) does not read them.
inline void pack_a(const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
                   int64_t kc, float* out) {
  for (int64_t i = 0; i < mc; i += kMr, out += kMr * kc) {
    const int64_t rows = std::min(kMr, mc - i);
    const float* src = A + (i0 + i) * lda + p0;
    for (int64_t p = 0; p < kc; ++p)  // the rows read side by side, written in order
      for (int64_t r = 0; r < rows; ++r) out[p * kMr + r] = src[r * lda + p];
  }
}

// op(B)[p0 + p, j0 + j] for p < kc, j < nc as kNr-column panels, k-major (panel q at
// q * kNr * kc), columns past nc zero; B is [K, N] (ldb N) or, transposed, [N, K] (ldb K)
inline void pack_b(bool trans, const float* B, int64_t ldb, int64_t p0, int64_t kc,
                   int64_t j0, int64_t nc, float* out) {
  for (int64_t j = 0; j < nc; j += kNr, out += kNr * kc) {
    const int64_t cols = std::min(kNr, nc - j);
    if (trans) {  // column c of the panel is row j0 + j + c of B's storage
      const float* rows[kNr];
      for (int64_t c = 0; c < kNr; ++c)
        rows[c] = B + (j0 + j + std::min(c, cols - 1)) * ldb + p0;
      for (int64_t p = 0; p < kc; ++p) {  // one panel row at a time, written in order
        float* o = out + p * kNr;
        for (int64_t c = 0; c < kNr; ++c) o[c] = c < cols ? rows[c][p] : 0.0f;
      }
      continue;
    }
    for (int64_t p = 0; p < kc; ++p) {
      const float* src = B + (p0 + p) * ldb + j0 + j;
      float* o = out + p * kNr;
      int64_t c = 0;
      for (; c < cols; ++c) o[c] = src[c];
      for (; c < kNr; ++c) o[c] = 0.0f;
    }
  }
}

// a finished tile into C: its first rows x cols, added to C (accumulate) or in its place
inline void store_tile(const float* tile, float* C, int64_t ldc, int64_t rows, int64_t cols,
                       bool accumulate) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      C[r * ldc + c] = accumulate ? C[r * ldc + c] + tile[r * kNr + c] : tile[r * kNr + c];
}

// the portable kernel: C tile (+)= op(A)'s rows [rows, kc] x 16 columns of op(B). Step p
// of the rows is a + p * a_step (a packed sliver, a_step kMr, or a transposed A in place,
// a_step lda); of the columns b + p * ldb (B in place, or a packed panel with ldb kNr).
inline void kernel_plain(int64_t kc, const float* a, int64_t a_step, const float* b,
                         int64_t ldb, float* C, int64_t ldc, int64_t rows, int64_t cols,
                         bool accumulate) {
  float tile[kMr * kNr] = {};
  for (int64_t p = 0; p < kc; ++p)
    for (int64_t r = 0; r < rows; ++r) {
      const float x = a[p * a_step + r];
      for (int64_t c = 0; c < kNr; ++c) tile[r * kNr + c] += x * b[p * ldb + c];
    }
  store_tile(tile, C, ldc, rows, cols, accumulate);
}

#ifdef FLUID_GEMM_X86
// eight floats in a register, loaded and stored at any float's address (GCC's vector
// extension: no intrinsics header, which would double the time a build takes)
typedef float float8 __attribute__((vector_size(32), aligned(4)));

// the AVX2 + FMA kernel for a sliver of Rows rows: the tile in 2 x Rows registers (named
// one by one: an array of them is kept in memory by the compiler); the sliver's padding
// rows are not multiplied, so a product of few rows costs what its rows cost
#define FLUID_GEMM_ROW(r, lo, hi)                                      \
  if constexpr (Rows > r) {                                            \
    const float x = a[r];                                              \
    const float8 xs = {x, x, x, x, x, x, x, x};                        \
    lo = __builtin_ia32_vfmaddps256(xs, b0, lo);                       \
    hi = __builtin_ia32_vfmaddps256(xs, b1, hi);                       \
  }

template <int Rows>
__attribute__((target("avx2,fma"))) void kernel_fma(int64_t kc, const float* a,
                                                   int64_t a_step, const float* b,
                                                   int64_t ldb, float* C,
                                                   int64_t ldc, int64_t cols,
                                                   bool accumulate) {
  float8 c00 = {}, c01 = {}, c10 = {}, c11 = {}, c20 = {}, c21 = {}, c30 = {}, c31 = {},
         c40 = {}, c41 = {}, c50 = {}, c51 = {};
  for (int64_t p = 0; p < kc; ++p, a += a_step, b += ldb) {
    const float8 b0 = *reinterpret_cast<const float8*>(b);
    const float8 b1 = *reinterpret_cast<const float8*>(b + 8);
    FLUID_GEMM_ROW(0, c00, c01)
    FLUID_GEMM_ROW(1, c10, c11)
    FLUID_GEMM_ROW(2, c20, c21)
    FLUID_GEMM_ROW(3, c30, c31)
    FLUID_GEMM_ROW(4, c40, c41)
    FLUID_GEMM_ROW(5, c50, c51)
  }
  const float8 tile[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21},
                               {c30, c31}, {c40, c41}, {c50, c51}};
  if (cols == kNr) {  // whole rows: straight into C
    for (int64_t r = 0; r < Rows; ++r) {
      float8* low = reinterpret_cast<float8*>(C + r * ldc);
      float8* high = reinterpret_cast<float8*>(C + r * ldc + 8);
      *low = accumulate ? *low + tile[r][0] : tile[r][0];
      *high = accumulate ? *high + tile[r][1] : tile[r][1];
    }
    return;
  }
  float spill[kMr * kNr];
  for (int64_t r = 0; r < Rows; ++r) {
    *reinterpret_cast<float8*>(spill + r * kNr) = tile[r][0];
    *reinterpret_cast<float8*>(spill + r * kNr + 8) = tile[r][1];
  }
  store_tile(spill, C, ldc, Rows, cols, accumulate);
}
#undef FLUID_GEMM_ROW

inline void kernel_fma_rows(int64_t kc, const float* a, int64_t a_step, const float* b,
                            int64_t ldb, float* C, int64_t ldc, int64_t rows, int64_t cols,
                            bool accumulate) {
  switch (rows) {
    case 6: return kernel_fma<6>(kc, a, a_step, b, ldb, C, ldc, cols, accumulate);
    case 5: return kernel_fma<5>(kc, a, a_step, b, ldb, C, ldc, cols, accumulate);
    case 4: return kernel_fma<4>(kc, a, a_step, b, ldb, C, ldc, cols, accumulate);
    case 3: return kernel_fma<3>(kc, a, a_step, b, ldb, C, ldc, cols, accumulate);
    case 2: return kernel_fma<2>(kc, a, a_step, b, ldb, C, ldc, cols, accumulate);
    default: return kernel_fma<1>(kc, a, a_step, b, ldb, C, ldc, cols, accumulate);
  }
}

inline bool has_fma() {
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return yes;
}
#endif

// C[M, N] = op(A) op(B) (+ C when accumulate), row-major, on the calling thread
FLUID_GEMM_ENTRY void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                  const float* A, const float* B, float* C, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M * N; ++i) C[i] = 0.0f;
    return;
  }
  const int64_t lda = trans_a ? M : K, ldb = trans_b ? K : N;
  bool fma = false;
#ifdef FLUID_GEMM_X86
  fma = has_fma();
#endif
  // A tiny product of few columns: a dot product each. Packing would cost more than the
  // products, but for the FMA kernels from 8 columns on: they take a [16, 16] x [16, 8]
  // in a quarter of the dot products' time, though half their panel is padding.
  if (M * N * K <= kTiny && N < (fma ? kNr / 2 : kNr)) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        float total = 0.0f;
        for (int64_t p = 0; p < K; ++p)
          total += (trans_a ? A[p * lda + i] : A[i * lda + p]) *
                   (trans_b ? B[j * ldb + p] : B[p * ldb + j]);
        C[i * N + j] = accumulate ? C[i * N + j] + total : total;
      }
    return;
  }
  if (M * N * K <= kTiny && !fma) {
    // without the FMA kernels, a row of C at a time, as the sum over p of A[i, p] B[p, :]:
    // a loop along B's rows that vectorises (an attention's [16, 16] products); a
    // transposed B is turned into rows first. (With them, packing pays even here: an
    // attention's [16, 16] x [16, 16] takes 0.16-0.23 us packed, 0.9-1.1 us this way.)
    float rows_b[kTiny], row[kTiny];
    const float* b = B;
    int64_t b_step = ldb;
    if (trans_b) {
      for (int64_t p = 0; p < K; ++p)
        for (int64_t j = 0; j < N; ++j) rows_b[p * N + j] = B[j * ldb + p];
      b = rows_b, b_step = N;
    }
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) row[j] = 0.0f;
      for (int64_t p = 0; p < K; ++p) {
        const float a = trans_a ? A[p * lda + i] : A[i * lda + p];
        const float* bp = b + p * b_step;
        for (int64_t j = 0; j < N; ++j) row[j] += a * bp[j];
      }
      float* c = C + i * N;
      for (int64_t j = 0; j < N; ++j) c[j] = accumulate ? c[j] + row[j] : row[j];
    }
    return;
  }
  void (*kernel)(int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t,
                 int64_t, int64_t, bool) = kernel_plain;
#ifdef FLUID_GEMM_X86
  if (fma) kernel = kernel_fma_rows;
#endif
  thread_local Scratch scratch_a, scratch_b;
  for (int64_t jc = 0; jc < N; jc += kNc) {
    const int64_t nc = std::min(kNc, N - jc);
    // B's whole 16-column panels are read in place when its rows run along N (the
    // kernel's loads are rows of B): only a transposed B and a last, partial panel are
    // packed. A product of a few rows, as a recurrent step's, would otherwise spend
    // longer packing B than multiplying.
    const int64_t in_place = trans_b ? 0 : nc / kNr * kNr;
    for (int64_t pc = 0; pc < K; pc += kKc) {
      const int64_t kc = std::min(kKc, K - pc);
      const bool add = accumulate || pc > 0;
      float* packed_b = nullptr;
      if (in_place < nc) {
        packed_b = scratch_b.take((nc - in_place + kNr - 1) / kNr * kNr * kc);
        pack_b(trans_b, B, ldb, pc, kc, jc + in_place, nc - in_place, packed_b);
      }
      for (int64_t ic = 0; ic < M; ic += kMc) {
        const int64_t mc = std::min(kMc, M - ic);
        // a transposed A is read in place (a sliver's step p is kMr values side by side,
        // the next step lda further on); otherwise its slivers are packed
        const float* a = A + pc * lda + ic;
        int64_t a_step = lda, sliver = 1;
        if (!trans_a) {
          float* packed_a = scratch_a.take((mc + kMr - 1) / kMr * kMr * kc);
          pack_a(A, lda, ic, mc, pc, kc, packed_a);
          a = packed_a, a_step = kMr, sliver = kc;
        }
        for (int64_t jr = 0; jr < nc; jr += kNr) {
          const float* b = jr < in_place ? B + pc * ldb + jc + jr
                                         : packed_b + (jr - in_place) * kc;
          const int64_t b_step = jr < in_place ? ldb : kNr;
          for (int64_t ir = 0; ir < mc; ir += kMr)
            kernel(kc, a + ir * sliver, a_step, b, b_step, C + (ic + ir) * N + jc + jr, N,
                   std::min(kMr, mc - ir), std::min(kNr, nc - jr), add);
        }
      }
    }
  }
}

#endif

}  // namespace own_gemm
}  // namespace fluid_native
