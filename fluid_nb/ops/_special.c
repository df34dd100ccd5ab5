/* The kernels' C parts, over host arrays:
 *
 *   erf(x) -> a new array of x's shape and type: the C library's erf of each element
 *
 * x a C-contiguous float32 or float64 ndarray; a float32 element is widened to double and
 * its erf rounded back, as math.erf per element gives it (np.vectorize(math.erf) took
 * about 115 ns an element, a hundred times NumPy's tanh). Any other input is answered
 * NotImplemented, and the caller computes it its own way (half precision, CuPy arrays,
 * strided views). GELU's exact form and its gradient read it on every run.
 *
 *   UfuncKernel(ufunc, operands, fallback, cast_like, axis_rule, reads_xp): the kernel of
 *   an op whose formula is one NumPy ufunc over its inputs and constants (relu's
 *   maximum(X, 0), elementwise_add's X + Y; see ops/expr.py's host_kernel), called as the
 *   op's kernel is, kernel(ctx, *arrays). ``operands`` gives the ufunc's arguments in
 *   order: an int is the array of that position, a float a constant. The call is
 *
 *       result = ufunc(*operands)
 *       if cast_like >= 0 and result.dtype != arrays[cast_like].dtype:
 *           result = result.astype(arrays[cast_like].dtype)
 *
 *   when every array is an exact NumPy ndarray, ctx.xp is NumPy where the formula's Python
 *   reads it (``reads_xp``) and, with ``axis_rule`` (an elementwise op of X and Y),
 *   ctx.attrs["axis"] is an int that is -1 or X's rank less Y's, or X and Y have one rank
 *   (NumPy's broadcast is then Paddle's). Any other call is fallback(ctx, *arrays), the
 *   Python kernel generated from the same formula, which computes the same thing these
 *   cases compute. A formula's kernel run from C spares two Python frames per run: a
 *   live op's first run, or an interpreter step's call, of an activation or an
 *   elementwise op.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <structmember.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

static PyObject *elementwise_erf(PyObject *self, PyObject *value) {
    if (!PyArray_CheckExact(value))
        Py_RETURN_NOTIMPLEMENTED;
    PyArrayObject *x = (PyArrayObject *)value;
    int type = PyArray_TYPE(x);
    if ((type != NPY_FLOAT32 && type != NPY_FLOAT64) || !PyArray_IS_C_CONTIGUOUS(x) ||
        !PyArray_ISNOTSWAPPED(x))
        Py_RETURN_NOTIMPLEMENTED;
    PyArrayObject *out = (PyArrayObject *)PyArray_SimpleNew(PyArray_NDIM(x), PyArray_DIMS(x),
                                                            type);
    if (out == NULL)
        return NULL;
    npy_intp n = PyArray_SIZE(x);
    Py_BEGIN_ALLOW_THREADS
    if (type == NPY_FLOAT64) {
        const double *in = (const double *)PyArray_DATA(x);
        double *to = (double *)PyArray_DATA(out);
        for (npy_intp i = 0; i < n; i++)
            to[i] = erf(in[i]);
    } else {
        const float *in = (const float *)PyArray_DATA(x);
        float *to = (float *)PyArray_DATA(out);
        for (npy_intp i = 0; i < n; i++)
            to[i] = (float)erf((double)in[i]);
    }
    Py_END_ALLOW_THREADS
    return (PyObject *)out;
}

/* --- UfuncKernel --------------------------------------------------------------------------- */
#define MOST_OPERANDS 4

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *ufunc, *operands, *fallback;
    Py_ssize_t cast_like, n_arrays;
    int axis_rule, reads_xp;
    /* each constant as a 0-d array of the float type the arrays last had (NULL: none yet,
     * or not exact in it) and that type */
    PyObject *typed[MOST_OPERANDS];
    int typed_as;
} UfuncKernel;

static PyObject *str_attrs, *str_axis, *str_xp, *str_astype, *str_dtype;
static PyObject *numpy_module; /* what ctx.xp is for the C path */

/* 1 when ctx.attrs["axis"] lets NumPy's broadcast of x and y stand for Paddle's (the
 * Python kernel's test), 0 when not (the fallback aligns them), -1 with an error */
static int broadcasts_alike(PyObject *ctx, PyArrayObject *x, PyArrayObject *y) {
    PyObject *attrs = PyObject_GetAttr(ctx, str_attrs);
    if (attrs == NULL)
        return -1;
    PyObject *axis = PyDict_CheckExact(attrs) ? PyDict_GetItemWithError(attrs, str_axis)
                                              : NULL;
    int alike = 0;
    if (axis != NULL && PyLong_CheckExact(axis)) {
        int overflow;
        long at = PyLong_AsLongAndOverflow(axis, &overflow);
        int nx = PyArray_NDIM(x), ny = PyArray_NDIM(y);
        alike = nx == ny || (!overflow && (at == -1 || at == nx - ny));
    }
    Py_DECREF(attrs);
    return PyErr_Occurred() ? -1 : alike;
}

/* result cast to like's dtype when it has another (the generated kernel's last lines) */
static PyObject *cast_to(PyObject *result, PyArrayObject *like) {
    PyArray_Descr *want = PyArray_DESCR(like);
    if (PyArray_CheckExact(result)) {
        if (PyArray_EquivTypes(PyArray_DESCR((PyArrayObject *)result), want))
            return result;
    } else { /* (a 0-d operation's NumPy scalar: its dtype compared as Python does) */
        PyObject *dtype = PyObject_GetAttr(result, str_dtype);
        int same = dtype == NULL ? -1 : PyObject_RichCompareBool(dtype, (PyObject *)want,
                                                                Py_EQ);
        Py_XDECREF(dtype);
        if (same != 0) {
            if (same < 0)
                Py_CLEAR(result);
            return result;
        }
    }
    PyObject *cast = PyObject_CallMethodOneArg(result, str_astype, (PyObject *)want);
    Py_DECREF(result);
    return cast;
}

/* The float type all of `arrays` have (a NumPy type number), or -1: another type, or
 * arrays of two types */
static int floats_of_one_type(PyObject *const *arrays, Py_ssize_t n) {
    int type = PyArray_TYPE((PyArrayObject *)arrays[0]);
    if (type != NPY_HALF && type != NPY_FLOAT && type != NPY_DOUBLE)
        return -1;
    for (Py_ssize_t i = 1; i < n; i++)
        if (PyArray_TYPE((PyArrayObject *)arrays[i]) != type)
            return -1;
    return type;
}

/* 1 when float type `type` (half, single or double) holds `value` exactly */
static int holds_exactly(int type, double value) {
    if (type == NPY_DOUBLE || value == 0.0)
        return 1;
    if (!isfinite(value))
        return 1; /* (inf and NaN are every float type's) */
    if (type == NPY_FLOAT)
        return fabs(value) <= FLT_MAX && (double)(float)value == value;
    /* half: 11 significant bits from 2^-14 up to 65504, multiples of 2^-24 below */
    if (fabs(value) > 65504.0)
        return 0;
    int exponent;
    double fraction = frexp(value, &exponent); /* value = fraction * 2^exponent */
    double scaled = exponent >= -13 ? ldexp(fraction, 11) : ldexp(value, 24);
    return scaled == nearbyint(scaled);
}

/* The kernel's constants as 0-d arrays of float type `type`, each one whose value that type
 * holds exactly: a ufunc takes a Python float beside arrays of a float type as that type
 * (NumPy's promotion of a Python scalar), and the same number as a 0-d array of the type
 * gives the same result, without the conversion that cost relu's ufunc half as much again
 * as NumPy's add. 0, or -1 with an error. */
static int type_constants(UfuncKernel *self, int type) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->operands); i++) {
        PyObject *operand = PyTuple_GET_ITEM(self->operands, i);
        Py_CLEAR(self->typed[i]);
        if (!PyFloat_CheckExact(operand))
            continue;
        if (!holds_exactly(type, PyFloat_AS_DOUBLE(operand)))
            continue; /* (NumPy's own conversion, with the warnings it gives) */
        PyObject *zero_d = PyArray_SimpleNew(0, NULL, type);
        if (zero_d == NULL)
            return -1;
        PyArrayObject *array = (PyArrayObject *)zero_d;
        if (PyArray_SETITEM(array, PyArray_DATA(array), operand) < 0) {
            Py_DECREF(zero_d);
            return -1;
        }
        PyArray_CLEARFLAGS(array, NPY_ARRAY_WRITEABLE);
        self->typed[i] = zero_d;
    }
    self->typed_as = type;
    return 0;
}

static PyObject *ufunc_kernel_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames) {
    UfuncKernel *self = (UfuncKernel *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL || nargs != 1 + self->n_arrays)
        goto fallback;
    for (Py_ssize_t i = 1; i < nargs; i++)
        if (!PyArray_CheckExact(args[i]))
            goto fallback;
    if (self->reads_xp) {
        PyObject *xp = PyObject_GetAttr(args[0], str_xp);
        if (xp == NULL)
            return NULL;
        Py_DECREF(xp);
        if (xp != numpy_module)
            goto fallback;
    }
    if (self->axis_rule) {
        int alike = broadcasts_alike(args[0], (PyArrayObject *)args[1],
                                     (PyArrayObject *)args[2]);
        if (alike <= 0) {
            if (alike < 0)
                return NULL;
            goto fallback;
        }
    }
    PyObject *operands[MOST_OPERANDS];
    Py_ssize_t n = PyTuple_GET_SIZE(self->operands);
    int float_type = floats_of_one_type(args + 1, nargs - 1);
    if (float_type >= 0 && float_type != self->typed_as && type_constants(self, float_type) < 0)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *operand = PyTuple_GET_ITEM(self->operands, i);
        operands[i] = PyLong_CheckExact(operand) ? args[1 + PyLong_AsSsize_t(operand)]
                      : float_type >= 0 && self->typed[i] != NULL ? self->typed[i]
                                                                 : operand;
        Py_INCREF(operands[i]); /* (the ufunc may run Python: a warning's filter, which may
                                 * run this kernel on another type and retype its constants) */
    }
    PyObject *result = PyObject_Vectorcall(self->ufunc, operands, n, NULL);
    for (Py_ssize_t i = 0; i < n; i++)
        Py_DECREF(operands[i]);
    if (result == NULL || self->cast_like < 0)
        return result;
    return cast_to(result, (PyArrayObject *)args[1 + self->cast_like]);
fallback:
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static PyObject *ufunc_kernel_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *ufunc, *operands, *fallback;
    Py_ssize_t cast_like;
    int axis_rule, reads_xp;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)
        return PyErr_Format(PyExc_TypeError, "UfuncKernel takes positional arguments only");
    if (!PyArg_ParseTuple(args, "OO!Onpp:UfuncKernel", &ufunc, &PyTuple_Type, &operands,
                          &fallback, &cast_like, &axis_rule, &reads_xp))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(operands), n_arrays = 0;
    if (n < 1 || n > MOST_OPERANDS)
        return PyErr_Format(PyExc_ValueError, "UfuncKernel expected 1 to %d operands, got "
                            "%zd", MOST_OPERANDS, n);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *operand = PyTuple_GET_ITEM(operands, i);
        if (PyLong_CheckExact(operand)) {
            Py_ssize_t at = PyLong_AsSsize_t(operand);
            if (at < 0 || at >= MOST_OPERANDS)
                return PyErr_Format(PyExc_ValueError, "UfuncKernel expected an array "
                                    "position from 0 to %d, got %R", MOST_OPERANDS - 1,
                                    operand);
            if (at + 1 > n_arrays)
                n_arrays = at + 1;
        } else if (!PyFloat_CheckExact(operand)) {
            return PyErr_Format(PyExc_TypeError, "UfuncKernel expected an operand that is "
                                "an array position (int) or a constant (float), got %R",
                                operand);
        }
    }
    if (cast_like >= n_arrays || cast_like < -1 || (axis_rule && n_arrays != 2) ||
        !PyCallable_Check(ufunc) || !PyCallable_Check(fallback))
        return PyErr_Format(PyExc_ValueError, "UfuncKernel expected callables, cast_like "
                            "-1 or an array position below %zd and, with the axis rule, "
                            "two arrays", n_arrays);
    UfuncKernel *self = (UfuncKernel *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(ufunc), Py_INCREF(operands), Py_INCREF(fallback);
    self->ufunc = ufunc, self->operands = operands, self->fallback = fallback;
    self->cast_like = cast_like, self->n_arrays = n_arrays;
    self->axis_rule = axis_rule, self->reads_xp = reads_xp;
    self->typed_as = -1;
    self->vectorcall = ufunc_kernel_call;
    return (PyObject *)self;
}

static int ufunc_kernel_traverse(UfuncKernel *self, visitproc visit, void *arg) {
    Py_VISIT(self->ufunc);
    Py_VISIT(self->operands);
    Py_VISIT(self->fallback);
    for (int i = 0; i < MOST_OPERANDS; i++)
        Py_VISIT(self->typed[i]);
    return 0;
}

static int ufunc_kernel_clear(UfuncKernel *self) {
    Py_CLEAR(self->ufunc);
    Py_CLEAR(self->operands);
    Py_CLEAR(self->fallback);
    for (int i = 0; i < MOST_OPERANDS; i++)
        Py_CLEAR(self->typed[i]);
    self->typed_as = -1;
    return 0;
}

static void ufunc_kernel_dealloc(UfuncKernel *self) {
    PyObject_GC_UnTrack(self);
    ufunc_kernel_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef ufunc_kernel_members[] = {
    {"ufunc", T_OBJECT, offsetof(UfuncKernel, ufunc), READONLY, "the NumPy ufunc"},
    {"operands", T_OBJECT, offsetof(UfuncKernel, operands), READONLY,
     "its arguments: an array's position (int) or a constant (float)"},
    {"fallback", T_OBJECT, offsetof(UfuncKernel, fallback), READONLY,
     "the Python kernel every other call goes to"},
    {NULL}};

static PyTypeObject UfuncKernelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fluid_nb.ops._special.UfuncKernel",
    .tp_basicsize = sizeof(UfuncKernel),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A formula's kernel of one ufunc, run from C: see fluid_nb/ops/_special.c.",
    .tp_new = ufunc_kernel_new,
    .tp_traverse = (traverseproc)ufunc_kernel_traverse,
    .tp_clear = (inquiry)ufunc_kernel_clear,
    .tp_dealloc = (destructor)ufunc_kernel_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(UfuncKernel, vectorcall),
    .tp_members = ufunc_kernel_members,
};

static PyMethodDef methods[] = {
    {"erf", elementwise_erf, METH_O,
     "erf(x): the error function of each element of a C-contiguous float32 or float64 "
     "array (a float32 one through double, as math.erf), a new array; NotImplemented for "
     "any other input"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_special",
                                    "The kernels' C parts, over host arrays.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__special(void) {
    import_array();
    if (PyType_Ready(&UfuncKernelType) < 0 ||
        (str_attrs = PyUnicode_InternFromString("attrs")) == NULL ||
        (str_axis = PyUnicode_InternFromString("axis")) == NULL ||
        (str_xp = PyUnicode_InternFromString("xp")) == NULL ||
        (str_astype = PyUnicode_InternFromString("astype")) == NULL ||
        (str_dtype = PyUnicode_InternFromString("dtype")) == NULL ||
        (numpy_module = PyImport_ImportModule("numpy")) == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&UfuncKernelType);
    if (PyModule_AddObject(m, "UfuncKernel", (PyObject *)&UfuncKernelType) < 0) {
        Py_DECREF(&UfuncKernelType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
