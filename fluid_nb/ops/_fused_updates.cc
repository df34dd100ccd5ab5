// The interpreter's fused optimizer updates: Adam's element update over a parameter and its
// two moments in one pass, where the NumPy formula in ops/optimizer_ops.py makes twelve
// over the arrays for the same values, and SGD's in one call, where the formula makes four
// NumPy calls. The element updates are the ones compiled code and the CUDA kernels run
// (adam_step, sgd_step: fluid_native_maps.h), in the formula's order of operations, so all
// of them give the NumPy formula's float32 and float64 values, bit for bit.
//
//   adam(param, grad, moment1, moment2, param_out, moment1_out, moment2_out,
//        beta1, beta2, rate, eps_hat)
//   sgd(param, rate, grad, in_place)
//   commit(updates)
//
// adam's inputs and outputs are C-contiguous arrays of one size and one type (float32 or
// float64), rate and eps_hat worked out by the caller. Either every output is its input
// (the op's state donated: updated in place), or param_out is the gradient (a temporary
// that dies with the update: the new parameter takes its memory) and the moments are new,
// or every output is new; an array written shares memory with no other. Anything else is
// a TypeError or ValueError naming what was expected and what came, before anything is
// written.
//
// sgd takes the arrays of a dense update as they come (NumPy arrays, Param and Grad of one
// shape and one type, float32 or float64, C-contiguous; a rate of one element of Param's
// type, or float32) and writes Param - rate * Grad over Param (in_place: the parameter is
// donated) or into a new array from NumPy's current allocator; anything else is answered
// NotImplemented, and the caller runs the NumPy formula, which gives the same values.
//
// commit writes a run's trailing updates (exec/update_commit.py), every one in place, in one
// call: each item of ``updates`` is one op's update as ops/optimizer_ops.py prepares it,
//   (0, param, grad, moment1, moment2, beta1_pow, beta2_pow, beta1, beta2, rate, eps_hat)
//   (1, param, grad, learning_rate)
//   (2, param, grad, velocity, learning_rate, mu, rescale, l2, nesterov)
//   (3, param, grad, moment, learning_rate, epsilon)
//   (4, param, grad, mean_square, mean_grad, moment, learning_rate, decay, 1 - decay,
//    epsilon, momentum)
// adam (the powers None under use_global_beta_pow, else each times its beta), sgd,
// momentum (l2 None without l2_decay), adagrad and rmsprop (mean_grad None unless
// centered), over plain arrays of one type, float32 or float64, a learning-rate array of
// one element of that type or float32 (adam's rate a scalar worked out by the caller),
// each element update the one compiled programs run (fluid_native_maps.h). Every item
// is checked before anything is written: a TypeError or ValueError names the item and
// what was expected. Then all of them are written with no Python code run in between, so
// no exception (a KeyboardInterrupt included) can leave some written and others not.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <string.h>

#include "fluid_native_maps.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// a loop bound by sqrt and division gets an AVX2 clone, picked at load time
#define FLUID_UPDATE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FLUID_UPDATE_CLONES
#endif

namespace {

// in place: each of param, m1 and m2 is read and written at the same index
template <class T>
FLUID_UPDATE_CLONES void adam_in_place(T* __restrict__ param, const T* __restrict__ grad,
                                       T* __restrict__ m1, T* __restrict__ m2,
                                       Py_ssize_t count, T beta1, T beta2, T rate,
                                       T eps_hat) {
  for (Py_ssize_t i = 0; i < count; ++i)
    fluid_native::adam_step(param[i], grad[i], m1[i], m2[i], beta1, beta2, rate, eps_hat);
}

// into new moments, and the new parameter into param_out or, kOverGrad, over the gradient
// (each element read, then written, at its own index); the other inputs are only read
template <class T, bool kOverGrad>
FLUID_UPDATE_CLONES void adam_into(const T* __restrict__ param, T* __restrict__ grad,
                                   const T* __restrict__ m1, const T* __restrict__ m2,
                                   T* __restrict__ param_out, T* __restrict__ m1_out,
                                   T* __restrict__ m2_out, Py_ssize_t count, T beta1,
                                   T beta2, T rate, T eps_hat) {
  for (Py_ssize_t i = 0; i < count; ++i) {
    T p = param[i], first = m1[i], second = m2[i];
    fluid_native::adam_step(p, grad[i], first, second, beta1, beta2, rate, eps_hat);
    (kOverGrad ? grad : param_out)[i] = p;
    m1_out[i] = first;
    m2_out[i] = second;
  }
}

// where the update writes: the state in place, the parameter over the gradient, or new
// arrays for all three
enum class Form { kInPlace, kOverGrad, kInto };

// the update over the arrays of views (param, grad, moment1, moment2, then the outputs:
// none in place, the moments' over the gradient) as elements of type T
template <class T>
void run(const Py_buffer* views, Form form, Py_ssize_t count, double beta1, double beta2,
         double rate, double eps_hat) {
  auto at = [views](int k) { return static_cast<T*>(views[k].buf); };
  if (form == Form::kInPlace)
    adam_in_place<T>(at(0), at(1), at(2), at(3), count, T(beta1), T(beta2), T(rate),
                     T(eps_hat));
  else if (form == Form::kOverGrad)  // (no param_out view: the gradient is written)
    adam_into<T, true>(at(0), at(1), at(2), at(3), nullptr, at(4), at(5), count, T(beta1),
                       T(beta2), T(rate), T(eps_hat));
  else  // (the gradient only read, through the same pointer type)
    adam_into<T, false>(at(0), at(1), at(2), at(3), at(4), at(5), at(6), count, T(beta1),
                        T(beta2), T(rate), T(eps_hat));
}

// the element type of a buffer: 'f' (float32), 'd' (float64), or 0 for any other
char element_type(const Py_buffer& view) {
  const char* format = view.format ? view.format : "B";
  if (*format == '@' || *format == '=' || *format == '<') ++format;
  if ((format[0] == 'f' && view.itemsize == 4) || (format[0] == 'd' && view.itemsize == 8))
    return format[1] == '\0' ? format[0] : 0;
  return 0;
}

bool overlap(const Py_buffer& a, const Py_buffer& b) {
  const char* x = static_cast<const char*>(a.buf);
  const char* y = static_cast<const char*>(b.buf);
  return a.len && b.len && x < y + b.len && y < x + a.len;
}

const char* kNames[] = {"param", "grad", "moment1", "moment2", "param_out", "moment1_out",
                        "moment2_out"};
constexpr int kArrays = 7;

PyObject* adam(PyObject*, PyObject* args) {
  PyObject* arrays[kArrays];
  double beta1, beta2, rate, eps_hat;
  if (!PyArg_ParseTuple(args, "OOOOOOOdddd:adam", &arrays[0], &arrays[1], &arrays[2],
                        &arrays[3], &arrays[4], &arrays[5], &arrays[6], &beta1, &beta2, &rate,
                        &eps_hat))
    return nullptr;
  // in place when every output is its input (param, moment1, moment2 -> slots 4, 5, 6);
  // over the gradient when param_out is grad: the views are then param, grad, moment1,
  // moment2, moment1_out, moment2_out
  const Form form = arrays[4] == arrays[0] && arrays[5] == arrays[2] && arrays[6] == arrays[3]
                        ? Form::kInPlace
                    : arrays[4] == arrays[1] ? Form::kOverGrad
                                             : Form::kInto;
  PyObject* viewed[kArrays];  // the distinct arrays, in the order of views
  int distinct = 0;
  for (int k = 0; k < kArrays; ++k)
    if (!(form == Form::kInPlace && k >= 4) && !(form == Form::kOverGrad && k == 4))
      viewed[distinct++] = arrays[k];
  // the name of view k (over the gradient, view 4 and 5 are the moments' outputs)
  auto name = [form](int k) { return kNames[form == Form::kOverGrad && k >= 4 ? k + 1 : k]; };
  Py_buffer views[kArrays];
  int taken = 0;
  PyObject* result = nullptr;
  // what the update writes: param, moment1 and moment2 in place; the gradient and the new
  // moments over the gradient; else the outputs
  auto written = [form](int k) {
    return k >= 4 || (form == Form::kInPlace && k != 1) || (form == Form::kOverGrad && k == 1);
  };
  for (; taken < distinct; ++taken) {
    if (PyObject_GetBuffer(viewed[taken], &views[taken],
                           PyBUF_C_CONTIGUOUS | PyBUF_FORMAT |
                               (written(taken) ? PyBUF_WRITABLE : 0)) < 0) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError,
                   "adam: %s expected a C-contiguous%s float32 or float64 array, but got %R",
                   name(taken), written(taken) ? ", writable" : "", Py_TYPE(viewed[taken]));
      goto release;
    }
  }
  {
    const char type = element_type(views[0]);
    if (!type) {
      PyErr_Format(PyExc_TypeError, "adam: param expected float32 or float64 elements, but "
                   "got format '%s'", views[0].format ? views[0].format : "B");
      goto release;
    }
    const Py_ssize_t count = views[0].len / views[0].itemsize;
    for (int k = 1; k < distinct; ++k) {
      if (element_type(views[k]) != type) {
        PyErr_Format(PyExc_TypeError, "adam: %s expected the elements of param (format "
                     "'%c'), but got format '%s'", name(k), type,
                     views[k].format ? views[k].format : "B");
        goto release;
      }
      if (views[k].len != views[0].len) {
        PyErr_Format(PyExc_ValueError, "adam: %s expected %zd elements (as param), but got "
                     "%zd", name(k), count, views[k].len / views[k].itemsize);
        goto release;
      }
    }
    // the loops write through restrict pointers: an array written may share memory with
    // no other (the inputs of an update into new arrays may share theirs: they are read)
    for (int a = 0; a < distinct; ++a)
      for (int b = a + 1; b < distinct; ++b)
        if ((written(a) || written(b)) && overlap(views[a], views[b])) {
          PyErr_Format(PyExc_ValueError, "adam: %s and %s expected separate memory (or "
                       "every output its own input, or param_out the gradient), but they "
                       "overlap", name(a), name(b));
          goto release;
        }
    Py_BEGIN_ALLOW_THREADS
    if (type == 'f')
      run<float>(views, form, count, beta1, beta2, rate, eps_hat);
    else
      run<double>(views, form, count, beta1, beta2, rate, eps_hat);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
  }
release:
  while (taken-- > 0) PyBuffer_Release(&views[taken]);
  return result;
}

template <class T>
FLUID_UPDATE_CLONES void sgd_loop(const T* __restrict__ param, const T* __restrict__ grad,
                                  T* __restrict__ out, Py_ssize_t count, T rate) {
  for (Py_ssize_t i = 0; i < count; ++i) {
    T p = param[i];
    fluid_native::sgd_step(p, grad[i], rate);
    out[i] = p;
  }
}

// in place: the gradient may be the parameter itself, each element read, then written
template <class T>
FLUID_UPDATE_CLONES void sgd_in_place(T* param, const T* grad, Py_ssize_t count, T rate) {
  for (Py_ssize_t i = 0; i < count; ++i) fluid_native::sgd_step(param[i], grad[i], rate);
}

// a plain array the loops read: an exact ndarray, C-contiguous, aligned, in native order
bool plain(PyObject* object) {
  if (!PyArray_CheckExact(object)) return false;
  PyArrayObject* array = reinterpret_cast<PyArrayObject*>(object);
  return PyArray_IS_C_CONTIGUOUS(array) && PyArray_ISALIGNED(array) &&
         PyArray_ISNOTSWAPPED(array);
}

PyObject* sgd(PyObject*, PyObject* args) {
  PyObject *param_object, *rate_object, *grad_object;
  int in_place;
  if (!PyArg_ParseTuple(args, "OOOp:sgd", &param_object, &rate_object, &grad_object,
                        &in_place))
    return nullptr;
  if (!plain(param_object) || !plain(grad_object) || !PyArray_CheckExact(rate_object))
    Py_RETURN_NOTIMPLEMENTED;
  PyArrayObject* param = reinterpret_cast<PyArrayObject*>(param_object);
  PyArrayObject* grad = reinterpret_cast<PyArrayObject*>(grad_object);
  PyArrayObject* rate_array = reinterpret_cast<PyArrayObject*>(rate_object);
  const int type = PyArray_TYPE(param);
  const int rate_type = PyArray_TYPE(rate_array);
  // a float64 rate would make NumPy's product float64 for a float32 parameter
  if ((type != NPY_FLOAT && type != NPY_DOUBLE) || PyArray_TYPE(grad) != type ||
      (rate_type != NPY_FLOAT && rate_type != type) || PyArray_SIZE(rate_array) != 1 ||
      !PyArray_ISNOTSWAPPED(rate_array) ||
      !PyArray_SAMESHAPE(param, grad))
    Py_RETURN_NOTIMPLEMENTED;
  const Py_ssize_t count = PyArray_SIZE(param);
  const char* rate_data = static_cast<const char*>(PyArray_DATA(rate_array));
  double rate;
  if (rate_type == NPY_FLOAT) {
    float value;
    memcpy(&value, rate_data, sizeof value);
    rate = value;
  } else {
    memcpy(&rate, rate_data, sizeof rate);
  }
  char* p = static_cast<char*>(PyArray_DATA(param));
  const char* g = static_cast<const char*>(PyArray_DATA(grad));
  const Py_ssize_t bytes = count * PyArray_ITEMSIZE(param);
  if (in_place) {
    // the gradient the parameter itself, or apart from it (a shifted view would read
    // elements already written)
    if (!PyArray_ISWRITEABLE(param) || (g != p && g < p + bytes && p < g + bytes))
      Py_RETURN_NOTIMPLEMENTED;
    if (type == NPY_FLOAT)
      sgd_in_place(reinterpret_cast<float*>(p), reinterpret_cast<const float*>(g), count,
                   static_cast<float>(rate));
    else
      sgd_in_place(reinterpret_cast<double*>(p), reinterpret_cast<const double*>(g), count,
                   rate);
    Py_INCREF(param_object);
    return param_object;
  }
  PyObject* out = PyArray_NewLikeArray(param, NPY_CORDER, nullptr, 0);
  if (!out) return nullptr;
  char* o = static_cast<char*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(out)));
  if (type == NPY_FLOAT)
    sgd_loop(reinterpret_cast<const float*>(p), reinterpret_cast<const float*>(g),
             reinterpret_cast<float*>(o), count, static_cast<float>(rate));
  else
    sgd_loop(reinterpret_cast<const double*>(p), reinterpret_cast<const double*>(g),
             reinterpret_cast<double*>(o), count, rate);
  return out;
}

// --- commit: a run's trailing updates, all in place, in one call ---------------------------
enum Kind { kAdam = 0, kSgd = 1, kMomentum = 2, kAdagrad = 3, kRmsprop = 4, kKinds = 5 };

// what an update's tuple holds after its kind: its arrays, then its scalars
struct Layout {
  const char* name;
  int arrays;
  const char* array_names[6];
  int rate;       // the learning-rate array's index, or -1 (adam's rate is a scalar)
  int optional;   // bit k: array k may be None
  int single;     // bit k: array k holds one element
  int read_only;  // bit k: array k is only read
  int scalars;
};

const Layout kLayouts[kKinds] = {
    {"adam", 6, {"param", "grad", "moment1", "moment2", "beta1_pow", "beta2_pow"}, -1,
     0b110000, 0b110000, 0b000010, 4},  // beta1, beta2, rate, eps_hat
    {"sgd", 3, {"param", "grad", "learning_rate"}, 2, 0, 0b100, 0b110, 0},
    {"momentum", 4, {"param", "grad", "velocity", "learning_rate"}, 3, 0, 0b1000, 0b1010,
     4},  // mu, rescale, l2 (None: no l2_decay), nesterov
    {"adagrad", 4, {"param", "grad", "moment", "learning_rate"}, 3, 0, 0b1000, 0b1010,
     1},  // epsilon
    {"rmsprop", 6, {"param", "grad", "mean_square", "mean_grad", "moment", "learning_rate"}, 5,
     0b001000, 0b100000, 0b100010, 4},  // decay, 1 - decay, epsilon, momentum
};

// one checked update: its arrays (borrowed: the updates tuple holds them) and scalars
struct Update {
  int kind;
  char type;                 // 'f' or 'd'
  Py_ssize_t count;          // elements of param
  PyArrayObject* arrays[6];  // in the layout's order; null for an absent optional one
  double scalar[4];          // the layout's scalars (momentum's l2 0 without l2_decay)
  double rate;               // the learning rate, from its array (or adam's scalar)
  bool flag[2];              // momentum: l2_decay, nesterov
};

char array_type(PyArrayObject* array) {
  const int type = PyArray_TYPE(array);
  return type == NPY_FLOAT ? 'f' : type == NPY_DOUBLE ? 'd' : 0;
}

bool apart(PyArrayObject* a, PyArrayObject* b) {
  const char* x = static_cast<const char*>(PyArray_DATA(a));
  const char* y = static_cast<const char*>(PyArray_DATA(b));
  const Py_ssize_t m = PyArray_NBYTES(a), n = PyArray_NBYTES(b);
  return !(m && n && x < y + n && y < x + m);
}

// a learning rate: one element of the parameter's type or float32, as a double
bool read_rate(PyArrayObject* rate, char type, double* value) {
  const char rate_type = array_type(rate);
  if (PyArray_SIZE(rate) != 1 || (rate_type != 'f' && rate_type != type)) return false;
  const char* data = static_cast<const char*>(PyArray_DATA(rate));
  if (rate_type == 'f') {
    float single;
    memcpy(&single, data, sizeof single);
    *value = single;
  } else {
    memcpy(value, data, sizeof *value);
  }
  return true;
}

// checks item `index` of the updates and fills `update`; -1 with an exception set
int check_update(PyObject* item, Py_ssize_t index, Update* update) {
  if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) < 1) {
    PyErr_Format(PyExc_TypeError, "commit: update %zd expected a tuple (kind, ...), but got "
                 "%R", index, Py_TYPE(item));
    return -1;
  }
  const long kind = PyLong_AsLong(PyTuple_GET_ITEM(item, 0));
  if (kind == -1 && PyErr_Occurred()) return -1;
  if (kind < 0 || kind >= kKinds ||
      PyTuple_GET_SIZE(item) != 1 + kLayouts[kind].arrays + kLayouts[kind].scalars) {
    PyErr_Format(PyExc_ValueError, "commit: update %zd expected kind 0 (adam, 11 items), 1 "
                 "(sgd, 4), 2 (momentum, 9), 3 (adagrad, 6) or 4 (rmsprop, 11), but got kind "
                 "%ld with %zd items", index, kind, PyTuple_GET_SIZE(item));
    return -1;
  }
  const Layout& layout = kLayouts[kind];
  update->kind = static_cast<int>(kind);
  for (int k = 0; k < layout.arrays; ++k) {
    PyObject* object = PyTuple_GET_ITEM(item, k + 1);
    update->arrays[k] = nullptr;
    if (object == Py_None && (layout.optional >> k & 1)) continue;
    if (!plain(object)) {
      PyErr_Format(PyExc_TypeError, "commit: %s %zd's %s expected a C-contiguous, aligned "
                   "NumPy array in native order, but got %R", layout.name, index,
                   layout.array_names[k], Py_TYPE(object));
      return -1;
    }
    update->arrays[k] = reinterpret_cast<PyArrayObject*>(object);
  }
  PyArrayObject* param = update->arrays[0];
  update->type = array_type(param);
  update->count = PyArray_SIZE(param);
  if (!update->type) {
    PyErr_Format(PyExc_TypeError, "commit: %s %zd's param expected float32 or float64 "
                 "elements, but got %S", layout.name, index,
                 reinterpret_cast<PyObject*>(PyArray_DESCR(param)));
    return -1;
  }
  for (int k = 1; k < layout.arrays; ++k) {
    PyArrayObject* array = update->arrays[k];
    if (array == nullptr || k == layout.rate) continue;
    const Py_ssize_t want = (layout.single >> k & 1) ? 1 : update->count;
    if (array_type(array) != update->type || PyArray_SIZE(array) != want) {
      PyErr_Format(PyExc_ValueError, "commit: %s %zd's %s expected %zd element(s) of param's "
                   "type, %S, but got %zd of %S", layout.name, index, layout.array_names[k],
                   want, reinterpret_cast<PyObject*>(PyArray_DESCR(param)),
                   Py_ssize_t(PyArray_SIZE(array)),
                   reinterpret_cast<PyObject*>(PyArray_DESCR(array)));
      return -1;
    }
  }
  if (layout.rate >= 0 && !read_rate(update->arrays[layout.rate], update->type, &update->rate)) {
    PyErr_Format(PyExc_ValueError, "commit: %s %zd's learning_rate expected one element of "
                 "param's type or float32", layout.name, index);
    return -1;
  }
  // what the update writes: writable, and apart from every other array of the update
  for (int k = 0; k < layout.arrays; ++k) {
    PyArrayObject* array = update->arrays[k];
    if (array == nullptr || (layout.read_only >> k & 1)) continue;
    if (!PyArray_ISWRITEABLE(array)) {
      PyErr_Format(PyExc_ValueError, "commit: %s %zd's %s expected a writable array",
                   layout.name, index, layout.array_names[k]);
      return -1;
    }
    for (int j = 0; j < layout.arrays; ++j)
      if (j != k && update->arrays[j] != nullptr && !apart(array, update->arrays[j])) {
        PyErr_Format(PyExc_ValueError, "commit: %s %zd's %s and %s expected separate memory, "
                     "but they overlap", layout.name, index, layout.array_names[k],
                     layout.array_names[j]);
        return -1;
      }
  }
  update->flag[0] = update->flag[1] = false;
  for (int k = 0; k < layout.scalars; ++k) {
    PyObject* object = PyTuple_GET_ITEM(item, 1 + layout.arrays + k);
    update->scalar[k] = 0.0;
    if (kind == kMomentum && k == 2) {  // l2: None without l2_decay
      if ((update->flag[0] = object != Py_None) == false) continue;
    } else if (kind == kMomentum && k == 3) {  // nesterov
      const int truth = PyObject_IsTrue(object);
      if (truth < 0) return -1;
      update->flag[1] = truth;
      continue;
    }
    if ((update->scalar[k] = PyFloat_AsDouble(object)) == -1.0 && PyErr_Occurred()) return -1;
  }
  if (kind == kAdam) update->rate = update->scalar[2];
  return 0;
}

template <class T>
T* data_of(PyArrayObject* array) {
  return array == nullptr ? nullptr : static_cast<T*>(PyArray_DATA(array));
}

template <class T>
FLUID_UPDATE_CLONES void momentum_in_place(T* __restrict__ param, const T* __restrict__ grad,
                                           T* __restrict__ velocity, Py_ssize_t count,
                                           T rate, T mu, T rescale, bool l2_decay, T l2,
                                           bool nesterov) {
  for (Py_ssize_t i = 0; i < count; ++i)
    fluid_native::momentum_step(param[i], grad[i], velocity[i], rate, mu, rescale, l2_decay,
                                l2, nesterov);
}

template <class T>
FLUID_UPDATE_CLONES void adagrad_in_place(T* __restrict__ param, const T* __restrict__ grad,
                                          T* __restrict__ moment, Py_ssize_t count, T rate,
                                          T eps) {
  for (Py_ssize_t i = 0; i < count; ++i)
    fluid_native::adagrad_step(param[i], grad[i], moment[i], rate, eps);
}

template <class T>
FLUID_UPDATE_CLONES void rmsprop_in_place(T* __restrict__ param, const T* __restrict__ grad,
                                          T* __restrict__ mean_square, T* __restrict__ mean_grad,
                                          T* __restrict__ moment, Py_ssize_t count, T rate,
                                          T decay, T keep, T eps, T momentum) {
  for (Py_ssize_t i = 0; i < count; ++i)
    fluid_native::rmsprop_step(param[i], grad[i], mean_square[i],
                               mean_grad ? mean_grad + i : nullptr, moment[i], rate, decay,
                               keep, eps, momentum);
}

template <class T>
void apply(const Update& u) {
  T* const param = data_of<T>(u.arrays[0]);
  const T* const grad = data_of<T>(u.arrays[1]);
  const T rate = T(u.rate);
  switch (u.kind) {
    case kAdam: {
      const T beta1 = T(u.scalar[0]), beta2 = T(u.scalar[1]);
      adam_in_place<T>(param, grad, data_of<T>(u.arrays[2]), data_of<T>(u.arrays[3]), u.count,
                       beta1, beta2, rate, T(u.scalar[3]));
      // Beta{1,2}PowOut = Beta{1,2}Pow * beta{1,2}, in the powers' (the parameter's) type
      if (T* pow1 = data_of<T>(u.arrays[4])) *pow1 = *pow1 * beta1;
      if (T* pow2 = data_of<T>(u.arrays[5])) *pow2 = *pow2 * beta2;
      break;
    }
    case kSgd:
      sgd_in_place<T>(param, grad, u.count, rate);
      break;
    case kMomentum:
      momentum_in_place<T>(param, grad, data_of<T>(u.arrays[2]), u.count, rate,
                           T(u.scalar[0]), T(u.scalar[1]), u.flag[0], T(u.scalar[2]),
                           u.flag[1]);
      break;
    case kAdagrad:
      adagrad_in_place<T>(param, grad, data_of<T>(u.arrays[2]), u.count, rate, T(u.scalar[0]));
      break;
    default:  // kRmsprop
      rmsprop_in_place<T>(param, grad, data_of<T>(u.arrays[2]), data_of<T>(u.arrays[3]),
                          data_of<T>(u.arrays[4]), u.count, rate, T(u.scalar[0]),
                          T(u.scalar[1]), T(u.scalar[2]), T(u.scalar[3]));
  }
}

PyObject* commit(PyObject*, PyObject* updates) {
  PyObject* items = PySequence_Fast(updates, "commit: updates expected a sequence of tuples");
  if (items == nullptr) return nullptr;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
  Update* checked = static_cast<Update*>(PyMem_Malloc(sizeof(Update) * (n ? n : 1)));
  if (checked == nullptr) {
    Py_DECREF(items);
    return PyErr_NoMemory();
  }
  for (Py_ssize_t i = 0; i < n; ++i)
    if (check_update(PySequence_Fast_GET_ITEM(items, i), i, &checked[i]) < 0) {
      PyMem_Free(checked);
      Py_DECREF(items);
      return nullptr;
    }
  // nothing below can fail, and no Python code runs until every update is written
  Py_BEGIN_ALLOW_THREADS
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (checked[i].type == 'f')
      apply<float>(checked[i]);
    else
      apply<double>(checked[i]);
  }
  Py_END_ALLOW_THREADS
  PyMem_Free(checked);
  Py_DECREF(items);
  Py_RETURN_NONE;
}

PyMethodDef kMethods[] = {
    {"adam", adam, METH_VARARGS,
     "adam(param, grad, moment1, moment2, param_out, moment1_out, moment2_out, beta1, "
     "beta2, rate, eps_hat): Adam's element update in one pass, in place (every output its "
     "input), over the gradient (param_out is grad) or into new arrays: moment1_out = beta1 moment1 + (1 - beta1) grad; "
     "moment2_out = beta2 moment2 + (1 - beta2) grad^2; param_out = param - moment1_out / "
     "(sqrt(moment2_out) + eps_hat) * rate"},
    {"sgd", sgd, METH_VARARGS,
     "sgd(param, rate, grad, in_place): param - rate * grad, written over param (in_place) "
     "or into a new array; NotImplemented for arrays the loop does not take (see the "
     "module's comment)"},
    {"commit", commit, METH_O,
     "commit(updates): adam, sgd, momentum, adagrad and rmsprop updates (tuples: see the "
     "module's comment) "
     "written in place, all of them, after every one is checked; a TypeError or ValueError "
     "before anything is written"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_fused_updates",
                       "The interpreter's fused optimizer updates (one pass, in place).", -1,
                       kMethods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__fused_updates(void) {
  import_array();
  return PyModule_Create(&kModule);
}
