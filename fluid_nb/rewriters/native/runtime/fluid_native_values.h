// The run-time values of compiled programs whose sizes change from run to run (a LoD batch,
// a while loop): a tensor that carries its dims and LoD, a tensor array, a LoD rank table,
// the step scopes a while loop keeps for while_grad, the record a tensor crosses to and
// from Python in, and the error a kernel raises. Shared by both targets: the header that
// includes this one first defines where a tensor's elements live (memory_alloc,
// memory_free, memory_copy, memory_move: host memory, or a GPU's).
//
// A tensor's buffer is kept from run to run, so a batch like the last one allocates
// nothing; tensors share buffers rather than copy them where the interpreter shares arrays
// (a read from a tensor array, a write to one, a memory's first rows); a feed or a
// parameter is a view of memory Python holds (never written, except a parameter an
// optimizer op updates in place, as in the interpreter's scope).
#pragma once

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <deque>
#include <initializer_list>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace fluid_native {

const int kMaxRank = 8;
const int kMaxLodLevels = 8;

// offset-based LoD, as the interpreter's: level k holds offsets into level k + 1 (the last
// level's into rows)
typedef std::vector<std::vector<int64_t>> Lod;

// a failure at run time: the code picks the Python error (errors.py) it becomes
enum ErrorCode { kInvalidArgument = 1, kOutOfRange = 2, kUnimplemented = 3 };

struct Error {
  int code;
  std::string message;
};

// a failure, its message formatted as printf's: out of line, so that the kernels that
// check their inputs stay small
[[noreturn]] __attribute__((noinline, cold, format(printf, 2, 3))) inline void fail(
    int code, const char* format, ...) {
  char text[768];
  va_list args;
  va_start(args, format);
  vsnprintf(text, sizeof text, format, args);
  va_end(args);
  throw Error{code, text};
}

// dims as the interpreter prints a shape: [2, 3]
struct DimsText {
  char text[200];
};
__attribute__((noinline, cold)) inline DimsText dims_text(const int64_t* dims, int rank) {
  DimsText out;
  int at = snprintf(out.text, sizeof out.text, "[");
  for (int k = 0; k < rank && at < (int)sizeof out.text; ++k)
    at += snprintf(out.text + at, sizeof out.text - at, k ? ", %lld" : "%lld", (long long)dims[k]);
  if (at < (int)sizeof out.text) snprintf(out.text + at, sizeof out.text - at, "]");
  return out;
}

// the elements a tensor holds, shared by the tensors that view them (a read from a tensor
// array, the first rows of a memory): the count of those holding it
template <class T>
struct Buffer {
  T* data;
  int64_t capacity;
  int64_t refs;
};

// A tensor has value semantics, as the interpreter's: a kernel writing one (resize) gets
// elements no other tensor sees (its own buffer again when nobody shares it, else a new
// one), so a tensor that shares a buffer (share) keeps the values it was given.
template <class T>
struct Tensor {
  T* data = nullptr;
  int64_t dims[kMaxRank] = {};
  int rank = 0;
  bool initialised = false;  // holds a value (an uninitialised one is the interpreter's None)
  Lod lod;
  Buffer<T>* buffer = nullptr;  // where data lies (null: memory Python holds, a feed's)
  bool viewer = false;          // the buffer came from another tensor (share)

  Tensor() = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  Tensor(Tensor&& other) noexcept { *this = std::move(other); }
  Tensor& operator=(Tensor&& other) noexcept {
    std::swap(data, other.data);
    std::swap(dims, other.dims);
    std::swap(rank, other.rank);
    std::swap(initialised, other.initialised);
    std::swap(lod, other.lod);
    std::swap(buffer, other.buffer);
    std::swap(viewer, other.viewer);
    return *this;
  }
  ~Tensor() { release(); }

  int64_t numel() const {
    int64_t n = 1;
    for (int k = 0; k < rank; ++k) n *= dims[k];
    return n;
  }
  // the elements of one row (of dims 1..)
  int64_t row_size() const {
    int64_t n = 1;
    for (int k = 1; k < rank; ++k) n *= dims[k];
    return n;
  }

  // dims `d` (rank `r`) over elements of its own; the values are undefined, unless `keep`:
  // then the first elements are those it held (an op writing its input in place)
  void resize(const int64_t* d, int r, bool keep = false) {
    const T* before = data;
    const int64_t kept = keep && initialised ? std::min(numel(), count_of(d, r)) : 0;
    for (int k = 0; k < r; ++k) dims[k] = d[k];
    rank = r;
    const int64_t count = numel();
    if (buffer && buffer->refs == 1 && buffer->capacity >= count) {
      if (kept && before != buffer->data) memory_move(buffer->data, before, sizeof(T) * kept);
      data = buffer->data;
    } else {
      // grown by half again, so that batches of varying sizes soon stop reallocating
      const int64_t held = buffer && buffer->refs == 1 ? buffer->capacity : 0;
      const int64_t room = std::max<int64_t>(std::max(count, held + held / 2), 1);
      Buffer<T>* fresh = new Buffer<T>{static_cast<T*>(memory_alloc(sizeof(T) * room)), room, 1};
      if (kept) memory_copy(fresh->data, before, sizeof(T) * kept);
      release();
      buffer = fresh;
      data = fresh->data;
    }
    viewer = false;
    initialised = true;
  }
  void resize(std::initializer_list<int64_t> d, bool keep = false) {
    resize(d.begin(), (int)d.size(), keep);
  }
  template <class U>
  void resize_like(const Tensor<U>& other, bool keep = false) {
    resize(other.dims, other.rank, keep);
  }

  // the value of `other` (its elements from `offset` on, its dims and LoD), sharing its
  // elements instead of copying them
  void share(const Tensor& other, int64_t offset = 0) {
    if (&other == this) return;
    if (other.buffer) ++other.buffer->refs;
    release();
    buffer = other.buffer;
    data = other.data ? other.data + offset : nullptr;
    for (int k = 0; k < other.rank; ++k) dims[k] = other.dims[k];
    rank = other.rank;
    initialised = other.initialised;
    lod = other.lod;
    viewer = buffer != nullptr;
  }

  // a view of `values` (memory Python holds, never freed here) with dims `d`
  void view(T* values, const int64_t* d, int r) {
    release();
    viewer = false;
    data = values;
    for (int k = 0; k < r; ++k) dims[k] = d[k];
    rank = r;
    initialised = true;
  }
  void view(T* values, std::initializer_list<int64_t> d) { view(values, d.begin(), (int)d.size()); }

  // the interpreter's None: no value, no LoD (a buffer it made is kept for its next
  // value, one it was given let go)
  void clear() {
    initialised = false;
    lod.clear();
    drop_shared();
  }
  // let go of a buffer another tensor made (the one that made it then finds it unshared,
  // and writes its next value in place)
  void drop_shared() {
    if (viewer) {
      release();
      data = nullptr;
      initialised = false;
      viewer = false;
    }
  }

 private:
  void release() {
    if (buffer && --buffer->refs == 0) {
      memory_free(buffer->data);
      delete buffer;
    }
    buffer = nullptr;
  }
  static int64_t count_of(const int64_t* d, int r) {
    int64_t n = 1;
    for (int k = 0; k < r; ++k) n *= d[k];
    return n;
  }
};

// a tensor crossing between Python and the compiled program (a feed in, a fetch out)
struct Exchange {
  void* data;
  int64_t rank;
  int64_t dims[kMaxRank];
  int64_t lod_levels;
  const int64_t* lod[kMaxLodLevels];
  int64_t lod_sizes[kMaxLodLevels];
  int64_t initialised;
};

// a tensor array or rank table fetched: its items as Exchanges (a rank table's: the
// sequences' indices, with its coarse LoD, then their lengths)
struct ArrayExchange {
  int64_t size;
  const Exchange* items;
};

template <class T>
struct TensorArray {
  std::deque<Tensor<T>> items;  // a deque: growing it keeps references to its items valid
  int64_t size = 0;             // the items in use; those past it keep their storage
  std::vector<Exchange> exported;  // the items as last fetched

  void reset() {
    for (int64_t i = 0; i < size; ++i) items[i].clear();
    size = 0;
  }
  void drop_shared() {
    for (Tensor<T>& item : items) item.drop_shared();
  }
  // item i for writing: the array grows to i + 1 items (the new ones uninitialised)
  Tensor<T>& grow_to(int64_t i) {
    while ((int64_t)items.size() <= i) items.emplace_back();
    for (int64_t j = size; j <= i; ++j) items[j].clear();
    size = std::max(size, i + 1);
    return items[i];
  }
  Tensor<T>& operator[](int64_t i) { return items[i]; }
  const Tensor<T>& operator[](int64_t i) const { return items[i]; }
};

// the sequences of one LoD level ranked by length, longest first (a stable sort), and the
// LoD levels above that level: the interpreter's LoDRankTable
struct RankTable {
  std::vector<int64_t> index, length;
  Lod coarse;
  bool initialised = false;
  std::vector<Exchange> exported;  // as last fetched

  int64_t size() const { return (int64_t)index.size(); }
  int64_t level() const { return (int64_t)coarse.size(); }
  // how many sequences are longer than `step`: the batch of time step `step`
  int64_t batch_size_at(int64_t step) const {
    return std::lower_bound(length.begin(), length.end(), step,
                            [](int64_t a, int64_t b) { return a > b; }) - length.begin();
  }
  void clear() {
    index.clear();
    length.clear();
    coarse.clear();
    initialised = false;
  }
};

// the records of a while loop's steps, kept for while_grad (records past `count` keep
// their tensors' storage for the next run)
template <class R>
struct StepScopes {
  std::deque<R> records;
  int64_t count = 0;

  R& next() {
    if (count == (int64_t)records.size()) records.emplace_back();
    return records[count++];
  }
  void drop_shared() {
    for (R& record : records) record.drop_shared();
  }
};


template <class T>
void share_lod(const Tensor<T>& from, Tensor<T>& to) {
  if (&from != &to) to.lod = from.lod;
}

template <class T, class U>
void share_lod(const Tensor<T>& from, Tensor<U>& to) {
  to.lod = from.lod;
}

// the value of an index or condition tensor of one element, read on the host
template <class T>
T scalar_of(const Tensor<T>& t, const char* what) {
  if (!t.initialised || t.numel() != 1)
    fail(kInvalidArgument, "%s expected a tensor of one element, but received %s", what,
         t.initialised ? dims_text(t.dims, t.rank).text : "none");
  return read_value(t.data);
}

}  // namespace fluid_native
