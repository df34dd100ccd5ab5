/* LoDTensor's constructor (fluid_nb/tensor/tensor.py) for its two commonest calls.
 *
 * Every kernel result, every value a host step or a feed makes, is a new LoDTensor, most of
 * them LoDTensor(ndarray) or LoDTensor(); a DynamicRNN batch makes about a thousand. As a
 * Python __init__ each cost a frame; here LoDTensor derives from
 * TensorBase, whose C initializer sets the two slots for an exact ndarray (or None) and no
 * LoD (absent, None or ()) -- what the Python constructor sets for them: array, and the
 * shared empty LoD (). Every other call (LoD levels, lengths, a scalar or a subclass of
 * ndarray to convert, keywords) goes to the Python constructor, LoDTensor._init.
 * configure(LoDTensor, numpy.ndarray, LoDTensor._init) names them once (tensor.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

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

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(LoDTensor, numpy.ndarray, LoDTensor._init): the class the fast constructor "
     "makes, the array class it takes as it is, and the constructor of every other call."},
    {NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tensor",
                                    "LoDTensor's constructor in C: see _tensor.c.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__tensor(void) {
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
