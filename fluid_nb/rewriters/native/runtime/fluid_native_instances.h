// The instances of the host runtime's templates that the runtime library holds
// (fluid_native_runtime.cc): compiled there once, declared `extern template` to the
// programs that link it (FLUID_NATIVE_PRECOMPILED), so a program's build instantiates and
// optimises only its own code. These are the LoD, tensor-array and loop kernels and the
// feed and fetch of values: bookkeeping and row copies, whose sizes are read at run time
// anyway (nothing a program's literals could specialise). An instance not listed here
// (another element type) is made in the program as before.
#pragma once

// each element type's data movement
#define FLUID_NATIVE_MOVES(X, T) \
  X(void feed<T>(Tensor<T>&, const Exchange&)) \
  X(void fetch<T>(const Tensor<T>&, Exchange&)) \
  X(void fetch<T>(const TensorArray<T>&, ArrayExchange&)) \
  X(void copy_tensor<T>(const Tensor<T>&, Tensor<T>&)) \
  X(void zeros_like<T>(const Tensor<T>&, Tensor<T>&)) \
  X(void zeros_like<T>(const TensorArray<T>&, TensorArray<T>&)) \
  X(void lod_rank_table<T>(const Tensor<T>&, int64_t, RankTable&)) \
  X(void lod_tensor_to_array<T>(const Tensor<T>&, const RankTable&, TensorArray<T>&)) \
  X(void array_to_lod_tensor<T>(const TensorArray<T>&, const RankTable&, Tensor<T>&)) \
  X(void read_from_array<T>(const TensorArray<T>&, int64_t, Tensor<T>&)) \
  X(void write_to_array<T>(const Tensor<T>&, int64_t, TensorArray<T>&)) \
  X(void shrink_rnn_memory<T>(const Tensor<T>&, const RankTable&, int64_t, Tensor<T>&)) \
  X(T scalar_of<T>(const Tensor<T>&, const char*))

// and the floating types' sums
#define FLUID_NATIVE_SUMS(X, T) \
  X(void sum<T>(std::initializer_list<const Tensor<T>*>, Tensor<T>&)) \
  X(void sum<T>(std::initializer_list<const TensorArray<T>*>, TensorArray<T>&)) \
  X(void accumulate<T>(const Tensor<T>&, Tensor<T>&, bool&)) \
  X(void shrink_rnn_memory_grad<T>(const Tensor<T>&, const Tensor<T>*, Tensor<T>&)) \
  X(void sequence_pool<T>(const Tensor<T>&, int, T, Tensor<T>&, Tensor<int32_t>*)) \
  X(void sequence_pool_grad<T>(const Tensor<T>&, const Tensor<int32_t>*, const Tensor<T>&, \
                               int, Tensor<T>&))

#ifdef FLUID_NATIVE_RUNTIME_LIBRARY
#define FLUID_NATIVE_INSTANCE(...) template __VA_ARGS__;
#else
#define FLUID_NATIVE_INSTANCE(...) extern template __VA_ARGS__;
#endif

namespace fluid_native {
FLUID_NATIVE_MOVES(FLUID_NATIVE_INSTANCE, float)
FLUID_NATIVE_MOVES(FLUID_NATIVE_INSTANCE, double)
FLUID_NATIVE_MOVES(FLUID_NATIVE_INSTANCE, int64_t)
FLUID_NATIVE_MOVES(FLUID_NATIVE_INSTANCE, int32_t)
FLUID_NATIVE_MOVES(FLUID_NATIVE_INSTANCE, bool)
FLUID_NATIVE_SUMS(FLUID_NATIVE_INSTANCE, float)
FLUID_NATIVE_SUMS(FLUID_NATIVE_INSTANCE, double)
}  // namespace fluid_native
