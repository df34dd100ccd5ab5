// The kernels of the LoD, tensor-array and loop ops over the values of
// fluid_native_values.h, each the interpreter's kernel (fluid_nb/ops: lod_ops.py,
// array_ops.py, sequence.py), for both targets: the LoD, rank tables and arrays are host
// bookkeeping, and the elements are touched only through the primitives the including
// header defines (memory_copy, memory_zero, add_into, write_value, read_value,
// transpose_matrix), on the host or on a GPU.
#pragma once

namespace fluid_native {

// --- values in and out --------------------------------------------------------------------
template <class T>
void feed(Tensor<T>& t, const Exchange& e) {
  t.view(static_cast<T*>(e.data), e.dims, (int)e.rank);
  t.lod.resize(e.lod_levels);
  for (int64_t k = 0; k < e.lod_levels; ++k) t.lod[k].assign(e.lod[k], e.lod[k] + e.lod_sizes[k]);
}

template <class T>
void fetch(const Tensor<T>& t, Exchange& e) {
  e.data = t.data;
  e.rank = t.rank;
  for (int k = 0; k < t.rank; ++k) e.dims[k] = t.dims[k];
  e.lod_levels = std::min<int64_t>((int64_t)t.lod.size(), kMaxLodLevels);
  for (int64_t k = 0; k < e.lod_levels; ++k) {
    e.lod[k] = t.lod[k].data();
    e.lod_sizes[k] = (int64_t)t.lod[k].size();
  }
  e.initialised = t.initialised;
}

template <class T>
void fetch(const TensorArray<T>& a, ArrayExchange& e) {
  std::vector<Exchange>& items = const_cast<TensorArray<T>&>(a).exported;
  items.resize(a.size);
  for (int64_t i = 0; i < a.size; ++i) fetch(a[i], items[i]);
  e.size = a.size;
  e.items = items.data();
}

inline void fetch(const RankTable& t, ArrayExchange& e) {
  std::vector<Exchange>& items = const_cast<RankTable&>(t).exported;
  items.assign(2, Exchange());
  for (int k = 0; k < 2; ++k) {
    const std::vector<int64_t>& values = k ? t.length : t.index;
    items[k].data = const_cast<int64_t*>(values.data());
    items[k].rank = 1;
    items[k].dims[0] = (int64_t)values.size();
    items[k].initialised = t.initialised;
  }
  items[0].lod_levels = std::min<int64_t>((int64_t)t.coarse.size(), kMaxLodLevels);
  for (int64_t k = 0; k < items[0].lod_levels; ++k) {
    items[0].lod[k] = t.coarse[k].data();
    items[0].lod_sizes[k] = (int64_t)t.coarse[k].size();
  }
  e.size = 2;
  e.items = items.data();
}

// to = from (its dims, values and LoD); an uninitialised `from` leaves `to` without a value
template <class T>
void copy_tensor(const Tensor<T>& from, Tensor<T>& to) {
  if (&from == &to) return;
  if (!from.initialised) {
    to.clear();
    to.lod = from.lod;
    return;
  }
  to.resize_like(from);
  memory_copy(to.data, from.data, sizeof(T) * from.numel());
  to.lod = from.lod;
}

template <class T>
void require_value(const Tensor<T>& t, const char* slot) {
  if (!t.initialised)
    fail(kInvalidArgument, "input '%s' expected an initialised LoDTensor, but received an "
         "empty tensor", slot);
}

// X and Y of an elementwise op that the generator saw as one shape, run-time dims included
template <class T, class U>
void same_dims(const Tensor<T>& x, const Tensor<U>& y) {
  bool same = x.rank == y.rank;
  for (int k = 0; same && k < x.rank; ++k) same = x.dims[k] == y.dims[k];
  if (!same)
    fail(kInvalidArgument, "input 'Y' expected the dims of X %s, but received %s",
         dims_text(x.dims, x.rank).text, dims_text(y.dims, y.rank).text);
}

inline bool condition(const Tensor<bool>& c) { return scalar_of(c, "input 'Condition'"); }

template <class T>
int64_t index_of(const Tensor<T>& i) {
  return (int64_t)scalar_of(i, "input 'I'");
}

// --- zeros, sums ------------------------------------------------------------------------------
template <class T>
void zeros_like(const Tensor<T>& x, Tensor<T>& out) {
  if (!x.initialised) {
    out.clear();
    return;
  }
  out.resize_like(x);
  memory_zero(out.data, sizeof(T) * out.numel());
  out.lod = x.lod;
}

template <class T>
void zeros_like(const TensorArray<T>& x, TensorArray<T>& out) {
  if (&x == &out) {
    for (int64_t i = 0; i < x.size; ++i)
      if (out[i].initialised) memory_zero(out[i].data, sizeof(T) * out[i].numel());
    return;
  }
  out.reset();
  for (int64_t i = 0; i < x.size; ++i) zeros_like(x[i], out.grow_to(i));
}

// sum: the initialised, non-empty inputs added in order (X[0] + X[1], then each other one),
// Out taking the first one's LoD
template <class T>
void sum(std::initializer_list<const Tensor<T>*> xs, Tensor<T>& out) {
  const Tensor<T>* first = nullptr;
  bool aliased = false;
  for (const Tensor<T>* x : xs) {
    aliased = aliased || x == &out;
    if (!first && x->initialised && x->numel()) first = x;
  }
  if (!first)
    fail(kInvalidArgument, "input X expected at least one initialised tensor, but received none "
                           "initialised");
  const int64_t count = first->numel();
  Lod lod = first->lod;
  if (aliased) {
    // Out is one of the inputs: keep its values while it takes its own storage
    out.resize(first->dims, first->rank, first == &out);
  } else {
    out.resize_like(*first);
  }
  bool started = false;
  for (const Tensor<T>* x : xs) {
    if (!x->initialised || !x->numel()) continue;
    if (x->numel() != count)
      fail(kInvalidArgument, "input X expected tensors of %lld elements (as the first), but "
           "received %s", (long long)count, dims_text(x->dims, x->rank).text);
    const T* a = x == &out ? out.data : x->data;
    if (!started) {
      if (a != out.data) memory_copy(out.data, a, sizeof(T) * count);
      started = true;
    } else {
      add_into(out.data, a, count);
    }
  }
  out.lod = std::move(lod);
}

// the same, item by item, for tensor arrays (gradients meeting in a while loop)
template <class T>
void sum(std::initializer_list<const TensorArray<T>*> xs, TensorArray<T>& out) {
  int64_t size = 0;
  for (const TensorArray<T>* x : xs) size = std::max(size, x->size);
  std::vector<Tensor<T>> items(size);
  for (int64_t i = 0; i < size; ++i) {
    bool any = false;
    for (const TensorArray<T>* x : xs) any = any || (i < x->size && (*x)[i].initialised);
    if (!any) continue;
    std::vector<const Tensor<T>*> parts;
    for (const TensorArray<T>* x : xs)
      if (i < x->size) parts.push_back(&(*x)[i]);
    Tensor<T>& total = items[i];
    bool started = false;
    for (const Tensor<T>* part : parts) {
      if (!part->initialised) continue;
      if (!started) {
        copy_tensor(*part, total);
        started = true;
      } else {
        add_into(total.data, part->data, total.numel());
      }
    }
  }
  out.reset();
  for (int64_t i = 0; i < size; ++i) {
    Tensor<T>& item = out.grow_to(i);
    if (items[i].initialised) copy_tensor(items[i], item);
  }
}

// while_grad: one step's gradient added into the total over the steps (the first one
// copied), as the interpreter's: total = g[T-1], then total += g[t] for t = T-2 ... 0
template <class T>
void accumulate(const Tensor<T>& value, Tensor<T>& total, bool& started) {
  if (!value.initialised) return;
  if (!started) {
    copy_tensor(value, total);
    started = true;
    return;
  }
  if (value.numel() != total.numel())
    fail(kInvalidArgument, "a step's gradient expected %s (as the later steps'), but received "
         "%s", dims_text(total.dims, total.rank).text, dims_text(value.dims, value.rank).text);
  add_into(total.data, value.data, total.numel());
}

// out = the transpose of the matrix x [rows, cols] (a parameter's, made once for a loop of
// products with it transposed: a plain product on the transpose is the faster kernel)
template <class T>
void transpose(const Tensor<T>& x, int64_t rows, int64_t cols, Tensor<T>& out) {
  out.resize({cols, rows});
  transpose_matrix(x.data, rows, cols, out.data);
}

// --- lod_rank_table, max_sequence_len ---------------------------------------------------------
template <class T>
void lod_rank_table(const Tensor<T>& x, int64_t level, RankTable& table) {
  require_value(x, "X");
  if (level >= (int64_t)x.lod.size())
    fail(kInvalidArgument, "attribute 'level' expected in [0, %lld) (the LoD depth of X), but "
         "received %lld", (long long)x.lod.size(), (long long)level);
  const std::vector<int64_t>& offsets = x.lod[level];
  const int64_t n = (int64_t)offsets.size() - 1;
  table.index.resize(n);
  table.length.resize(n);
  for (int64_t i = 0; i < n; ++i) table.index[i] = i;
  std::stable_sort(table.index.begin(), table.index.end(), [&](int64_t a, int64_t b) {
    return offsets[a + 1] - offsets[a] > offsets[b + 1] - offsets[b];
  });
  for (int64_t p = 0; p < n; ++p) table.length[p] = offsets[table.index[p] + 1] - offsets[table.index[p]];
  table.coarse.assign(x.lod.begin(), x.lod.begin() + level);
  table.initialised = true;
}

inline const RankTable& rank_table(const RankTable& table) {
  if (!table.initialised)
    fail(kInvalidArgument, "input 'RankTable' expected a LoDRankTable (made by lod_rank_table), "
                           "but received none");
  return table;
}

inline void max_sequence_len(const RankTable& table, Tensor<int64_t>& out) {
  rank_table(table);
  out.resize({1});
  write_value(out.data, table.size() ? table.length[0] : int64_t(0));
  out.lod.clear();
}

// --- lod_tensor_to_array / array_to_lod_tensor (steps of rows) ----------------------------------
// the offsets of the sequences the table ranks in X's rows: X's own level when it has no
// LoD below it; for X without LoD (a gradient), the table's lengths
template <class T>
const std::vector<int64_t>& ranked_offsets(const Tensor<T>& x, const RankTable& table,
                                           std::vector<int64_t>& made) {
  const int64_t level = table.level();
  if ((int64_t)x.lod.size() == level + 1) return x.lod[level];
  if ((int64_t)x.lod.size() > level + 1)
    fail(kUnimplemented, "input 'X' expected rows under the ranked LoD level (%lld) in "
         "compiled code, but received %lld LoD levels", (long long)level,
         (long long)x.lod.size());
  if (x.lod.empty() || x.lod == table.coarse) {
    std::vector<int64_t> lengths(table.size());
    for (int64_t p = 0; p < table.size(); ++p) lengths[table.index[p]] = table.length[p];
    made.assign(1, 0);
    for (int64_t n : lengths) made.push_back(made.back() + n);
    if (x.rank && made.back() == x.dims[0]) return made;
  }
  fail(kInvalidArgument, "input 'X' expected a LoDTensor with at least %lld LoD levels (the "
       "rank table's level %lld + 1), but received %lld levels with %lld rows",
       (long long)level + 1, (long long)level, (long long)x.lod.size(),
       (long long)(x.rank ? x.dims[0] : 0));
}

// Out[t] = row t of every sequence longer than t, in rank order
template <class T>
void lod_tensor_to_array(const Tensor<T>& x, const RankTable& table, TensorArray<T>& out) {
  require_value(x, "X");
  rank_table(table);
  std::vector<int64_t> made;
  const std::vector<int64_t>& offsets = ranked_offsets(x, table, made);
  const int64_t steps = table.size() ? table.length[0] : 0, row = x.row_size();
  out.reset();
  int64_t dims[kMaxRank];
  for (int k = 0; k < x.rank; ++k) dims[k] = x.dims[k];
  for (int64_t t = 0; t < steps; ++t) {
    const int64_t n = table.batch_size_at(t);
    Tensor<T>& item = out.grow_to(t);
    dims[0] = n;
    item.resize(dims, x.rank);
    for (int64_t p = 0; p < n; ++p)
      memory_copy(item.data + p * row, x.data + (offsets[table.index[p]] + t) * row,
                  sizeof(T) * row);
  }
}

// the inverse: sequence i (in input order) is its rank position's row of X[0], X[1], ...;
// Out's LoD is the table's coarse levels and the sequence lengths
template <class T>
void array_to_lod_tensor(const TensorArray<T>& x, const RankTable& table, Tensor<T>& out) {
  rank_table(table);
  if (!x.size)
    fail(kInvalidArgument, "input 'X' expected a non-empty LoDTensorArray, but received an empty "
                           "array");
  const Tensor<T>& first = x[0];
  if (!first.initialised)
    fail(kInvalidArgument, "X[0] expected an initialised LoDTensor, but received an empty tensor");
  const int64_t row = first.row_size();
  for (int64_t t = 0; t < x.size; ++t) {
    const Tensor<T>& step = x[t];
    bool same = step.initialised && step.rank == first.rank;
    for (int k = 1; same && k < first.rank; ++k) same = step.dims[k] == first.dims[k];
    if (!same)
      fail(kInvalidArgument, "X[%lld] expected dims [-1] + %s as X[0], but received %s",
           (long long)t, dims_text(first.dims + 1, first.rank - 1).text,
           step.initialised ? dims_text(step.dims, step.rank).text : "none");
    if (!step.lod.empty())
      fail(kUnimplemented, "X[%lld] expected rows without LoD in compiled code, but received "
           "a LoD of %lld levels", (long long)t, (long long)step.lod.size());
    if (step.dims[0] < table.batch_size_at(t))
      fail(kUnimplemented, "X[%lld] expected a row for each of the %lld sequences running at "
           "that step, but received %lld", (long long)t, (long long)table.batch_size_at(t),
           (long long)step.dims[0]);
  }
  if (table.size() && table.length[0] > x.size)
    fail(kInvalidArgument, "input 'X' expected at least %lld steps (a sequence's length in "
         "RankTable), but received %lld", (long long)table.length[0], (long long)x.size);
  const int64_t n = table.size();
  std::vector<int64_t> position(n);
  for (int64_t p = 0; p < n; ++p) position[table.index[p]] = p;
  out.lod = table.coarse;
  out.lod.emplace_back(1, 0);
  std::vector<int64_t>& offsets = out.lod.back();
  for (int64_t i = 0; i < n; ++i) offsets.push_back(offsets.back() + table.length[position[i]]);
  int64_t dims[kMaxRank];
  for (int k = 0; k < first.rank; ++k) dims[k] = first.dims[k];
  dims[0] = offsets.back();
  out.resize(dims, first.rank);
  T* to = out.data;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t p = position[i];
    for (int64_t t = 0; t < table.length[p]; ++t, to += row)
      memory_copy(to, x[t].data + p * row, sizeof(T) * row);
  }
}

// --- tensor arrays ------------------------------------------------------------------------------
// Out = X[offset]; past the end Out is left as it was, as in the interpreter
template <class T>
void read_from_array(const TensorArray<T>& x, int64_t offset, Tensor<T>& out) {
  if (offset < 0 || offset >= x.size) return;
  out.share(x[offset]);
}

template <class T>
void write_to_array(const Tensor<T>& x, int64_t offset, TensorArray<T>& out) {
  if (offset < 0)
    fail(kInvalidArgument, "input 'I' expected >= 0, but received %lld", (long long)offset);
  out.grow_to(offset).share(x);
}

// --- shrink_rnn_memory and its gradient -----------------------------------------------------------
// Out = the first k rows of X (k sequences of a one-level LoD), k = the batch of step `step`
template <class T>
void shrink_rnn_memory(const Tensor<T>& x, const RankTable& table, int64_t step, Tensor<T>& out) {
  require_value(x, "X");
  rank_table(table);
  const int64_t keep = table.batch_size_at(step);
  int64_t height = keep;
  Lod lod;
  if (!x.lod.empty() && (int64_t)x.lod[0].size() > keep) {
    if (x.lod.size() > 1)
      fail(kUnimplemented, "input 'X' expected at most one LoD level in compiled code, but "
           "received %lld", (long long)x.lod.size());
    lod.emplace_back(x.lod[0].begin(), x.lod[0].begin() + keep + 1);
    height = lod[0].back();
  }
  height = std::min(height, x.rank ? x.dims[0] : 0);
  out.share(x);  // its first rows: the same elements
  out.dims[0] = height;
  out.lod = std::move(lod);
}

// X@GRAD = Out@GRAD in its first rows, zeros below (all zeros without Out@GRAD)
template <class T>
void shrink_rnn_memory_grad(const Tensor<T>& x, const Tensor<T>* dout, Tensor<T>& dx) {
  require_value(x, "X");
  if (dout && dout->initialised && dout->rank == x.rank && dout->numel() == x.numel()) {
    dx.share(*dout);  // nothing was cut at this step
    dx.lod = x.lod;
    return;
  }
  dx.resize_like(x);
  const int64_t total = dx.numel();
  int64_t given = 0;
  if (dout && dout->initialised) {
    given = dout->numel();
    if (given > total)
      fail(kInvalidArgument, "input 'Out@GRAD' expected at most the rows of X %s, but "
           "received %s", dims_text(x.dims, x.rank).text, dims_text(dout->dims, dout->rank).text);
    memory_copy(dx.data, dout->data, sizeof(T) * given);
  }
  memory_zero(dx.data + given, sizeof(T) * (total - given));
  dx.lod = x.lod;
}

// --- fill_constant_batch_size_like ---------------------------------------------------------------
// the size Out takes from Input: its sequences (the last LoD level) when it has LoD and the
// dim is 0, else the dim
template <class T>
int64_t batch_size_of(const Tensor<T>& input, int64_t dim) {
  require_value(input, "Input");
  if (!input.lod.empty() && dim == 0) return (int64_t)input.lod.back().size() - 1;
  return input.dims[dim];
}

template <class T>
const std::vector<int64_t>& sequence_offsets(const Tensor<T>& x, const char* slot) {
  require_value(x, slot);
  if (x.lod.empty())
    fail(kInvalidArgument, "input '%s' expected a LoDTensor with LoD, but received a tensor "
         "without LoD", slot);
  const std::vector<int64_t>& offsets = x.lod.back();
  const int64_t rows = x.rank ? x.dims[0] : 0;
  if (offsets.back() != rows)
    fail(kInvalidArgument, "input '%s' last LoD offset expected %lld (its number of rows), "
         "but received %lld", slot, (long long)rows, (long long)offsets.back());
  return offsets;
}

enum PoolType { kPoolAverage = 0, kPoolSum, kPoolSqrt, kPoolLast, kPoolFirst, kPoolMax };

}  // namespace fluid_native
