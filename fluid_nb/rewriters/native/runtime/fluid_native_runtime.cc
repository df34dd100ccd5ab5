// The runtime library: the parts of the host runtime no program changes, compiled once per
// compiler (at install, or into the build cache on first use) and linked by every program
// built for a Python process (build.py): the single-threaded matrix product
// (fluid_native_gemm.h) and the template instances fluid_native_instances.h lists. A
// program's build then parses these headers but optimises only its own functions.
#define FLUID_NATIVE_RUNTIME_LIBRARY 1

#include "fluid_native_dynamic.h"

#include <chrono>
#include <vector>

// 1 where the BLAS sgemm at `blas` multiplies this machine's small products faster than
// the product of fluid_native_gemm.h, by 5% or more: an OpenBLAS with small-matrix kernels
// for its core (AVX-512's) runs them unpacked on the calling thread, which the packed 6 x 16
// tiles here do not beat; without them, a small product to BLAS is packed or handed to its
// threads, and the product here wins. `wide_sizes`: the BLAS takes 64-bit sizes (ILP64),
// else int (this library is built for one width; the BLAS NumPy loaded may have the
// other). Timed once a process, by the loader (build.py), on a recurrent step's product, a
// weight gradient added in, and a middling square, each way in turn, the best of nine;
// about half a millisecond.
namespace {

template <class Int>
void call_sgemm(void* blas, bool trans_a, Int M, Int N, Int K, const float* A, const float* B,
                float beta, float* C) {
  typedef void (*sgemm)(int, int, int, Int, Int, Int, float, const float*, Int, const float*,
                        Int, float, float*, Int);
  reinterpret_cast<sgemm>(blas)(fluid_native::kRowMajor,
                                trans_a ? fluid_native::kTrans : fluid_native::kNoTrans,
                                fluid_native::kNoTrans, M, N, K, 1.0f, A, trans_a ? M : K, B, N,
                                beta, C, N);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int fluid_small_gemm_choice(void* blas,
                                                                              int wide_sizes) {
  struct Shape {
    bool trans_a;
    int M, N, K;
    bool accumulate;
  };
  const Shape shapes[] = {{false, 32, 128, 128, false}, {true, 128, 128, 32, true},
                          {false, 64, 96, 96, false}};
  std::vector<float> A(128 * 128, 0.25f), B(128 * 128, 0.5f), C(128 * 128, 0.0f);
  double own = 0, by_blas = 0;
  for (const Shape& s : shapes) {
    double best[2] = {1e30, 1e30};
    for (int round = 0; round < 11; ++round)
      for (int way = 0; way < 2; ++way) {
        const float beta = s.accumulate ? 1.0f : 0.0f;
        const auto start = std::chrono::steady_clock::now();
        if (way == 0)
          fluid_native::own_gemm::sgemm(s.trans_a, false, s.M, s.N, s.K, A.data(), B.data(),
                                        C.data(), s.accumulate);
        else if (wide_sizes)
          call_sgemm<int64_t>(blas, s.trans_a, s.M, s.N, s.K, A.data(), B.data(), beta,
                              C.data());
        else
          call_sgemm<int>(blas, s.trans_a, s.M, s.N, s.K, A.data(), B.data(), beta, C.data());
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                          start).count();
        if (round >= 2) best[way] = std::min(best[way], took);  // two rounds to warm up
      }
    own += best[0], by_blas += best[1];
  }
  return by_blas < 0.95 * own ? 1 : 0;
}
