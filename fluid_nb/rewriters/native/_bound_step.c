/* One step of a compiled program in one call: the usual step of bound_call.BoundCall in C.
 *
 * A BoundStep is made for a BoundCall whose layout is the plain one (one compiled entry on
 * the host, every feed going to a slot of the build, every fetch read from a buffer the
 * build owns, NumPy results). Called with (feed, fetch_list, scope), it checks that the
 * arguments are the layout's: the feed a dict of exactly its names in its order, each an
 * ndarray of the shape and type the build was specialised on; the fetch list the very
 * items it was bound with; the scope a Scope; a feed of ids (id_ranges.py) holding only
 * ids in its range. Anything else returns None before anything has run, and the caller takes the Python path, which converts, specialises and raises
 * the typed errors. Otherwise it points the feed slots at the arrays (a new array, or one
 * a slot must copy, goes through the slot's own `take`), rebinds the parameters where the
 * scope holds new arrays (`Parameters.bind`), calls the compiled entry with the build's
 * pointer array, and returns a copy of each fetched buffer as a FetchedArray.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    PyObject *name;       /* the feed's name */
    int ndim;
    npy_intp dims[NPY_MAXDIMS];
    npy_intp strides[NPY_MAXDIMS]; /* the slot's buffer's: an array of them is pointed at */
    PyArray_Descr *descr; /* the type the build was specialised on */
    PyObject *slot;       /* its bound_call.FeedSlot */
    long long id_size;    /* ids: each in [0, id_size) or equal to `also`; -1: unchecked */
    int has_also;
    long long also;
} Feed;

typedef struct {
    PyObject_HEAD
    void (*function)(void *);
    void *pointers;         /* the build's pointer array, the entry's argument */
    PyObject *owner;        /* what keeps the function and the pointer array alive */
    Py_ssize_t n_feeds;
    Feed *feeds;
    PyObject *parameters;   /* bound_call.Parameters */
    PyObject *param_names;  /* tuple of str */
    PyObject *bound;        /* Parameters.bound: the arrays pointed at (a list) */
    PyObject *fetch_items;  /* tuple: the fetch list's items when bound */
    PyObject *buffers;      /* tuple of ndarrays: each fetch's buffer */
    PyTypeObject *fetched_type;
    PyTypeObject *scope_type;
} BoundStep;

static PyObject *str_fed, *str_take, *str_bind, *str_vars, *str_value, *str_array;

static void BoundStep_dealloc(BoundStep *self) {
    for (Py_ssize_t i = 0; i < self->n_feeds; i++) {
        Py_XDECREF(self->feeds[i].name);
        Py_XDECREF(self->feeds[i].descr);
        Py_XDECREF(self->feeds[i].slot);
    }
    PyMem_Free(self->feeds);
    Py_XDECREF(self->owner);
    Py_XDECREF(self->parameters);
    Py_XDECREF(self->param_names);
    Py_XDECREF(self->bound);
    Py_XDECREF(self->fetch_items);
    Py_XDECREF(self->buffers);
    Py_XDECREF(self->fetched_type);
    Py_XDECREF(self->scope_type);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* BoundStep(function, pointers, owner, feeds, parameters, param_names, fetch_items,
 *           buffers, fetched_type, scope_type); feeds: (name, shape, dtype, strides, slot,
 * id_size, also) per fed name in the feed dict's order (id_size -1: no ids to check; also:
 * None or the one id allowed outside [0, id_size)) */
static int BoundStep_init(BoundStep *self, PyObject *args, PyObject *kwds) {
    unsigned long long function, pointers;
    PyObject *owner, *feeds, *parameters, *param_names, *fetch_items, *buffers;
    PyObject *fetched_type, *scope_type;
    if (!PyArg_ParseTuple(args, "KKOOOO!O!O!O!O!", &function, &pointers, &owner, &feeds,
                          &parameters, &PyTuple_Type, &param_names, &PyTuple_Type,
                          &fetch_items, &PyTuple_Type, &buffers, &PyType_Type,
                          &fetched_type, &PyType_Type, &scope_type))
        return -1;
    if (self->feeds != NULL) {
        PyErr_SetString(PyExc_TypeError, "BoundStep: made once");
        return -1;
    }
    PyObject *feed_list = PySequence_Fast(feeds, "BoundStep: feeds expected a sequence");
    if (feed_list == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(feed_list);
    self->feeds = PyMem_Calloc(n > 0 ? n : 1, sizeof(Feed));
    if (self->feeds == NULL) {
        Py_DECREF(feed_list);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name, *shape, *dtype, *strides, *slot, *also;
        long long id_size;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(feed_list, i), "UO!OO!OLO", &name,
                              &PyTuple_Type, &shape, &dtype, &PyTuple_Type, &strides,
                              &slot, &id_size, &also)) {
            Py_DECREF(feed_list);
            return -1;
        }
        Feed *f = &self->feeds[i];
        f->id_size = id_size;
        f->has_also = also != Py_None;
        f->also = f->has_also ? PyLong_AsLongLong(also) : 0;
        f->ndim = (int)PyTuple_GET_SIZE(shape);
        if (f->ndim > NPY_MAXDIMS || PyTuple_GET_SIZE(strides) != f->ndim) {
            Py_DECREF(feed_list);
            PyErr_SetString(PyExc_ValueError, "BoundStep: a feed's shape and strides "
                                              "expected as many dims, at most NPY_MAXDIMS");
            return -1;
        }
        for (int d = 0; d < f->ndim; d++) {
            f->dims[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
            f->strides[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, d));
        }
        if (PyErr_Occurred() || !PyArray_DescrConverter(dtype, &f->descr)) {
            Py_DECREF(feed_list);
            return -1;
        }
        Py_INCREF(name);
        f->name = name;
        Py_INCREF(slot);
        f->slot = slot;
        self->n_feeds = i + 1;
    }
    Py_DECREF(feed_list);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(buffers); i++) {
        if (!PyArray_CheckExact(PyTuple_GET_ITEM(buffers, i))) {
            PyErr_SetString(PyExc_TypeError, "BoundStep: buffers expected ndarrays");
            return -1;
        }
    }
    if (PyTuple_GET_SIZE(buffers) != PyTuple_GET_SIZE(fetch_items)) {
        PyErr_SetString(PyExc_ValueError, "BoundStep: a buffer expected per fetched item");
        return -1;
    }
    PyObject *bound = PyObject_GetAttrString(parameters, "bound");
    if (bound == NULL)
        return -1;
    if (!PyList_CheckExact(bound) || PyList_GET_SIZE(bound) != PyTuple_GET_SIZE(param_names)) {
        Py_DECREF(bound);
        PyErr_SetString(PyExc_TypeError, "BoundStep: Parameters.bound expected a list of "
                                         "one entry per parameter name");
        return -1;
    }
    self->function = (void (*)(void *))(uintptr_t)function;
    self->pointers = (void *)(uintptr_t)pointers;
    self->bound = bound;
    Py_INCREF(owner);
    self->owner = owner;
    Py_INCREF(parameters);
    self->parameters = parameters;
    Py_INCREF(param_names);
    self->param_names = param_names;
    Py_INCREF(fetch_items);
    self->fetch_items = fetch_items;
    Py_INCREF(buffers);
    self->buffers = buffers;
    Py_INCREF(fetched_type);
    self->fetched_type = (PyTypeObject *)fetched_type;
    Py_INCREF(scope_type);
    self->scope_type = (PyTypeObject *)scope_type;
    return 0;
}

/* 1: the parameters' holders in `scope` hold the arrays bound last; 0: one changed or is
 * missing (Parameters.bind works it out); -1: an error */
static int parameters_current(BoundStep *self, PyObject *scope) {
    PyObject *vars = PyObject_GetAttr(scope, str_vars);
    if (vars == NULL)
        return -1;
    int current = PyDict_CheckExact(vars);
    Py_ssize_t n = PyTuple_GET_SIZE(self->param_names);
    for (Py_ssize_t k = 0; current && k < n; k++) {
        PyObject *holder = PyDict_GetItemWithError(vars, PyTuple_GET_ITEM(self->param_names, k));
        if (holder == NULL) {
            current = PyErr_Occurred() ? -1 : 0;
            break;
        }
        PyObject *tensor = PyObject_GetAttr(holder, str_value);
        PyObject *array = tensor != NULL ? PyObject_GetAttr(tensor, str_array) : NULL;
        Py_XDECREF(tensor);
        if (array == NULL) {
            PyErr_Clear(); /* (no tensor or no array: bind names what is missing) */
            current = 0;
            break;
        }
        current = array == PyList_GET_ITEM(self->bound, k);
        Py_DECREF(array);
    }
    Py_DECREF(vars);
    return current;
}

/* 1: every id of `array` lies in [0, f->id_size) or equals f->also; 0: one does not, or
 * the array is not a C-ordered one of 32- or 64-bit integers (the Python path checks) */
static int ids_in_range(PyArrayObject *array, const Feed *f) {
    if (!PyArray_IS_C_CONTIGUOUS(array) || PyArray_DESCR(array)->kind != 'i')
        return 0;
    const npy_intp n = PyArray_SIZE(array);
    const long long size = f->id_size, also = f->has_also ? f->also : -1;
    const int has_also = f->has_also;
#define FLUID_IDS_IN_RANGE(T)                                              \
    {                                                                     \
        const T *ids = (const T *)PyArray_DATA(array);                     \
        for (npy_intp i = 0; i < n; i++) {                                 \
            const long long id = ids[i];                                   \
            if ((id < 0 || id >= size) && !(has_also && id == also))       \
                return 0;                                                  \
        }                                                                 \
        return 1;                                                          \
    }
    if (PyArray_ITEMSIZE(array) == 8)
        FLUID_IDS_IN_RANGE(int64_t)
    if (PyArray_ITEMSIZE(array) == 4)
        FLUID_IDS_IN_RANGE(int32_t)
#undef FLUID_IDS_IN_RANGE
    return 0;
}

static PyObject *BoundStep_call(BoundStep *self, PyObject *args, PyObject *kwds) {
    PyObject *feed, *fetch_list, *scope;
    if (!PyArg_ParseTuple(args, "OOO", &feed, &fetch_list, &scope))
        return NULL;
    if (self->fetch_items == NULL) {
        PyErr_SetString(PyExc_TypeError, "BoundStep: called before it was made (__init__)");
        return NULL;
    }
    /* the layout's arguments, or None (nothing has run) */
    if (Py_TYPE(scope) != self->scope_type || !PyDict_CheckExact(feed)
            || PyDict_GET_SIZE(feed) != self->n_feeds
            || !(PyList_CheckExact(fetch_list) || PyTuple_CheckExact(fetch_list)))
        Py_RETURN_NONE;
    Py_ssize_t n_fetch = PySequence_Fast_GET_SIZE(fetch_list);
    if (n_fetch != PyTuple_GET_SIZE(self->fetch_items))
        Py_RETURN_NONE;
    PyObject **items = PySequence_Fast_ITEMS(fetch_list);
    for (Py_ssize_t i = 0; i < n_fetch; i++)
        if (items[i] != PyTuple_GET_ITEM(self->fetch_items, i))
            Py_RETURN_NONE;
    Py_ssize_t pos = 0, k = 0;
    PyObject *key, *value;
    while (PyDict_Next(feed, &pos, &key, &value)) {
        Feed *f = &self->feeds[k++];
        if (key != f->name) {
            if (!PyUnicode_Check(key) || PyUnicode_Compare(key, f->name) != 0) {
                if (PyErr_Occurred())
                    PyErr_Clear();
                Py_RETURN_NONE;
            }
        }
        if (!PyArray_CheckExact(value))
            Py_RETURN_NONE;
        PyArrayObject *array = (PyArrayObject *)value;
        if (PyArray_NDIM(array) != f->ndim
                || memcmp(PyArray_DIMS(array), f->dims, f->ndim * sizeof(npy_intp)) != 0
                || (PyArray_DESCR(array) != f->descr
                    && !PyArray_EquivTypes(PyArray_DESCR(array), f->descr))
                || (f->id_size >= 0 && !ids_in_range(array, f)))
            Py_RETURN_NONE;
    }
    /* each slot points at its array: the one of the last step needs nothing */
    pos = 0;
    k = 0;
    while (PyDict_Next(feed, &pos, &key, &value)) {
        Feed *f = &self->feeds[k++];
        PyObject *fed = PyObject_GetAttr(f->slot, str_fed);
        if (fed == NULL)
            return NULL;
        int same = fed == value && memcmp(PyArray_STRIDES((PyArrayObject *)value), f->strides,
                                          f->ndim * sizeof(npy_intp)) == 0;
        Py_DECREF(fed);
        if (!same) {
            PyObject *taken = PyObject_CallMethodObjArgs(f->slot, str_take, value,
                                                         self->parameters, NULL);
            if (taken == NULL)
                return NULL;
            Py_DECREF(taken);
        }
    }
    int current = parameters_current(self, scope);
    if (current < 0)
        return NULL;
    if (!current) {
        PyObject *bound = PyObject_CallMethodObjArgs(self->parameters, str_bind, scope, NULL);
        if (bound == NULL)
            return NULL;
        Py_DECREF(bound);
    }
    Py_BEGIN_ALLOW_THREADS /* as a ctypes call of the entry would */
    self->function(self->pointers);
    Py_END_ALLOW_THREADS
    PyObject *results = PyList_New(n_fetch);
    if (results == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n_fetch; i++) {
        PyObject *copy = PyArray_NewCopy((PyArrayObject *)PyTuple_GET_ITEM(self->buffers, i),
                                         NPY_CORDER);
        PyObject *view = copy != NULL ? PyArray_View((PyArrayObject *)copy, NULL,
                                                     self->fetched_type) : NULL;
        Py_XDECREF(copy);
        if (view == NULL) {
            Py_DECREF(results);
            return NULL;
        }
        PyList_SET_ITEM(results, i, view);
    }
    return results;
}

static PyTypeObject BoundStepType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "fluid_nb.rewriters.native._bound_step.BoundStep",
    .tp_basicsize = sizeof(BoundStep),
    .tp_dealloc = (destructor)BoundStep_dealloc,
    .tp_call = (ternaryfunc)BoundStep_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One step of a compiled program's plain layout in one call: "
              "step(feed, fetch_list, scope) -> the fetched arrays, or None when the "
              "arguments are not the layout's (nothing has run then).",
    .tp_init = (initproc)BoundStep_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_bound_step",
                                    "One step of a compiled program in one call.", -1, NULL};

PyMODINIT_FUNC PyInit__bound_step(void) {
    import_array();
    if (PyType_Ready(&BoundStepType) < 0)
        return NULL;
    str_fed = PyUnicode_InternFromString("fed");
    str_take = PyUnicode_InternFromString("take");
    str_bind = PyUnicode_InternFromString("bind");
    str_vars = PyUnicode_InternFromString("vars");
    str_value = PyUnicode_InternFromString("value");
    str_array = PyUnicode_InternFromString("array");
    if (!str_fed || !str_take || !str_bind || !str_vars || !str_value || !str_array)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&BoundStepType);
    if (PyModule_AddObject(m, "BoundStep", (PyObject *)&BoundStepType) < 0) {
        Py_DECREF(&BoundStepType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
