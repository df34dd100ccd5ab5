// The CUDA runtime of compiled programs whose sizes change from run to run: the values of
// fluid_native_values.h in device memory (the LoD, rank tables and arrays stay host
// bookkeeping, as in Paddle), the kernels of fluid_native_lod.h over the device primitives
// here, and sequence_pool's as CUDA kernels. A value the host must read (a loop's counter
// or condition, an array index) is copied from the device where it is read.
#pragma once

#include <new>
#include <stdexcept>

#include "fluid_native_cuda.cuh"

namespace fluid_native {

inline void* memory_alloc(size_t bytes) {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) throw std::bad_alloc();
  return p;
}
inline void memory_free(void* p) {
  if (p) cudaFree(p);
}
inline void memory_copy(void* to, const void* from, size_t bytes) {
  if (bytes && to != from) cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice);
}
// overlapping device ranges go through a buffer of their own
inline void memory_move(void* to, const void* from, size_t bytes) {
  if (!bytes || to == from) return;
  void* staged = memory_alloc(bytes);
  memory_copy(staged, from, bytes);
  memory_copy(to, staged, bytes);
  cudaStreamSynchronize(0);
  memory_free(staged);
}
inline void memory_zero(void* to, size_t bytes) {
  if (bytes) cudaMemsetAsync(to, 0, bytes);
}
template <class T>
T read_value(const T* p) {
  T value;
  cudaMemcpy(&value, p, sizeof(T), cudaMemcpyDeviceToHost);
  return value;
}
template <class T>
void write_value(T* p, T value) {
  cudaMemcpy(p, &value, sizeof(T), cudaMemcpyHostToDevice);
}

template <class T>
__global__ void transpose_kernel(const T* x, int64_t rows, int64_t cols, T* out) {
  FLUID_GRID_STRIDE(i, rows * cols) out[(i % cols) * rows + i / cols] = x[i];
}
// out [cols, rows] = the transpose of x [rows, cols]
template <class T>
void transpose_matrix(const T* x, int64_t rows, int64_t cols, T* out) {
  if (rows * cols) transpose_kernel<<<blocks_for(rows * cols), kThreads>>>(x, rows, cols, out);
}

}  // namespace fluid_native

#include "fluid_native_values.h"
#include "fluid_native_lod.h"

namespace fluid_native {

// --- sequence_pool and its gradient: one thread per (sequence, column) ---------------------
template <class T>
__global__ void sequence_pool_kernel(const T* x, const int64_t* offsets, int64_t n, int64_t row,
                                     int type, T pad_value, T* out, int32_t* max_index) {
  FLUID_GRID_STRIDE(i, n * row) {
    const int64_t s = i / row, c = i % row, start = offsets[s], end = offsets[s + 1];
    if (max_index) max_index[i] = -1;
    if (start == end) {
      out[i] = pad_value;
      continue;
    }
    if (type == kPoolLast || type == kPoolFirst) {
      out[i] = x[(type == kPoolLast ? end - 1 : start) * row + c];
    } else if (type == kPoolMax) {
      T best = x[start * row + c];
      int64_t at = start;
      for (int64_t r = start + 1; r < end; ++r)
        if (x[r * row + c] > best) best = x[r * row + c], at = r;
      out[i] = best;
      if (max_index) max_index[i] = (int32_t)at;
    } else {
      T total = 0;
      for (int64_t r = start; r < end; ++r) total += x[r * row + c];
      const int64_t length = end - start;
      out[i] = type == kPoolAverage ? total / T(length)
               : type == kPoolSqrt ? T(double(total) / sqrt(double(length))) : total;
    }
  }
}

// a LoD level's offsets on the device, for a kernel to read (held by the tensor that asks)
inline const int64_t* device_offsets(const std::vector<int64_t>& offsets, Tensor<int64_t>& held) {
  held.resize({(int64_t)offsets.size()});
  cudaMemcpy(held.data, offsets.data(), sizeof(int64_t) * offsets.size(), cudaMemcpyHostToDevice);
  return held.data;
}

template <class T>
void sequence_pool(const Tensor<T>& x, int type, T pad_value, Tensor<T>& out,
                   Tensor<int32_t>* max_index) {
  const std::vector<int64_t>& offsets = sequence_offsets(x, "X");
  const int64_t n = (int64_t)offsets.size() - 1, row = x.row_size();
  int64_t dims[kMaxRank];
  for (int k = 0; k < x.rank; ++k) dims[k] = x.dims[k];
  dims[0] = n;
  Lod lod(x.lod.begin(), x.lod.end() - 1);
  out.resize(dims, x.rank);
  if (max_index) max_index->resize(dims, x.rank);
  Tensor<int64_t> held;
  const int64_t* on_device = device_offsets(offsets, held);
  if (n * row)
    sequence_pool_kernel<<<blocks_for(n * row), kThreads>>>(
        x.data, on_device, n, row, type, pad_value, out.data,
        max_index ? max_index->data : (int32_t*)nullptr);
  cudaStreamSynchronize(0);  // before `held` goes
  out.lod = std::move(lod);
  if (max_index) max_index->lod.clear();
}

template <class T>
__global__ void sequence_pool_grad_kernel(const int64_t* offsets, int64_t n, int64_t row,
                                          const int32_t* max_index, const T* dout, int type,
                                          T* dx) {
  FLUID_GRID_STRIDE(i, n * row) {
    const int64_t s = i / row, c = i % row, start = offsets[s], end = offsets[s + 1];
    if (start == end) continue;
    if (type == kPoolMax) {
      if (max_index[i] >= 0) dx[max_index[i] * row + c] = dout[i];
    } else if (type == kPoolLast || type == kPoolFirst) {
      dx[(type == kPoolLast ? end - 1 : start) * row + c] = dout[i];
    } else {
      const int64_t length = end - start;
      const T scale = type == kPoolAverage ? T(length)
                      : type == kPoolSqrt ? T(sqrt(double(length))) : T(1);
      for (int64_t r = start; r < end; ++r)
        dx[r * row + c] = type == kPoolSum ? dout[i] : dout[i] / scale;
    }
  }
}

template <class T>
void sequence_pool_grad(const Tensor<T>& x, const Tensor<int32_t>* max_index,
                        const Tensor<T>& dout, int type, Tensor<T>& dx) {
  const std::vector<int64_t>& offsets = sequence_offsets(x, "X");
  require_value(dout, "Out@GRAD");
  const int64_t n = (int64_t)offsets.size() - 1, row = x.row_size();
  if (dout.numel() < n * row)
    fail(kInvalidArgument, "input 'Out@GRAD' expected a row per sequence of X (%lld), but "
         "received %s", (long long)n, dims_text(dout.dims, dout.rank).text);
  if (type == kPoolMax && (!max_index || !max_index->initialised))
    fail(kInvalidArgument, "input 'MaxIndex' expected a tensor for pooltype MAX, but received "
         "none");
  dx.resize_like(x);
  memory_zero(dx.data, sizeof(T) * dx.numel());
  Tensor<int64_t> held;
  const int64_t* on_device = device_offsets(offsets, held);
  if (n * row)
    sequence_pool_grad_kernel<<<blocks_for(n * row), kThreads>>>(
        on_device, n, row, max_index ? max_index->data : (const int32_t*)nullptr, dout.data,
        type, dx.data);
  cudaStreamSynchronize(0);
  dx.lod = x.lod;
}

}  // namespace fluid_native
