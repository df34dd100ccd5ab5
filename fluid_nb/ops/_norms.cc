// The interpreter's host layer norm and softmax over rows: the row pieces compiled code (and
// for the layer norm the CUDA kernels) run (layer_norm_rows, layer_norm_grad_rows,
// softmax_row, softmax_grad_line: fluid_native_rows.h), so they share one definition of
// the op, where the NumPy formulas in ops/norm.py and ops/nn.py make a dozen and four
// passes over the rows (and a reduction along a short last axis costs NumPy a loop a row).
//
//   layer_norm(x, scale, bias, epsilon) -> (y, mean, variance)
//   layer_norm_grad(x, scale, mean, variance, dy, epsilon, want_dx, want_dscale,
//                   want_dbias) -> (dx, dscale, dbias)
//   softmax(x) -> out;  softmax_grad(out, dout) -> dx  (along the last axis of x, [left, right])
//
// x and dy are C-contiguous [left, right] arrays of one type, float32 or float64; scale
// and bias None or [right] of that type; mean and variance [left] of it. y, mean and
// variance come back new ([left, right], [left], [left]); each gradient new or None. Any
// other input is answered NotImplemented, and the caller runs the NumPy formula (half
// precision, CuPy arrays, strided views).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <type_traits>

#include "fluid_native_rows.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// the rows' loops get an AVX2 and an AVX-512 clone, picked at load time (as compiled code)
#define FLUID_NORM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define FLUID_NORM_CLONES
#endif

namespace {

template <class T>
FLUID_NORM_CLONES void forward(const T* x, const T* scale, const T* bias, T* y, T* mean,
                               T* variance, int64_t left, int64_t right, T epsilon) {
  fluid_native::layer_norm_rows(x, scale, bias, y, mean, variance, left, right, epsilon);
}

template <class T>
FLUID_NORM_CLONES void backward(const T* x, const T* scale, const T* mean, const T* variance,
                                const T* dy, T* dx, T* dscale, T* dbias, int64_t left,
                                int64_t right, T epsilon) {
  fluid_native::layer_norm_grad_rows(x, scale, mean, variance, dy, dx, dscale, dbias, left,
                                     right, epsilon);
}

template <class T>
FLUID_NORM_CLONES void softmax_rows(const T* x, T* out, int64_t left, int64_t right) {
  T top, total;
  for (int64_t r = 0; r < left; ++r)
    fluid_native::softmax_row(x + r * right, out + r * right, right, &top, &total);
}

template <class T>
FLUID_NORM_CLONES void softmax_grad_rows(const T* out, const T* dout, T* dx, int64_t left,
                                         int64_t right) {
  for (int64_t r = 0; r < left; ++r)
    fluid_native::softmax_grad_line(out + r * right, dout + r * right, dx + r * right, right,
                                    1);
}

// `value` as an array of `type` and `size` elements, C-contiguous (None allowed where
// `optional`): the array, Py_None, or nullptr when it is not one
PyArrayObject* taken(PyObject* value, int type, npy_intp size, bool optional) {
  if (value == Py_None) return optional ? reinterpret_cast<PyArrayObject*>(Py_None) : nullptr;
  if (!PyArray_Check(value)) return nullptr;
  PyArrayObject* array = reinterpret_cast<PyArrayObject*>(value);
  if (PyArray_TYPE(array) != type || !PyArray_IS_C_CONTIGUOUS(array) ||
      PyArray_SIZE(array) != size)
    return nullptr;
  return array;
}

template <class T>
const T* data_of(PyArrayObject* array) {
  return reinterpret_cast<PyObject*>(array) == Py_None
             ? nullptr
             : static_cast<const T*>(PyArray_DATA(array));
}

// new C-ordered arrays of `type`: [rows, columns] and [size]
PyObject* new_matrix(npy_intp rows, npy_intp columns, int type) {
  npy_intp dims[2] = {rows, columns};
  return PyArray_SimpleNew(2, dims, type);
}

PyObject* new_vector(npy_intp size, int type) { return PyArray_SimpleNew(1, &size, type); }

// (left, right, type) of x viewed as [left, right], or false
bool rows_of(PyObject* value, npy_intp* left, npy_intp* right, int* type) {
  if (!PyArray_Check(value)) return false;
  PyArrayObject* x = reinterpret_cast<PyArrayObject*>(value);
  *type = PyArray_TYPE(x);
  if ((*type != NPY_FLOAT32 && *type != NPY_FLOAT64) || !PyArray_IS_C_CONTIGUOUS(x) ||
      PyArray_NDIM(x) != 2)
    return false;
  *left = PyArray_DIM(x, 0), *right = PyArray_DIM(x, 1);
  return true;
}

// (left, right, type) of two arrays viewed as [left, right] rows of one shape and type, or
// false
bool same_rows(PyObject* a, PyObject* b, npy_intp* left, npy_intp* right, int* type) {
  npy_intp b_left, b_right;
  int b_type;
  return rows_of(a, left, right, type) && rows_of(b, &b_left, &b_right, &b_type) &&
         b_type == *type && b_left == *left && b_right == *right;
}

PyObject* layer_norm(PyObject*, PyObject* args) {
  PyObject *x_value, *scale_value, *bias_value;
  double epsilon;
  if (!PyArg_ParseTuple(args, "OOOd:layer_norm", &x_value, &scale_value, &bias_value,
                        &epsilon))
    return nullptr;
  npy_intp left, right;
  int type;
  if (!rows_of(x_value, &left, &right, &type)) Py_RETURN_NOTIMPLEMENTED;
  PyArrayObject* x = reinterpret_cast<PyArrayObject*>(x_value);
  PyArrayObject* scale = taken(scale_value, type, right, true);
  PyArrayObject* bias = taken(bias_value, type, right, true);
  if (scale == nullptr || bias == nullptr) Py_RETURN_NOTIMPLEMENTED;
  PyObject* y = new_matrix(left, right, type);
  PyObject* mean = y ? new_vector(left, type) : nullptr;
  PyObject* variance = mean ? new_vector(left, type) : nullptr;
  if (variance == nullptr) {
    Py_XDECREF(y), Py_XDECREF(mean);
    return nullptr;
  }
  auto out = [](PyObject* array) { return PyArray_DATA(reinterpret_cast<PyArrayObject*>(array)); };
  Py_BEGIN_ALLOW_THREADS
  if (type == NPY_FLOAT32)
    forward<float>(data_of<float>(x), data_of<float>(scale), data_of<float>(bias),
                   static_cast<float*>(out(y)), static_cast<float*>(out(mean)),
                   static_cast<float*>(out(variance)), left, right, float(epsilon));
  else
    forward<double>(data_of<double>(x), data_of<double>(scale), data_of<double>(bias),
                    static_cast<double*>(out(y)), static_cast<double*>(out(mean)),
                    static_cast<double*>(out(variance)), left, right, epsilon);
  Py_END_ALLOW_THREADS
  return Py_BuildValue("(NNN)", y, mean, variance);
}

PyObject* layer_norm_grad(PyObject*, PyObject* args) {
  PyObject *x_value, *scale_value, *mean_value, *variance_value, *dy_value;
  double epsilon;
  int want_dx, want_dscale, want_dbias;
  if (!PyArg_ParseTuple(args, "OOOOOdppp:layer_norm_grad", &x_value, &scale_value,
                        &mean_value, &variance_value, &dy_value, &epsilon, &want_dx,
                        &want_dscale, &want_dbias))
    return nullptr;
  npy_intp left, right;
  int type;
  if (!same_rows(x_value, dy_value, &left, &right, &type)) Py_RETURN_NOTIMPLEMENTED;
  PyArrayObject* x = reinterpret_cast<PyArrayObject*>(x_value);
  PyArrayObject* dy = reinterpret_cast<PyArrayObject*>(dy_value);
  PyArrayObject* scale = taken(scale_value, type, right, true);
  PyArrayObject* mean = taken(mean_value, type, left, false);
  PyArrayObject* variance = taken(variance_value, type, left, false);
  if (scale == nullptr || mean == nullptr || variance == nullptr) Py_RETURN_NOTIMPLEMENTED;
  PyObject* made[3] = {nullptr, nullptr, nullptr};
  const bool wanted[3] = {bool(want_dx), bool(want_dscale), bool(want_dbias)};
  for (int k = 0; k < 3; ++k) {
    if (!wanted[k]) continue;
    made[k] = k == 0 ? new_matrix(left, right, type) : new_vector(right, type);
    if (made[k] == nullptr) {
      for (int j = 0; j < k; ++j) Py_XDECREF(made[j]);
      return nullptr;
    }
  }
  auto out = [](PyObject* array) {
    return array ? PyArray_DATA(reinterpret_cast<PyArrayObject*>(array)) : nullptr;
  };
  Py_BEGIN_ALLOW_THREADS
  if (type == NPY_FLOAT32)
    backward<float>(data_of<float>(x), data_of<float>(scale), data_of<float>(mean),
                    data_of<float>(variance), data_of<float>(dy), static_cast<float*>(out(made[0])),
                    static_cast<float*>(out(made[1])), static_cast<float*>(out(made[2])), left,
                    right, float(epsilon));
  else
    backward<double>(data_of<double>(x), data_of<double>(scale), data_of<double>(mean),
                     data_of<double>(variance), data_of<double>(dy),
                     static_cast<double*>(out(made[0])), static_cast<double*>(out(made[1])),
                     static_cast<double*>(out(made[2])), left, right, epsilon);
  Py_END_ALLOW_THREADS
  for (int k = 0; k < 3; ++k)
    if (made[k] == nullptr) {
      Py_INCREF(Py_None);
      made[k] = Py_None;
    }
  return Py_BuildValue("(NNN)", made[0], made[1], made[2]);
}

// a new [left, right] array of `type` that fill(T* data) writes (T float or double, as
// `type`; the GIL released meanwhile), or nullptr
template <class Fill>
PyObject* filled_rows(npy_intp left, npy_intp right, int type, Fill fill) {
  PyObject* made = new_matrix(left, right, type);
  if (made == nullptr) return nullptr;
  void* data = PyArray_DATA(reinterpret_cast<PyArrayObject*>(made));
  Py_BEGIN_ALLOW_THREADS
  if (type == NPY_FLOAT32)
    fill(static_cast<float*>(data));
  else
    fill(static_cast<double*>(data));
  Py_END_ALLOW_THREADS
  return made;
}

PyObject* softmax(PyObject*, PyObject* args) {
  PyObject* x_value;
  if (!PyArg_ParseTuple(args, "O:softmax", &x_value)) return nullptr;
  npy_intp left, right;
  int type;
  if (!rows_of(x_value, &left, &right, &type) || right == 0) Py_RETURN_NOTIMPLEMENTED;
  PyArrayObject* x = reinterpret_cast<PyArrayObject*>(x_value);
  return filled_rows(left, right, type, [&](auto* out) {
    using T = std::remove_pointer_t<decltype(out)>;
    softmax_rows<T>(data_of<T>(x), out, left, right);
  });
}

PyObject* softmax_grad(PyObject*, PyObject* args) {
  PyObject *out_value, *dout_value;
  if (!PyArg_ParseTuple(args, "OO:softmax_grad", &out_value, &dout_value)) return nullptr;
  npy_intp left, right;
  int type;
  if (!same_rows(out_value, dout_value, &left, &right, &type)) Py_RETURN_NOTIMPLEMENTED;
  PyArrayObject* out = reinterpret_cast<PyArrayObject*>(out_value);
  PyArrayObject* dout = reinterpret_cast<PyArrayObject*>(dout_value);
  return filled_rows(left, right, type, [&](auto* dx) {
    using T = std::remove_pointer_t<decltype(dx)>;
    softmax_grad_rows<T>(data_of<T>(out), data_of<T>(dout), dx, left, right);
  });
}

PyMethodDef methods[] = {
    {"layer_norm", layer_norm, METH_VARARGS,
     "layer_norm(x, scale, bias, epsilon) -> (y, mean, variance) over the rows of a "
     "[left, right] array, or NotImplemented"},
    {"layer_norm_grad", layer_norm_grad, METH_VARARGS,
     "layer_norm_grad(x, scale, mean, variance, dy, epsilon, want_dx, want_dscale, "
     "want_dbias) -> (dx, dscale, dbias), or NotImplemented"},
    {"softmax", softmax, METH_VARARGS,
     "softmax(x) -> out along the rows of a [left, right] array, or NotImplemented"},
    {"softmax_grad", softmax_grad, METH_VARARGS,
     "softmax_grad(out, dout) -> dx along the rows of [left, right] arrays, or NotImplemented"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_norms",
                      "The interpreter's host layer norm and softmax, from the native "
                      "runtime's rows.",
                      -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__norms(void) {
  import_array();
  return PyModule_Create(&module);
}
