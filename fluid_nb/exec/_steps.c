/* The interpreter's steps for ops without duplicable slots (fluid_nb/exec/steps.py: plain,
 * arrays, runtime, general) as C callables.
 *
 * A step reads its inputs (holder.value.array, or holder.value for an op that takes
 * runtime values), calls the op's kernel fn(ctx, *inputs), wraps what it returns in
 * LoDTensors, stores them in the output holders and empties the holders of the
 * temporaries that die there. For the small ops of a
 * training step (W1's fc, W3's loop body) that bookkeeping, in Python closures, was about a
 * third of the interpreter's own bytecodes; here it is one C call per op. The kernel stays
 * Python, and so does every result the common cases below do not cover: such a value goes
 * through LoDTensor(...) or steps.stored(...), so a step stores exactly what the Python
 * flavours store.
 *
 *   PlainStep(fn, ctx, ins, absent, out, src, dead): one output;
 *       out.value = LoDTensor(fn(ctx, *[h.value.array for h in ins], *[None] * absent),
 *                             src.value._lod if src is not None else ())
 *   plain_step(out, fn, ctx, src, *ins): the same, once, made into no object (nothing to
 *       free);
 *   first_run(op, plan, values, set_handler, capsule): a live formula op's first run, its
 *       holders found by name in ``values`` (see first_run below);
 *   KernelStep(fn, ctx, ins, stores, dead, read_values, single): any outputs;
 *       result = fn(ctx, *[None if h is None else h.value if read_values else
 *                          h.value.array for h in ins]),
 *       (result,) when ``single``; for (i, h, source) in stores: if result[i] is not None:
 *           h.value = stored(result[i], lod_of(source))
 *
 * and both then set each holder of ``dead`` to None. A holder that is a ScopeVariable and a
 * value that is a LoDTensor are read (and a holder written) through their slots; a result
 * becomes a LoDTensor through the class itself, whose common case is C as well
 * (tensor/_tensor.c). configure() names the classes once (steps.py calls it on import).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <time.h>

#include "../tensor/_slots.h"

static PyTypeObject *tensor_type;       /* LoDTensor */
static PyTypeObject *tensor_array_type; /* LoDTensorArray */
static PyTypeObject *holder_type;       /* ScopeVariable */
static PyTypeObject *ndarray_type;      /* numpy.ndarray */
static PyObject *stored_fn;             /* steps.stored: every result the fast cases leave */
static Py_ssize_t array_offset, lod_offset, value_offset; /* the slots read and written */
static PyObject *str_value, *str_array, *str_lod;
static PyObject *str_inputs, *str_outputs, *str_attrs, *str_block, *str_program, *str_op;
static PyObject *empty_var_name; /* "@EMPTY@": an output slot bound to no variable */

#if PY_VERSION_HEX >= 0x030D0000
#define LOOKUP_ATTR PyObject_GetOptionalAttr
#else
#define LOOKUP_ATTR _PyObject_LookupAttr /* (1 found, 0 not found, -1 error) */
#endif

#define FEW_ARGUMENTS 8 /* a call's arguments on the C stack; more take the heap */

static int configured(void) {
    if (tensor_type != NULL)
        return 1;
    PyErr_SetString(PyExc_RuntimeError, "fluid_nb.exec._steps: configure() was not called");
    return 0;
}

/* holder.value (a new reference) */
static PyObject *holder_value(PyObject *holder) {
    if (Py_IS_TYPE(holder, holder_type)) {
        PyObject *value = SLOT(holder, value_offset);
        if (value != NULL) {
            Py_INCREF(value);
            return value;
        }
    }
    return PyObject_GetAttr(holder, str_value); /* (an unset slot raises as Python does) */
}

/* holder.value = value */
static int set_holder_value(PyObject *holder, PyObject *value) {
    if (Py_IS_TYPE(holder, holder_type)) {
        PyObject *old = SLOT(holder, value_offset);
        Py_INCREF(value);
        SLOT(holder, value_offset) = value;
        Py_XDECREF(old); /* last: freeing the old value may run any code */
        return 0;
    }
    return PyObject_SetAttr(holder, str_value, value);
}

/* holder.value.array (a new reference) */
static PyObject *holder_array(PyObject *holder) {
    PyObject *value = holder_value(holder);
    if (value == NULL)
        return NULL;
    PyObject *array;
    if (Py_IS_TYPE(value, tensor_type) && SLOT(value, array_offset) != NULL) {
        array = SLOT(value, array_offset);
        Py_INCREF(array);
    } else {
        array = PyObject_GetAttr(value, str_array);
    }
    Py_DECREF(value);
    return array;
}

/* LoDTensor(array, lod); lod NULL: LoDTensor(array) (the constructor's common case is C:
 * tensor/_tensor.c) */
static PyObject *new_tensor(PyObject *array, PyObject *lod) {
    if (lod == NULL)
        return PyObject_CallOneArg((PyObject *)tensor_type, array);
    return PyObject_CallFunctionObjArgs((PyObject *)tensor_type, array, lod, NULL);
}

/* steps.stored(value, lod); lod NULL: no LoD (None) */
static PyObject *stored(PyObject *value, PyObject *lod) {
    PyTypeObject *type = Py_TYPE(value);
    if (lod == NULL) {
        if (type == tensor_type || type == tensor_array_type) {
            Py_INCREF(value);
            return value;
        }
        if (type == ndarray_type)
            return new_tensor(value, NULL);
    }
    return PyObject_CallFunctionObjArgs(stored_fn, value, lod == NULL ? Py_None : lod, NULL);
}

/* steps.lod_of(source): getattr(source.value, "_lod", None) or None, None for no source;
 * *lod is set to a new reference, or NULL for None */
static int lod_of(PyObject *source, PyObject **lod) {
    *lod = NULL;
    if (source == Py_None)
        return 0;
    PyObject *value = holder_value(source);
    if (value == NULL)
        return -1;
    PyObject *found;
    if (Py_IS_TYPE(value, tensor_type) && SLOT(value, lod_offset) != NULL) {
        found = SLOT(value, lod_offset);
        Py_INCREF(found);
    } else if (LOOKUP_ATTR(value, str_lod, &found) < 0) {
        Py_DECREF(value);
        return -1;
    }
    Py_DECREF(value);
    if (found == NULL)
        return 0;
    int truth = PyObject_IsTrue(found);
    if (truth <= 0) {
        Py_DECREF(found);
        return truth;
    }
    *lod = found;
    return 0;
}

static int empty_all(PyObject *dead) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(dead); ++i)
        if (set_holder_value(PyTuple_GET_ITEM(dead, i), Py_None) < 0)
            return -1;
    return 0;
}

/* fn(ctx, the arrays (``read_values``: the values) of the ``count`` holders ``ins`` (None
 * for an absent one), None * absent): the kernel's result (a new reference) */
static PyObject *call_kernel(PyObject *fn, PyObject *ctx, PyObject *const *ins,
                             Py_ssize_t count, Py_ssize_t absent, int read_values) {
    Py_ssize_t total = 1 + count + absent;
    PyObject *few[1 + FEW_ARGUMENTS], **args = few, *result = NULL;
    if (total > 1 + FEW_ARGUMENTS &&
        (args = PyMem_Malloc(total * sizeof(PyObject *))) == NULL)
        return PyErr_NoMemory();
    args[0] = ctx;
    Py_ssize_t read = 0;
    for (; read < count; ++read) {
        PyObject *holder = ins[read];
        if (holder == Py_None) {
            Py_INCREF(Py_None);
            args[1 + read] = Py_None;
        } else if ((args[1 + read] = read_values ? holder_value(holder)
                                                 : holder_array(holder)) == NULL) {
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < absent; ++i)
        args[1 + count + i] = Py_None;
    result = PyObject_Vectorcall(fn, args, total, NULL);
done:
    for (Py_ssize_t i = 0; i < read; ++i)
        Py_DECREF(args[1 + i]);
    if (args != few)
        PyMem_Free(args);
    return result;
}

/* --- PlainStep ------------------------------------------------------------------------ */
typedef struct {
    PyObject_HEAD
    PyObject *fn, *ctx, *ins, *out, *src, *dead; /* src: a holder or None */
    Py_ssize_t absent;
    vectorcallfunc vectorcall;
} PlainStep;

/* out.value = LoDTensor(fn(ctx, *arrays of ins, *[None] * absent), src.value._lod), src
 * None: no LoD; then each holder of ``dead`` (NULL: none) emptied */
static PyObject *run_plain(PyObject *out, PyObject *fn, PyObject *ctx, PyObject *src,
                           PyObject *const *ins, Py_ssize_t count, Py_ssize_t absent,
                           PyObject *dead) {
    PyObject *result = call_kernel(fn, ctx, ins, count, absent, 0);
    if (result == NULL)
        return NULL;
    PyObject *lod = NULL, *tensor;
    if (src != Py_None) {
        PyObject *value = holder_value(src);
        if (value == NULL)
            goto fail;
        if (Py_IS_TYPE(value, tensor_type) && SLOT(value, lod_offset) != NULL) {
            lod = SLOT(value, lod_offset);
            Py_INCREF(lod);
        } else {
            lod = PyObject_GetAttr(value, str_lod);
        }
        Py_DECREF(value);
        if (lod == NULL)
            goto fail;
    }
    tensor = new_tensor(result, lod);
    Py_XDECREF(lod);
    Py_DECREF(result);
    if (tensor == NULL)
        return NULL;
    int stored_ok = set_holder_value(out, tensor);
    Py_DECREF(tensor);
    if (stored_ok < 0 || (dead != NULL && empty_all(dead) < 0))
        return NULL;
    Py_RETURN_NONE;
fail:
    Py_DECREF(result);
    return NULL;
}

static PyObject *plain_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames) {
    PlainStep *self = (PlainStep *)callable;
    if (PyVectorcall_NARGS(nargsf) != 0 || kwnames != NULL)
        return PyErr_Format(PyExc_TypeError, "a step takes no arguments");
    return run_plain(self->out, self->fn, self->ctx, self->src,
                     ((PyTupleObject *)self->ins)->ob_item, PyTuple_GET_SIZE(self->ins),
                     self->absent, self->dead);
}

/* plain_step(out, fn, ctx, src, *ins): a PlainStep's work without the object, for an op
 * that runs once (a live op's first run) */
static PyObject *plain_step(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 4)
        return PyErr_Format(PyExc_TypeError, "plain_step expected out, fn, ctx, src and the "
                            "input holders, got %zd arguments", nargs);
    if (!configured())
        return NULL;
    return run_plain(args[0], args[1], args[2], args[3], args + 4, nargs - 4, 0, NULL);
}

/* --- a live formula op's first run ------------------------------------------------------- */
/* the first name of ``slots[slot]`` (a borrowed reference), or NULL, without an error, when
 * the slot is absent or holds no name */
static PyObject *first_name(PyObject *slots, PyObject *slot) {
    PyObject *names = PyDict_Check(slots) ? PyDict_GetItemWithError(slots, slot) : NULL;
    if (names == NULL || !PyTuple_Check(names) || PyTuple_GET_SIZE(names) == 0)
        return NULL;
    return PyTuple_GET_ITEM(names, 0);
}

/* the holder of ``name`` in ``values`` if it holds a value (a borrowed reference), else NULL
 * without an error */
static PyObject *holder_with_value(PyObject *values, PyObject *name) {
    PyObject *holder = PyDict_GetItemWithError(values, name);
    if (holder == NULL)
        return NULL;
    if (Py_IS_TYPE(holder, holder_type))
        return SLOT(holder, value_offset) != NULL && SLOT(holder, value_offset) != Py_None
            ? holder : NULL;
    PyObject *value = PyObject_GetAttr(holder, str_value);
    if (value == NULL)
        return NULL; /* (an error: the caller checks) */
    int held = value != Py_None;
    Py_DECREF(value);
    return held ? holder : NULL;
}

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* first_run(op, plan, values, set_handler, capsule): the first run of a live op of a formula
 * type (a pure function of its inputs), or None when it is not this path's: an input
 * without a value (the caller provides it), an output left out. plan is
 * (fn, in_slots, out_slot, src_index, ctx): the kernel, the input slots in order, the
 * output slot, the index of the LoD source among the inputs (None: none) and the context
 * the type's first runs share, pointed here at the op (ctx.op, ctx.attrs, ctx.program).
 * values is the scope's name -> holder dict (an output without a holder gets one there, as
 * Scope.var makes it). The kernel runs as plain_step runs it, with NumPy allocating from
 * ``capsule`` (set_handler(capsule) and back; None: no switch). Returns the seconds that
 * took, as time.perf_counter measures them. */
static PyObject *first_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5)
        return PyErr_Format(PyExc_TypeError, "first_run expected op, plan, values, "
                            "set_handler and capsule, got %zd arguments", nargs);
    if (!configured())
        return NULL;
    PyObject *op = args[0], *plan = args[1], *values = args[2], *set_handler = args[3],
             *capsule = args[4];
    if (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != 5 || !PyDict_Check(values) ||
        !PyTuple_Check(PyTuple_GET_ITEM(plan, 1)))
        return PyErr_Format(PyExc_TypeError, "first_run expected a plan (fn, in_slots, "
                            "out_slot, src_index, ctx) and a dict of holders");
    PyObject *fn = PyTuple_GET_ITEM(plan, 0), *in_slots = PyTuple_GET_ITEM(plan, 1),
             *out_slot = PyTuple_GET_ITEM(plan, 2), *src_index = PyTuple_GET_ITEM(plan, 3),
             *ctx = PyTuple_GET_ITEM(plan, 4);
    Py_ssize_t count = PyTuple_GET_SIZE(in_slots);
    if (count > FEW_ARGUMENTS)
        return PyErr_Format(PyExc_ValueError, "first_run expected at most %d input slots, "
                            "got %zd", FEW_ARGUMENTS, count);
    PyObject *ins[FEW_ARGUMENTS], *inputs = NULL, *outputs = NULL, *out = NULL,
             *attrs = NULL, *block = NULL, *program = NULL, *result = NULL;
    Py_ssize_t held = 0;
    if ((inputs = PyObject_GetAttr(op, str_inputs)) == NULL ||
        (outputs = PyObject_GetAttr(op, str_outputs)) == NULL)
        goto done;
    for (; held < count; ++held) {
        PyObject *name = first_name(inputs, PyTuple_GET_ITEM(in_slots, held));
        PyObject *holder = name == NULL ? NULL : holder_with_value(values, name);
        if (holder == NULL)
            goto not_this_path;
        Py_INCREF(holder); /* (the kernel may run any code, a scope change included) */
        ins[held] = holder;
    }
    PyObject *out_name = first_name(outputs, out_slot);
    if (out_name == NULL)
        goto not_this_path;
    int empty = PyUnicode_Compare(out_name, empty_var_name);
    if (empty == -1 && PyErr_Occurred())
        goto done;
    if (empty == 0)
        goto not_this_path;
    out = PyDict_GetItemWithError(values, out_name);
    if (out != NULL) {
        Py_INCREF(out);
    } else {
        if (PyErr_Occurred() ||
            (out = PyObject_CallOneArg((PyObject *)holder_type, out_name)) == NULL ||
            PyDict_SetItem(values, out_name, out) < 0)
            goto done;
    }
    PyObject *src = Py_None;
    if (src_index != Py_None) {
        Py_ssize_t at = PyLong_AsSsize_t(src_index);
        if (at == -1 && PyErr_Occurred())
            goto done;
        if (at < 0 || at >= count) {
            PyErr_Format(PyExc_IndexError, "first_run: src_index %zd out of %zd inputs", at,
                         count);
            goto done;
        }
        src = ins[at];
    }
    if ((attrs = PyObject_GetAttr(op, str_attrs)) == NULL ||
        (block = PyObject_GetAttr(op, str_block)) == NULL ||
        (program = PyObject_GetAttr(block, str_program)) == NULL ||
        PyObject_SetAttr(ctx, str_op, op) < 0 || PyObject_SetAttr(ctx, str_attrs, attrs) < 0 ||
        PyObject_SetAttr(ctx, str_program, program) < 0)
        goto done;
    PyObject *previous = NULL;
    if (capsule != Py_None && (previous = PyObject_CallOneArg(set_handler, capsule)) == NULL)
        goto done;
    double start = seconds_now();
    PyObject *ran = run_plain(out, fn, ctx, src, ins, count, 0, NULL);
    double took = seconds_now() - start;
    if (previous != NULL) { /* back to the allocator before, whatever the kernel did */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyObject *restored = PyObject_CallOneArg(set_handler, previous);
        Py_DECREF(previous);
        if (restored == NULL) {
            Py_CLEAR(ran);
            Py_XDECREF(type), Py_XDECREF(value), Py_XDECREF(traceback);
        } else {
            Py_DECREF(restored);
            PyErr_Restore(type, value, traceback);
        }
    }
    if (ran != NULL) {
        Py_DECREF(ran);
        result = PyFloat_FromDouble(took);
    }
    goto done;
not_this_path:
    if (!PyErr_Occurred()) {
        Py_INCREF(Py_None);
        result = Py_None;
    }
done:
    for (Py_ssize_t i = 0; i < held; ++i)
        Py_DECREF(ins[i]);
    Py_XDECREF(inputs), Py_XDECREF(outputs), Py_XDECREF(out);
    Py_XDECREF(attrs), Py_XDECREF(block), Py_XDECREF(program);
    return result;
}

static PyObject *plain_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *fn, *ctx, *ins, *out, *src, *dead;
    Py_ssize_t absent;
    if (!configured() ||
        !PyArg_ParseTuple(args, "OOO!nOOO!:PlainStep", &fn, &ctx, &PyTuple_Type, &ins, &absent,
                          &out, &src, &PyTuple_Type, &dead))
        return NULL;
    if (absent < 0)
        return PyErr_Format(PyExc_ValueError, "PlainStep: absent expected >= 0, got %zd",
                            absent);
    PlainStep *self = (PlainStep *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(fn), Py_INCREF(ctx), Py_INCREF(ins), Py_INCREF(out), Py_INCREF(src);
    Py_INCREF(dead);
    self->fn = fn, self->ctx = ctx, self->ins = ins, self->out = out, self->src = src;
    self->dead = dead, self->absent = absent;
    self->vectorcall = plain_call;
    return (PyObject *)self;
}

static int plain_traverse(PlainStep *self, visitproc visit, void *arg) {
    Py_VISIT(self->fn); Py_VISIT(self->ctx); Py_VISIT(self->ins); Py_VISIT(self->out);
    Py_VISIT(self->src); Py_VISIT(self->dead);
    return 0;
}

static int plain_clear(PlainStep *self) {
    Py_CLEAR(self->fn); Py_CLEAR(self->ctx); Py_CLEAR(self->ins); Py_CLEAR(self->out);
    Py_CLEAR(self->src); Py_CLEAR(self->dead);
    return 0;
}

static void plain_dealloc(PlainStep *self) {
    PyObject_GC_UnTrack(self);
    plain_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject PlainStepType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fluid_nb.exec._steps.PlainStep",
    .tp_basicsize = sizeof(PlainStep),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "An op's step with one output: see fluid_nb/exec/_steps.c.",
    .tp_new = plain_new,
    .tp_traverse = (traverseproc)plain_traverse,
    .tp_clear = (inquiry)plain_clear,
    .tp_dealloc = (destructor)plain_dealloc,
    .tp_call = PyVectorcall_Call, /* (a type nothing derives from: made by plain_new) */
    .tp_vectorcall_offset = offsetof(PlainStep, vectorcall),
};

/* --- KernelStep ----------------------------------------------------------------------- */
typedef struct {
    PyObject_HEAD
    PyObject *fn, *ctx, *ins, *stores, *dead; /* stores: ((index, holder, source), ...) */
    int read_values, single;
    vectorcallfunc vectorcall;
} KernelStep;

static PyObject *kernel_step_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames) {
    KernelStep *self = (KernelStep *)callable;
    if (PyVectorcall_NARGS(nargsf) != 0 || kwnames != NULL)
        return PyErr_Format(PyExc_TypeError, "a step takes no arguments");
    PyObject *result = call_kernel(self->fn, self->ctx, ((PyTupleObject *)self->ins)->ob_item,
                                   PyTuple_GET_SIZE(self->ins), 0, self->read_values);
    if (result == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(self->stores); ++k) {
        PyObject *entry = PyTuple_GET_ITEM(self->stores, k), *value;
        if (self->single) {
            value = result;
            Py_INCREF(value);
        } else if ((value = PySequence_GetItem(result, PyLong_AsSsize_t(
                                                           PyTuple_GET_ITEM(entry, 0)))) == NULL) {
            goto fail;
        }
        if (value == Py_None) {
            Py_DECREF(value);
            continue;
        }
        PyObject *lod, *kept;
        if (lod_of(PyTuple_GET_ITEM(entry, 2), &lod) < 0) {
            Py_DECREF(value);
            goto fail;
        }
        kept = stored(value, lod);
        Py_XDECREF(lod);
        Py_DECREF(value);
        if (kept == NULL)
            goto fail;
        int stored_ok = set_holder_value(PyTuple_GET_ITEM(entry, 1), kept);
        Py_DECREF(kept);
        if (stored_ok < 0)
            goto fail;
    }
    Py_DECREF(result);
    if (empty_all(self->dead) < 0)
        return NULL;
    Py_RETURN_NONE;
fail:
    Py_DECREF(result);
    return NULL;
}

static PyObject *kernel_step_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *fn, *ctx, *ins, *stores, *dead;
    int read_values, single;
    if (!configured() ||
        !PyArg_ParseTuple(args, "OOO!O!O!pp:KernelStep", &fn, &ctx, &PyTuple_Type, &ins,
                          &PyTuple_Type, &stores, &PyTuple_Type, &dead, &read_values,
                          &single))
        return NULL;
    if (single && PyTuple_GET_SIZE(stores) > 1)
        return PyErr_Format(PyExc_ValueError, "KernelStep: a single result stored in %zd "
                            "outputs", PyTuple_GET_SIZE(stores));
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(stores); ++k) {
        PyObject *entry = PyTuple_GET_ITEM(stores, k);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3 ||
            !PyLong_Check(PyTuple_GET_ITEM(entry, 0)))
            return PyErr_Format(PyExc_TypeError, "KernelStep: stores expected (index, holder, "
                                "source) triples, got %R", entry);
    }
    KernelStep *self = (KernelStep *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(fn), Py_INCREF(ctx), Py_INCREF(ins), Py_INCREF(stores), Py_INCREF(dead);
    self->fn = fn, self->ctx = ctx, self->ins = ins, self->stores = stores, self->dead = dead;
    self->read_values = read_values, self->single = single;
    self->vectorcall = kernel_step_call;
    return (PyObject *)self;
}

static int kernel_step_traverse(KernelStep *self, visitproc visit, void *arg) {
    Py_VISIT(self->fn); Py_VISIT(self->ctx); Py_VISIT(self->ins); Py_VISIT(self->stores);
    Py_VISIT(self->dead);
    return 0;
}

static int kernel_step_clear(KernelStep *self) {
    Py_CLEAR(self->fn); Py_CLEAR(self->ctx); Py_CLEAR(self->ins); Py_CLEAR(self->stores);
    Py_CLEAR(self->dead);
    return 0;
}

static void kernel_step_dealloc(KernelStep *self) {
    PyObject_GC_UnTrack(self);
    kernel_step_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject KernelStepType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fluid_nb.exec._steps.KernelStep",
    .tp_basicsize = sizeof(KernelStep),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "An op's step storing what its kernel returns: see fluid_nb/exec/_steps.c.",
    .tp_new = kernel_step_new,
    .tp_traverse = (traverseproc)kernel_step_traverse,
    .tp_clear = (inquiry)kernel_step_clear,
    .tp_dealloc = (destructor)kernel_step_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(KernelStep, vectorcall),
};

/* --- configure ------------------------------------------------------------------------ */
static PyObject *configure(PyObject *module, PyObject *args) {
    PyObject *tensor, *tensor_array, *holder, *ndarray, *stored_callable;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O:configure", &PyType_Type, &tensor, &PyType_Type,
                          &tensor_array, &PyType_Type, &holder, &PyType_Type, &ndarray,
                          &stored_callable))
        return NULL;
    Py_ssize_t array_at, lod_at, value_at;
    if (slot_offset((PyTypeObject *)tensor, "array", &array_at) < 0 ||
        slot_offset((PyTypeObject *)tensor, "_lod", &lod_at) < 0 ||
        slot_offset((PyTypeObject *)holder, "value", &value_at) < 0)
        return NULL;
    Py_INCREF(tensor), Py_INCREF(tensor_array), Py_INCREF(holder), Py_INCREF(ndarray);
    Py_INCREF(stored_callable);
    Py_XSETREF(tensor_type, (PyTypeObject *)tensor);
    Py_XSETREF(tensor_array_type, (PyTypeObject *)tensor_array);
    Py_XSETREF(holder_type, (PyTypeObject *)holder);
    Py_XSETREF(ndarray_type, (PyTypeObject *)ndarray);
    Py_XSETREF(stored_fn, stored_callable);
    array_offset = array_at, lod_offset = lod_at, value_offset = value_at;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"plain_step", (PyCFunction)(void (*)(void))plain_step, METH_FASTCALL,
     "plain_step(out, fn, ctx, src, *ins): what a PlainStep of these does when called."},
    {"first_run", (PyCFunction)(void (*)(void))first_run, METH_FASTCALL,
     "first_run(op, plan, values, set_handler, capsule): a live formula op's first run in one "
     "call; the seconds it took, or None when the op is not this path's."},
    {"configure", configure, METH_VARARGS,
     "configure(LoDTensor, LoDTensorArray, ScopeVariable, numpy.ndarray, stored): the "
     "classes the steps make and read, and the function that stores what they do not "
     "store themselves."},
    {NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_steps",
                                    "The interpreter's steps in C: see _steps.c.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__steps(void) {
    if (PyType_Ready(&PlainStepType) < 0 || PyType_Ready(&KernelStepType) < 0)
        return NULL;
    static struct { PyObject **name; const char *text; } const names[] = {
        {&str_value, "value"},     {&str_array, "array"},       {&str_lod, "_lod"},
        {&str_inputs, "inputs"},   {&str_outputs, "outputs"},   {&str_attrs, "attrs"},
        {&str_block, "block"},     {&str_program, "program"},   {&str_op, "op"},
        {&empty_var_name, "@EMPTY@"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i)
        if ((*names[i].name = PyUnicode_InternFromString(names[i].text)) == NULL)
            return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&PlainStepType);
    Py_INCREF(&KernelStepType);
    if (PyModule_AddObject(m, "PlainStep", (PyObject *)&PlainStepType) < 0 ||
        PyModule_AddObject(m, "KernelStep", (PyObject *)&KernelStepType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
