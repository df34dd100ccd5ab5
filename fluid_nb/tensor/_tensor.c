/* LoDTensor's constructor (fluid_nb/tensor/tensor.py) for its two commonest calls, and a
 * minibatch's column stacked into the array a feed's tensor holds (stack_column, below).
 *
 * Every kernel result, every value a host step or a feed makes, is a new LoDTensor, most of
 * them LoDTensor(ndarray) or LoDTensor(); a DynamicRNN batch makes about a thousand. As a
 * Python __init__ each cost a frame; here LoDTensor derives from
 * TensorBase, whose C initializer sets the two slots for an exact ndarray (or None) and no
 * LoD (absent, None or ()) -- what the Python constructor sets for them: array, and the
 * shared empty LoD (). Every other call (LoD levels, lengths, a scalar or a subclass of
 * ndarray to convert, keywords) goes to the Python constructor, LoDTensor._init.
 * configure(LoDTensor, numpy.ndarray, LoDTensor._init) names them once (tensor.py).
 * And the scatter-add of a sparse gradient's rows (index_add), sequence_pool's MAX
 * (sequence_max) and the check of a plain LoD (valid_lod), below.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include "_slots.h"

static PyTypeObject *tensor_type;   /* LoDTensor */
static PyTypeObject *ndarray_type;  /* numpy.ndarray */
static PyObject *python_init;       /* LoDTensor._init(self, array=None, lod=()) */
static Py_ssize_t array_offset, lod_offset;
static PyObject *empty_lod;         /* () */


static void set_slot(PyObject *self, Py_ssize_t offset, PyObject *value) {
    PyObject *old = SLOT(self, offset);
    Py_INCREF(value);
    SLOT(self, offset) = value;
    Py_XDECREF(old); /* (an __init__ called again on a made tensor) */
}

static int tensor_init(PyObject *self, PyObject *args, PyObject *kwargs) {
    Py_ssize_t count = PyTuple_GET_SIZE(args);
    if (tensor_type != NULL && Py_IS_TYPE(self, tensor_type) && count <= 2 &&
        (kwargs == NULL || PyDict_GET_SIZE(kwargs) == 0)) {
        PyObject *array = count > 0 ? PyTuple_GET_ITEM(args, 0) : Py_None;
        PyObject *lod = count > 1 ? PyTuple_GET_ITEM(args, 1) : empty_lod;
        if ((array == Py_None || Py_IS_TYPE(array, ndarray_type)) &&
            (lod == Py_None || (PyTuple_CheckExact(lod) && PyTuple_GET_SIZE(lod) == 0))) {
            set_slot(self, array_offset, array);
            set_slot(self, lod_offset, empty_lod);
            /* an array and an empty tuple: nothing the cyclic collector can walk (an ndarray
             * has no traverse), so the tensor is left out of its passes, as CPython leaves
             * out a tuple of atomic values; a LoD given later is a list of lists of ints,
             * which closes no cycle. A live loop makes one per op, an interpreted step one
             * per result. */
            PyObject_GC_UnTrack(self);
            return 0;
        }
    }
    if (python_init == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "fluid_nb.tensor._tensor: configure() was not called");
        return -1;
    }
    /* LoDTensor._init(self, *args, **kwargs) */
    PyObject *call_args = PyTuple_New(count + 1);
    if (call_args == NULL)
        return -1;
    Py_INCREF(self);
    PyTuple_SET_ITEM(call_args, 0, self);
    for (Py_ssize_t i = 0; i < count; ++i) {
        PyObject *item = PyTuple_GET_ITEM(args, i);
        Py_INCREF(item);
        PyTuple_SET_ITEM(call_args, i + 1, item);
    }
    PyObject *result = PyObject_Call(python_init, call_args, kwargs);
    Py_DECREF(call_args);
    if (result == NULL)
        return -1;
    Py_DECREF(result);
    return 0;
}

static PyTypeObject TensorBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fluid_nb.tensor._tensor.TensorBase",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "LoDTensor's base: its constructor's common case in C (see _tensor.c).",
    .tp_new = PyType_GenericNew,
    .tp_init = tensor_init,
};

static PyObject *configure(PyObject *module, PyObject *args) {
    PyObject *tensor, *ndarray, *init;
    if (!PyArg_ParseTuple(args, "O!O!O:configure", &PyType_Type, &tensor, &PyType_Type,
                          &ndarray, &init))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)tensor, &TensorBaseType))
        return PyErr_Format(PyExc_TypeError, "configure: %s expected to derive from "
                            "TensorBase", ((PyTypeObject *)tensor)->tp_name);
    Py_ssize_t array_at, lod_at;
    if (slot_offset((PyTypeObject *)tensor, "array", &array_at) < 0 ||
        slot_offset((PyTypeObject *)tensor, "_lod", &lod_at) < 0)
        return NULL;
    Py_INCREF(tensor), Py_INCREF(ndarray), Py_INCREF(init);
    Py_XSETREF(tensor_type, (PyTypeObject *)tensor);
    Py_XSETREF(ndarray_type, (PyTypeObject *)ndarray);
    Py_XSETREF(python_init, init);
    array_offset = array_at, lod_offset = lod_at;
    Py_RETURN_NONE;
}

/* --- stack_column -------------------------------------------------------------------------
 * stack_column(entries, dtype, dims): a minibatch's column for one feed variable (a tuple or
 * list of its samples' entries) as the array DataFeeder's general path makes of it
 * (api/data_feeder.py: value_array, lossless_cast, then the reshape to the declared dims and
 * their check), for the column a book's reader yields: every entry an ndarray of one shape
 * and dtype (uci_housing's float64 rows, MNIST's float32 images), or every entry a Python
 * int (a label) or every one a Python float. None for anything else (no entries, mixed or
 * other types, a non-contiguous or byte-swapped entry, an int past int64, a cast that loses
 * values, a shape the declared dims refuse), which the general path converts or refuses
 * with its error. As NumPy's asarray over a sequence, the general path looks at each
 * entry's type and shape through its discovery; this copies each entry's bytes once: a W1
 * batch of 20 float64 rows took 20.7 µs through it, 2.8x stacking it by hand. */

/* whether an array of kind ``have`` may be fed to a variable of kind ``want`` (lossless_cast's
 * rule) */
static int lossless_kinds(char have, char want) {
    int have_int = have == 'i' || have == 'u', want_int = want == 'i' || want == 'u';
    if (have == want || (have_int && want_int))
        return 1;
    return (want == 'f' && (have_int || have == 'b')) || (want_int && have == 'b');
}

/* the entries' rows, each an exact, aligned, C-contiguous, native-order ndarray of the first
 * one's shape and dtype, copied into a new array of shape (n, *row shape); NULL (no error)
 * when they are not */
static PyObject *stacked_arrays(PyObject **entries, Py_ssize_t n) {
    PyArrayObject *first = (PyArrayObject *)entries[0];
    int ndim = PyArray_NDIM(first);
    PyArray_Descr *descr = PyArray_DESCR(first);
    if (ndim >= NPY_MAXDIMS || !PyArray_ISNBO(descr->byteorder) ||
        strchr("biuf", descr->kind) == NULL)
        return NULL;
    npy_intp dims[NPY_MAXDIMS];
    dims[0] = n;
    memcpy(dims + 1, PyArray_DIMS(first), ndim * sizeof(npy_intp));
    npy_intp row_bytes = PyArray_NBYTES(first);
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyArrayObject *entry = (PyArrayObject *)entries[i];
        if (!PyArray_CheckExact(entries[i]) || PyArray_NDIM(entry) != ndim ||
            !PyArray_ISCARRAY_RO(entry) || (PyArray_DESCR(entry) != descr &&
                                            !PyArray_EquivTypes(PyArray_DESCR(entry), descr)) ||
            memcmp(PyArray_DIMS(entry), dims + 1, ndim * sizeof(npy_intp)) != 0)
            return NULL;
    }
    Py_INCREF(descr); /* (the new array takes a reference) */
    PyObject *out = PyArray_NewFromDescr(&PyArray_Type, descr, ndim + 1, dims, NULL, NULL, 0,
                                         NULL);
    if (out == NULL)
        return NULL;
    char *to = PyArray_BYTES((PyArrayObject *)out);
    for (Py_ssize_t i = 0; i < n; ++i, to += row_bytes)
        memcpy(to, PyArray_BYTES((PyArrayObject *)entries[i]), row_bytes);
    return out;
}

/* the entries, every one an exact int or every one an exact float, as NumPy's asarray makes
 * them (int64 or float64, shape (n,)); NULL (no error) when they are not */
static PyObject *stacked_scalars(PyObject **entries, Py_ssize_t n) {
    int ints = PyLong_CheckExact(entries[0]);
    if (!ints && !PyFloat_CheckExact(entries[0]))
        return NULL;
    npy_intp dims[1] = {n};
    PyObject *out = PyArray_SimpleNew(1, dims, ints ? NPY_INT64 : NPY_FLOAT64);
    if (out == NULL)
        return NULL;
    void *data = PyArray_DATA((PyArrayObject *)out);
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *entry = entries[i];
        if (ints && PyLong_CheckExact(entry)) {
            int overflow;
            long long value = PyLong_AsLongLongAndOverflow(entry, &overflow);
            if (overflow == 0 && !(value == -1 && PyErr_Occurred())) {
                ((npy_int64 *)data)[i] = value;
                continue;
            }
        } else if (!ints && PyFloat_CheckExact(entry)) {
            ((npy_float64 *)data)[i] = PyFloat_AS_DOUBLE(entry);
            continue;
        }
        PyErr_Clear();
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* ``array`` in the declared ``dims`` (a tuple of ints, at most one negative: any size) as
 * the general path reshapes it (to dims when the ranks differ, then every known dim after
 * the first checked); NULL (no error) when it cannot be; steals ``array`` */
static PyObject *in_declared_shape(PyObject *array, PyObject *dims) {
    PyArrayObject *stacked = (PyArrayObject *)array;
    Py_ssize_t rank = PyTuple_GET_SIZE(dims);
    if (rank == 0) /* (no declared shape: as it is) */
        return array;
    npy_intp want[NPY_MAXDIMS], known = 1, unknown = -1;
    if (rank > NPY_MAXDIMS)
        goto refused;
    for (Py_ssize_t i = 0; i < rank; ++i) {
        long d = PyLong_AsLong(PyTuple_GET_ITEM(dims, i));
        if (d == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            goto refused;
        }
        want[i] = d;
        if (d < 0) {
            if (unknown >= 0)
                goto refused;
            unknown = i;
        } else {
            known *= d;
        }
    }
    if (rank == PyArray_NDIM(stacked)) { /* the ranks agree: the known dims after the first */
        for (Py_ssize_t i = 1; i < rank; ++i)
            if (want[i] >= 0 && want[i] != PyArray_DIM(stacked, i))
                goto refused;
        return array;
    }
    npy_intp size = PyArray_SIZE(stacked);
    if (unknown >= 0) {
        if (known == 0 || size % known != 0)
            goto refused;
        want[unknown] = size / known;
    } else if (known != size) {
        goto refused;
    }
    PyArray_Dims shape = {want, (int)rank};
    PyObject *reshaped = PyArray_Newshape(stacked, &shape, NPY_CORDER);
    Py_DECREF(array);
    return reshaped;
refused:
    Py_DECREF(array);
    return NULL;
}

/* ``stacked`` as the feed holds it: cast to ``dtype`` where lossless_cast allows (the same
 * kind, an int or bool into a float, a bool into an int), then in the declared ``dims``;
 * NULL (no error) where the general path must look; steals ``stacked`` */
static PyObject *as_fed(PyObject *stacked, PyArray_Descr *dtype, PyObject *dims) {
    PyArray_Descr *have = PyArray_DESCR((PyArrayObject *)stacked);
    if (!PyArray_EquivTypes(have, dtype)) {
        if (!lossless_kinds(have->kind, dtype->kind)) { /* (the general path says why) */
            Py_DECREF(stacked);
            return NULL;
        }
        Py_INCREF(dtype); /* (PyArray_CastToType steals it) */
        PyObject *cast = PyArray_CastToType((PyArrayObject *)stacked, dtype, 0);
        Py_DECREF(stacked);
        if ((stacked = cast) == NULL)
            return NULL;
    }
    return in_declared_shape(stacked, dims);
}

/* a stacker's arguments (entries, dtype, dims): 1 with the entries' count and items and the
 * dtype when the entries are an exact tuple or list and the dtype a native-order number
 * type, 0 when the general path must look, -1 with a TypeError naming ``name`` */
static int stacker_arguments(const char *name, PyObject *const *args, Py_ssize_t nargs,
                             Py_ssize_t *n, PyObject ***entries, PyArray_Descr **dtype) {
    if (nargs != 3 || !PyArray_DescrCheck(args[1]) || !PyTuple_CheckExact(args[2])) {
        PyErr_Format(PyExc_TypeError, "%s(entries, dtype, dims) expected a sequence, a "
                     "numpy.dtype and a tuple", name);
        return -1;
    }
    *dtype = (PyArray_Descr *)args[1];
    if ((!PyTuple_CheckExact(args[0]) && !PyList_CheckExact(args[0])) ||
        strchr("biuf", (*dtype)->kind) == NULL || !PyArray_ISNBO((*dtype)->byteorder))
        return 0;
    *n = PySequence_Fast_GET_SIZE(args[0]);
    *entries = PySequence_Fast_ITEMS(args[0]);
    return 1;
}

static PyObject *stack_column(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t n;
    PyObject **entries;
    PyArray_Descr *dtype;
    int usable = stacker_arguments("stack_column", args, nargs, &n, &entries, &dtype);
    if (usable < 0)
        return NULL;
    if (usable == 0 || n == 0)
        Py_RETURN_NONE;
    PyObject *stacked = PyArray_CheckExact(entries[0]) ? stacked_arrays(entries, n)
                                                       : stacked_scalars(entries, n);
    if (stacked == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *fed = as_fed(stacked, dtype, args[2]);
    if (fed == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return fed;
}

/* stack_sequences(entries, dtype, dims): a minibatch's column for a variable of one LoD level
 * whose entries are sequences as a text reader yields them (each a list or tuple of Python
 * ints, or each of Python floats: word ids, a sequence of values), as the general path makes
 * it: the items in one array, cast losslessly to dtype and shaped to dims, and the
 * sequences' offsets (a list from 0, the LoD's one level). None for anything else (nested
 * sequences, arrays, mixed items, no items at all, a shape whose rows are not the items). */
static PyObject *stack_sequences(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t n, total = 0;
    PyObject **entries, *first = NULL;
    PyArray_Descr *dtype;
    int usable = stacker_arguments("stack_sequences", args, nargs, &n, &entries, &dtype);
    if (usable < 0)
        return NULL;
    if (usable == 0)
        Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *entry = entries[i];
        if (!PyList_CheckExact(entry) && !PyTuple_CheckExact(entry))
            Py_RETURN_NONE;
        Py_ssize_t length = PySequence_Fast_GET_SIZE(entry);
        if (first == NULL && length > 0)
            first = PySequence_Fast_ITEMS(entry)[0];
        total += length;
    }
    if (total == 0 || (!PyLong_CheckExact(first) && !PyFloat_CheckExact(first)))
        Py_RETURN_NONE;
    int ints = PyLong_CheckExact(first);
    npy_intp dims[1] = {total};
    PyObject *offsets = PyList_New(n + 1);
    PyObject *stacked = offsets == NULL ? NULL :
                        PyArray_SimpleNew(1, dims, ints ? NPY_INT64 : NPY_FLOAT64);
    if (stacked == NULL) {
        Py_XDECREF(offsets);
        return NULL;
    }
    void *data = PyArray_DATA((PyArrayObject *)stacked);
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i <= n; ++i) {
        PyObject *offset = PyLong_FromSsize_t(at);
        if (offset == NULL)
            goto failed;
        PyList_SET_ITEM(offsets, i, offset);
        if (i == n)
            break;
        PyObject *entry = entries[i], **items = PySequence_Fast_ITEMS(entry);
        Py_ssize_t length = PySequence_Fast_GET_SIZE(entry);
        /* (the entry's list may not change under us: nothing here runs Python code) */
        for (Py_ssize_t k = 0; k < length; ++k, ++at) {
            PyObject *item = items[k];
            if (ints && PyLong_CheckExact(item)) {
                int overflow;
                long long value = PyLong_AsLongLongAndOverflow(item, &overflow);
                if (overflow != 0 || (value == -1 && PyErr_Occurred()))
                    goto not_this;
                ((npy_int64 *)data)[at] = value;
            } else if (!ints && PyFloat_CheckExact(item)) {
                ((npy_float64 *)data)[at] = PyFloat_AS_DOUBLE(item);
            } else {
                goto not_this;
            }
        }
    }
    /* (as_fed takes the array; the LoD's rows must be the items) */
    PyObject *shaped = as_fed(stacked, dtype, args[2]);
    stacked = NULL;
    if (shaped == NULL || PyArray_NDIM((PyArrayObject *)shaped) == 0 ||
        PyArray_DIM((PyArrayObject *)shaped, 0) != total) {
        Py_XDECREF(shaped);
        if (PyErr_Occurred())
            goto failed;
        goto not_this;
    }
    PyObject *pair = PyTuple_Pack(2, shaped, offsets);
    Py_DECREF(shaped);
    Py_DECREF(offsets);
    return pair;
not_this:
    PyErr_Clear();
    Py_XDECREF(stacked);
    Py_DECREF(offsets);
    Py_RETURN_NONE;
failed:
    Py_XDECREF(stacked);
    Py_DECREF(offsets);
    return NULL;
}

/* --- index_add ---------------------------------------------------------------------------
 * index_add(target, index, values): target[index[i]] += values[i] along dim 0, for i in
 * order, in place: np.add.at(target, index, values) where the three are plain arrays. A
 * sparse gradient (an embedding's, a sequence convolution's) is thousands of such rows a
 * batch, and np.add.at, which loops an element at a time through its ufunc machinery, takes
 * about 300 ns a row of 32 floats; a row here is one vectorisable loop. The adds happen in
 * np.add.at's order, one float at a time, so the sums are the same bit for bit.
 *
 * Taken: float32 or float64 target and values of one dtype, index int64 of one dimension,
 * values shaped (len(index),) + target.shape[1:], each an exact ndarray, aligned,
 * C-contiguous and of native byte order, target writeable, no two of them sharing memory,
 * every index in [-rows, rows) (a negative one counts from the end, as NumPy's does).
 * Anything else returns False having written nothing, and the caller asks np.add.at, which
 * adds it or names what is wrong. */
static int plain_array(PyObject *object) {
    if (!PyArray_CheckExact(object))
        return 0;
    PyArrayObject *array = (PyArrayObject *)object;
    return PyArray_ISCARRAY_RO(array) && PyArray_ISNOTSWAPPED(array);
}

static int overlaps(PyArrayObject *a, PyArrayObject *b) {
    const char *a0 = PyArray_BYTES(a), *b0 = PyArray_BYTES(b);
    return a0 < b0 + PyArray_NBYTES(b) && b0 < a0 + PyArray_NBYTES(a);
}

/* whether ``b`` holds ``count`` rows shaped as ``a``'s (a's dims after the first), with
 * ``width`` the elements of a row */
static int rows_like(PyArrayObject *a, PyArrayObject *b, npy_intp count, npy_intp *width) {
    int ndim = PyArray_NDIM(a);
    if (ndim < 1 || PyArray_NDIM(b) != ndim || PyArray_DIM(b, 0) != count)
        return 0;
    *width = 1;
    for (int d = 1; d < ndim; d++) {
        if (PyArray_DIM(b, d) != PyArray_DIM(a, d))
            return 0;
        *width *= PyArray_DIM(a, d);
    }
    return 1;
}

/* 0 when a function of ``signature`` got its ``want`` positional arguments, else -1 with a
 * TypeError */
static int arity(const char *signature, Py_ssize_t nargs, Py_ssize_t want) {
    if (nargs == want)
        return 0;
    PyErr_Format(PyExc_TypeError, "%s: expected %zd arguments, received %zd", signature, want,
                 nargs);
    return -1;
}

/* restrict: index_add checked that target and values do not overlap. A row's adds are
 * vectorised (each float's sum is the same whether added alone or four at a time), which
 * GCC does at -O2 only for loops whose trip count it knows at compile time, and a row's
 * width it does not: hence the attribute, worth 5x on rows of 32 floats. */
#if defined(__GNUC__) && !defined(__clang__)
#define VECTORISED __attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic")))
#else
#define VECTORISED
#endif
#define ADD_ROWS(T)                                                                          \
    VECTORISED static void add_rows_##T(T *restrict out, const T *restrict in,               \
                                        const npy_int64 *ids, npy_intp count, npy_intp rows, \
                                        npy_intp width) {                                    \
        if (width == 1) { /* a flat target: one float a row */                               \
            for (npy_intp i = 0; i < count; i++)                                             \
                out[ids[i] < 0 ? ids[i] + rows : ids[i]] += in[i];                           \
            return;                                                                          \
        }                                                                                    \
        for (npy_intp i = 0; i < count; i++) {                                               \
            T *restrict to = out + (ids[i] < 0 ? ids[i] + rows : ids[i]) * width;            \
            const T *restrict from = in + i * width;                                         \
            for (npy_intp j = 0; j < width; j++)                                             \
                to[j] += from[j];                                                            \
        }                                                                                    \
    }
ADD_ROWS(float)
ADD_ROWS(double)

static PyObject *index_add(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (arity("index_add(target, index, values)", nargs, 3) < 0)
        return NULL;
    if (!plain_array(args[0]) || !plain_array(args[1]) || !plain_array(args[2]))
        Py_RETURN_FALSE;
    PyArrayObject *target = (PyArrayObject *)args[0], *index = (PyArrayObject *)args[1],
                  *values = (PyArrayObject *)args[2];
    int type = PyArray_TYPE(target);
    if ((type != NPY_FLOAT32 && type != NPY_FLOAT64) || PyArray_TYPE(values) != type ||
        PyArray_TYPE(index) != NPY_INT64 || PyArray_NDIM(index) != 1 ||
        !PyArray_ISWRITEABLE(target))
        Py_RETURN_FALSE;
    npy_intp count = PyArray_DIM(index, 0), rows, width;
    if (!rows_like(target, values, count, &width))
        Py_RETURN_FALSE;
    rows = PyArray_DIM(target, 0);
    if (overlaps(target, index) || overlaps(target, values))
        Py_RETURN_FALSE;
    const npy_int64 *ids = (const npy_int64 *)PyArray_DATA(index);
    for (npy_intp i = 0; i < count; i++)
        if (ids[i] < -(npy_int64)rows || ids[i] >= (npy_int64)rows)
            Py_RETURN_FALSE;
    if (type == NPY_FLOAT32)
        add_rows_float(PyArray_DATA(target), PyArray_DATA(values), ids, count, rows, width);
    else
        add_rows_double(PyArray_DATA(target), PyArray_DATA(values), ids, count, rows, width);
    Py_RETURN_TRUE;
}

/* --- sequence_max --------------------------------------------------------------------------
 * sequence_max(data, offsets, out, index): sequence_pool's MAX on the host. For each
 * sequence i (rows offsets[i] to offsets[i + 1] of data) that has rows, out[i] = the
 * elementwise maximum of its rows and index[i] = the absolute row each came from, the
 * first on ties and the first NaN where there is one (np.max and np.argmax of the sequence:
 * a NaN is maximal); empty sequences keep what out and index hold. One pass over the rows:
 * NumPy's own per-sequence max and argmax pass twice, a call each, and its reduceat over
 * rows is slower still on wide rows. index may be None.
 *
 * Taken: data float32 or float64, of at least one dimension, out of data's dtype and
 * shape (len(offsets) - 1,) + data.shape[1:], index int32 of out's shape, offsets int64 of
 * one dimension, non-decreasing within data's rows; each an exact, aligned, C-contiguous
 * ndarray of native byte order, out and index writeable. Anything else returns False having
 * written nothing. */
#define SEQUENCE_MAX(T)                                                                      \
    VECTORISED static void sequence_max_##T(const T *data, const npy_int64 *offsets,         \
                                            npy_intp count, npy_intp width, T *out,          \
                                            npy_int32 *index) {                              \
        for (npy_intp i = 0; i < count; i++) {                                               \
            npy_int64 start = offsets[i], end = offsets[i + 1];                              \
            if (start == end)                                                                \
                continue;                                                                    \
            T *best = out + i * width;                                                       \
            npy_int32 *at = index == NULL ? NULL : index + i * width;                        \
            memcpy(best, data + start * width, width * sizeof(T));                           \
            if (at != NULL)                                                                  \
                for (npy_intp c = 0; c < width; c++)                                         \
                    at[c] = (npy_int32)start;                                                \
            for (npy_int64 r = start + 1; r < end; r++) {                                    \
                const T *row = data + r * width;                                             \
                /* branch-free, so that the column loop is vectorised; a NaN wins over a      \
                 * number, never over an earlier NaN */                                      \
                if (at == NULL) {                                                            \
                    for (npy_intp c = 0; c < width; c++) {                                   \
                        T value = row[c], held = best[c];                                    \
                        int wins = (value > held) | ((value != value) & (held == held));     \
                        best[c] = wins ? value : held;                                       \
                    }                                                                        \
                } else {                                                                     \
                    for (npy_intp c = 0; c < width; c++) {                                   \
                        T value = row[c], held = best[c];                                    \
                        int wins = (value > held) | ((value != value) & (held == held));     \
                        best[c] = wins ? value : held;                                       \
                        at[c] = wins ? (npy_int32)r : at[c];                                 \
                    }                                                                        \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
    }
SEQUENCE_MAX(float)
SEQUENCE_MAX(double)

static PyObject *sequence_max(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (arity("sequence_max(data, offsets, out, index)", nargs, 4) < 0)
        return NULL;
    int has_index = args[3] != Py_None;
    if (!plain_array(args[0]) || !plain_array(args[1]) || !plain_array(args[2]) ||
        (has_index && !plain_array(args[3])))
        Py_RETURN_FALSE;
    PyArrayObject *data = (PyArrayObject *)args[0], *offsets = (PyArrayObject *)args[1],
                  *out = (PyArrayObject *)args[2],
                  *index = has_index ? (PyArrayObject *)args[3] : NULL;
    int type = PyArray_TYPE(data), ndim = PyArray_NDIM(data);
    if ((type != NPY_FLOAT32 && type != NPY_FLOAT64) || PyArray_TYPE(out) != type ||
        !PyArray_ISWRITEABLE(out) || PyArray_TYPE(offsets) != NPY_INT64 ||
        PyArray_NDIM(offsets) != 1 || PyArray_DIM(offsets, 0) < 1)
        Py_RETURN_FALSE;
    npy_intp count = PyArray_DIM(offsets, 0) - 1, rows = PyArray_DIM(data, 0), width;
    if (!rows_like(data, out, count, &width))
        Py_RETURN_FALSE;
    if (index != NULL && (PyArray_TYPE(index) != NPY_INT32 || !PyArray_ISWRITEABLE(index) ||
                          PyArray_NDIM(index) != ndim ||
                          !PyArray_CompareLists(PyArray_DIMS(index), PyArray_DIMS(out), ndim) ||
                          overlaps(index, out) || overlaps(index, data)))
        Py_RETURN_FALSE;
    if (overlaps(out, data) || rows > NPY_MAX_INT32)
        Py_RETURN_FALSE;
    const npy_int64 *bounds = (const npy_int64 *)PyArray_DATA(offsets);
    for (npy_intp i = 0; i <= count; i++)
        if (bounds[i] < 0 || bounds[i] > rows || (i > 0 && bounds[i] < bounds[i - 1]))
            Py_RETURN_FALSE;
    npy_int32 *at = index == NULL ? NULL : (npy_int32 *)PyArray_DATA(index);
    if (type == NPY_FLOAT32)
        sequence_max_float(PyArray_DATA(data), bounds, count, width, PyArray_DATA(out), at);
    else
        sequence_max_double(PyArray_DATA(data), bounds, count, width, PyArray_DATA(out), at);
    Py_RETURN_TRUE;
}

/* --- valid_lod -----------------------------------------------------------------------------
 * valid_lod(lod, rows): True when ``lod`` is a list or tuple of levels, each a list or tuple
 * of exact ints, that check_lod (tensor.py) accepts: each level starts at 0 and does not
 * decrease, each level but the last ends at the next level's sequence count, and the last
 * ends at ``rows`` (an int, or None for any). A sequence op's output takes its input's LoD
 * and every such tensor checks it: in Python, tens of nanoseconds an offset (a batch of
 * 64 sentences of 30 words is 2,000 offsets a step); here about one. False for anything
 * else, invalid or not plain, which check_lod then converts or names. */
static int offset_at(PyObject *level, Py_ssize_t k, long long *value) {
    PyObject *item = PySequence_Fast_ITEMS(level)[k];
    if (!PyLong_CheckExact(item))
        return 0;
    int overflow;
    *value = PyLong_AsLongLongAndOverflow(item, &overflow);
    return !overflow;
}

static int plain_sequence(PyObject *object) {
    return PyList_CheckExact(object) || PyTuple_CheckExact(object);
}

static PyObject *valid_lod(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (arity("valid_lod(lod, rows)", nargs, 2) < 0)
        return NULL;
    PyObject *lod = args[0], *rows = args[1];
    if (!plain_sequence(lod))
        Py_RETURN_FALSE;
    Py_ssize_t levels = PySequence_Fast_GET_SIZE(lod);
    long long last = 0;
    for (Py_ssize_t level = 0; level < levels; level++) {
        PyObject *offsets = PySequence_Fast_ITEMS(lod)[level];
        if (!plain_sequence(offsets))
            Py_RETURN_FALSE;
        Py_ssize_t count = PySequence_Fast_GET_SIZE(offsets);
        long long previous;
        if (count < 1 || !offset_at(offsets, 0, &previous) || previous != 0)
            Py_RETURN_FALSE;
        for (Py_ssize_t k = 1; k < count; k++) {
            long long value;
            if (!offset_at(offsets, k, &value) || value < previous)
                Py_RETURN_FALSE;
            previous = value;
        }
        if (level + 1 < levels) {
            PyObject *next = PySequence_Fast_ITEMS(lod)[level + 1];
            if (!plain_sequence(next) || previous != PySequence_Fast_GET_SIZE(next) - 1)
                Py_RETURN_FALSE;
        }
        last = previous;
    }
    if (levels > 0 && rows != Py_None) {
        if (!PyLong_CheckExact(rows))
            Py_RETURN_FALSE;
        int overflow;
        long long count = PyLong_AsLongLongAndOverflow(rows, &overflow);
        if (overflow || count != last)
            Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"sequence_max", (PyCFunction)(void (*)(void))sequence_max, METH_FASTCALL,
     "sequence_max(data, offsets, out, index): sequence_pool MAX over data's sequences into "
     "out (and the rows into index, or None); True when done, False (nothing written) where "
     "the op's loop must do it (see _tensor.c)."},
    {"valid_lod", (PyCFunction)(void (*)(void))valid_lod, METH_FASTCALL,
     "valid_lod(lod, rows): True when lod is plain levels of ints that check_lod accepts for "
     "rows rows (None: any); False where check_lod must look (see _tensor.c)."},
    {"index_add", (PyCFunction)(void (*)(void))index_add, METH_FASTCALL,
     "index_add(target, index, values): target[index[i]] += values[i] along dim 0 in place, "
     "as np.add.at; True when done, False (nothing written) where np.add.at must do it (see "
     "_tensor.c)."},
    {"stack_sequences", (PyCFunction)(void (*)(void))stack_sequences, METH_FASTCALL,
     "stack_sequences(entries, dtype, dims): a minibatch's column of sequences (lists of "
     "ints or of floats) for a variable of one LoD level, as (items stacked, cast and "
     "shaped, the sequences' offsets), as DataFeeder's general path makes it; None where "
     "that path must look (see _tensor.c)."},
    {"stack_column", (PyCFunction)(void (*)(void))stack_column, METH_FASTCALL,
     "stack_column(entries, dtype, dims): a minibatch's column (the samples' entries for one "
     "feed variable) stacked, cast losslessly to dtype and shaped to the declared dims, as "
     "DataFeeder's general path makes it; None where that path must look (see _tensor.c)."},
    {"configure", configure, METH_VARARGS,
     "configure(LoDTensor, numpy.ndarray, LoDTensor._init): the class the fast constructor "
     "makes, the array class it takes as it is, and the constructor of every other call."},
    {NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tensor",
                                    "LoDTensor's constructor in C: see _tensor.c.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__tensor(void) {
    import_array();
    if (PyType_Ready(&TensorBaseType) < 0)
        return NULL;
    empty_lod = PyTuple_New(0);
    if (empty_lod == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&TensorBaseType);
    if (PyModule_AddObject(m, "TensorBase", (PyObject *)&TensorBaseType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
