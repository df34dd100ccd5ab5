// The host runtime of compiled programs whose sizes change from run to run: the values of
// fluid_native_values.h in host memory, the kernels of the LoD, tensor-array and loop ops
// (fluid_native_lod.h, over the primitives here) and sequence_pool's. The dense kernels of
// fluid_native.h take their pointers and sizes read from the tensors.
#pragma once

#include <stdlib.h>

#include "fluid_native.h"

namespace fluid_native {

inline void* memory_alloc(size_t bytes) {
  void* p = aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  return p;
}
inline void memory_free(void* p) { free(p); }
inline void memory_copy(void* to, const void* from, size_t bytes) {
  if (bytes && to != from) memcpy(to, from, bytes);
}
inline void memory_move(void* to, const void* from, size_t bytes) {
  if (bytes && to != from) memmove(to, from, bytes);
}
inline void memory_zero(void* to, size_t bytes) {
  if (bytes) memset(to, 0, bytes);
}
template <class T>
T read_value(const T* p) { return *p; }
template <class T>
void write_value(T* p, T value) { *p = value; }
// out [cols, rows] = the transpose of x [rows, cols]
template <class T>
void transpose_matrix(const T* x, int64_t rows, int64_t cols, T* out) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) out[j * rows + i] = x[i * cols + j];
}

}  // namespace fluid_native

#include "fluid_native_values.h"
#include "fluid_native_lod.h"

namespace fluid_native {

// --- sequence_pool and its gradient (PoolType: fluid_native_lod.h) ------------------------------
// Out[i] = the pooled rows of sequence i (pad_value for an empty one); MaxIndex (when
// given): the absolute row of each maximum (MAX; the first on ties), -1 elsewhere
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
  if (max_index) {
    max_index->resize(dims, x.rank);
    for (int64_t i = 0, m = max_index->numel(); i < m; ++i) max_index->data[i] = -1;
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t start = offsets[i], end = offsets[i + 1];
    T* o = out.data + i * row;
    if (start == end) {
      for (int64_t c = 0; c < row; ++c) o[c] = pad_value;
      continue;
    }
    const T* seq = x.data + start * row;
    if (type == kPoolLast || type == kPoolFirst) {
      memory_copy(o, type == kPoolLast ? seq + (end - start - 1) * row : seq, sizeof(T) * row);
    } else if (type == kPoolMax) {
      for (int64_t c = 0; c < row; ++c) {
        T best = seq[c];
        int64_t at = 0;
        for (int64_t r = 1; r < end - start; ++r)
          if (seq[r * row + c] > best) best = seq[r * row + c], at = r;
        o[c] = best;
        if (max_index) max_index->data[i * row + c] = (int32_t)(start + at);
      }
    } else {  // the rows summed in order, as NumPy sums axis 0
      memory_copy(o, seq, sizeof(T) * row);
      for (int64_t r = 1; r < end - start; ++r)
        for (int64_t c = 0; c < row; ++c) o[c] += seq[r * row + c];
      const int64_t length = end - start;
      if (type == kPoolAverage)
        for (int64_t c = 0; c < row; ++c) o[c] /= T(length);
      else if (type == kPoolSqrt)  // the interpreter divides in double
        for (int64_t c = 0; c < row; ++c) o[c] = T(double(o[c]) / std::sqrt(double(length)));
    }
  }
  out.lod = std::move(lod);
  if (max_index) max_index->lod.clear();
}

// X@GRAD: each sequence's dOut sent back to its rows: all of them (SUM; / len for AVERAGE,
// / sqrt(len) for SQRT), the picked one (LAST, FIRST) or each column's maximum (MAX)
template <class T>
void sequence_pool_grad(const Tensor<T>& x, const Tensor<int32_t>* max_index,
                        const Tensor<T>& dout, int type, Tensor<T>& dx) {
  const std::vector<int64_t>& offsets = sequence_offsets(x, "X");
  require_value(dout, "Out@GRAD");
  const int64_t n = (int64_t)offsets.size() - 1, row = x.row_size();
  if (dout.numel() < n * row)
    fail(kInvalidArgument, "input 'Out@GRAD' expected a row per sequence of X (%lld), but "
         "received %s", (long long)n, dims_text(dout.dims, dout.rank).text);
  dx.resize_like(x);
  memset(dx.data, 0, sizeof(T) * dx.numel());
  if (type == kPoolMax) {
    if (!max_index || !max_index->initialised)
      fail(kInvalidArgument, "input 'MaxIndex' expected a tensor for pooltype MAX, but received "
                             "none");
    for (int64_t i = 0; i < n * row; ++i) {
      const int64_t at = max_index->data[i];
      if (at >= 0) dx.data[at * row + i % row] = dout.data[i];
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t start = offsets[i], end = offsets[i + 1], length = end - start;
      if (!length) continue;
      const T* d = dout.data + i * row;
      if (type == kPoolLast || type == kPoolFirst) {
        memory_copy(dx.data + (type == kPoolLast ? end - 1 : start) * row, d, sizeof(T) * row);
        continue;
      }
      const T scale = type == kPoolAverage ? T(length)
                      : type == kPoolSqrt ? T(std::sqrt(double(length))) : T(1);
      for (int64_t r = start; r < end; ++r)
        for (int64_t c = 0; c < row; ++c)
          dx.data[r * row + c] = type == kPoolSum ? d[c] : d[c] / scale;
    }
  }
  dx.lod = x.lod;
}

}  // namespace fluid_native

#if defined(FLUID_NATIVE_PRECOMPILED) || defined(FLUID_NATIVE_RUNTIME_LIBRARY)
#include "fluid_native_instances.h"
#endif
