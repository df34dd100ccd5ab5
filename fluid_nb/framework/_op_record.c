/* The parts of an appended op's record made in C: a live loop appends an op per statement.
 *
 * capture: the call-stack walk (fluid_nb/framework/callstack.py). Walking three or four
 * frames in Python took about a tenth of a live op's time; here it is one call. The result
 * is the form callstack.py documents: one flat tuple (code, instruction offset, code,
 * offset, ...), innermost frame first, ending after the first module-level frame (a
 * script's or a notebook cell's body) or after `max_frames` frames. `skip` counts frames as
 * sys._getframe(skip) would inside a Python capture: 1 is the calling function, 2 its
 * caller. The offset is the frame's f_lasti, in bytes, as Python code reads it.
 *
 * untrack_arguments: an op's arguments (slot -> tuple of names) and its call stack hold no
 * container, so the cyclic collector need never walk them. CPython finds that out itself,
 * a tuple at the first collection that sees it and a dict only at a full collection; until
 * then every op of a live loop adds them to each pass, and the dicts count towards the
 * next full collection. Untracking them when the op is made is what CPython's own check
 * would do later (a dict is tracked again if a container is put in it).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

static PyObject *module_name; /* "<module>", interned */

static int frame_offset(PyFrameObject *frame, PyObject **offset) {
#if PY_VERSION_HEX >= 0x030B0000
    *offset = PyLong_FromLong(PyFrame_GetLasti(frame));
#else
    *offset = PyObject_GetAttrString((PyObject *)frame, "f_lasti");
#endif
    return *offset == NULL ? -1 : 0;
}

#define MOST_FRAMES 64 /* frames one capture keeps at most, whatever it is asked for */

static PyObject *capture(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long skip = 1, max_frames = 32;
    if (nargs > 2)
        return PyErr_Format(PyExc_TypeError, "capture expected at most 2 arguments, got %zd",
                            nargs);
    if (nargs > 0 && (skip = PyLong_AsLong(args[0])) == -1 && PyErr_Occurred())
        return NULL;
    if (nargs > 1 && (max_frames = PyLong_AsLong(args[1])) == -1 && PyErr_Occurred())
        return NULL;
    if (max_frames > MOST_FRAMES)
        max_frames = MOST_FRAMES;
    /* the calling Python function's frame: frame 1 of the count (a C function has none) */
    PyFrameObject *frame = PyEval_GetFrame();
    Py_XINCREF(frame);
    for (long i = 1; i < skip && frame != NULL; i++) {
        PyFrameObject *back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
        frame = back;
    }
    PyObject *items[2 * MOST_FRAMES];
    Py_ssize_t n = 0;
    while (frame != NULL && n < 2 * max_frames) {
        PyCodeObject *code = PyFrame_GetCode(frame); /* (a new reference: the tuple's) */
        PyObject *offset;
        if (frame_offset(frame, &offset) < 0) {
            Py_DECREF(code);
            Py_DECREF(frame);
            while (n > 0)
                Py_DECREF(items[--n]);
            return NULL;
        }
        items[n++] = (PyObject *)code;
        items[n++] = offset;
        PyFrameObject *back = PyUnicode_Compare(code->co_name, module_name) == 0
                                  ? NULL : PyFrame_GetBack(frame);
        Py_DECREF(frame);
        frame = back;
    }
    Py_XDECREF(frame);
    PyObject *stack = PyTuple_New(n);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (stack != NULL)
            PyTuple_SET_ITEM(stack, i, items[i]); /* (steals the reference) */
        else
            Py_DECREF(items[i]);
    }
    if (stack != NULL) /* (code objects and ints: nothing the collector follows) */
        PyObject_GC_UnTrack(stack);
    return stack;
}

/* Whether `value` holds no container: a str, or a tuple of str. */
static int holds_no_container(PyObject *value) {
    if (PyUnicode_CheckExact(value))
        return 1;
    if (!PyTuple_CheckExact(value))
        return 0;
    for (Py_ssize_t i = 0, n = PyTuple_GET_SIZE(value); i < n; i++)
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(value, i)))
            return 0;
    return 1;
}

/* untrack_arguments(*slots): untrack each dict of `slots` whose keys are str and whose values
 * are str or tuples of str, with its tuples; anything else is left as it is. */
static PyObject *untrack_arguments(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    for (Py_ssize_t a = 0; a < nargs; a++) {
        PyObject *slots = args[a];
        if (!PyDict_CheckExact(slots))
            continue;
        Py_ssize_t pos = 0;
        PyObject *slot, *names;
        int plain = 1;
        while (plain && PyDict_Next(slots, &pos, &slot, &names))
            plain = PyUnicode_CheckExact(slot) && holds_no_container(names);
        if (!plain)
            continue;
        for (pos = 0; PyDict_Next(slots, &pos, &slot, &names);)
            if (PyObject_GC_IsTracked(names))
                PyObject_GC_UnTrack(names);
        if (PyObject_GC_IsTracked(slots))
            PyObject_GC_UnTrack(slots);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"untrack_arguments", (PyCFunction)(void (*)(void))untrack_arguments, METH_FASTCALL,
     "untrack_arguments(*slots): untrack each dict of slot -> name or tuple of names (str), "
     "and its tuples: they hold no container for the cyclic collector to walk"},
    {"capture", (PyCFunction)(void (*)(void))capture, METH_FASTCALL,
     "capture(skip=1, max_frames=32): (code, offset, ...) of the calling stack, innermost "
     "first, from frame `skip` (1: the calling function), ending after the first "
     "module-level frame"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_op_record",
                                    "The parts of an appended op's record made in C.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__op_record(void) {
    module_name = PyUnicode_InternFromString("<module>");
    if (module_name == NULL)
        return NULL;
    return PyModule_Create(&module);
}
