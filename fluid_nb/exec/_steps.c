/* The interpreter's steps for ops without duplicable slots (fluid_nb/exec/steps.py: plain,
 * arrays, runtime, general) as C callables, and a run that repeats the executor's last one
 * (fast_run, at the end).
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
 *   first_run(op, plan, values, set_handler, capsule): a live op's first run, its holders
 *       found by name in ``values``, with the plain step or the general one (see first_run
 *       below);
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
 *
 *   drop_unreachable(...): a live session's look for the values nobody can reach (see
 *       below);
 *   fast_run(last, executor, program, feed, fetch_list, scope, return_numpy, feed_var_name,
 *            fetch_var_name, use_prune): Executor.run's common case, the run before
 *       again, in one call (see fast_run below); NotImplemented for any other run.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <time.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include "../tensor/_slots.h"
#include "../tensor/_kept.h"

static PyTypeObject *tensor_type;       /* LoDTensor */
static PyTypeObject *tensor_array_type; /* LoDTensorArray */
static PyTypeObject *holder_type;       /* ScopeVariable */
static PyTypeObject *ndarray_type;      /* numpy.ndarray */
static PyObject *stored_fn;             /* steps.stored: every result the fast cases leave */
static Py_ssize_t array_offset, lod_offset, value_offset, name_offset; /* the slots read and
                                                                      * written */
static PyObject *str_value, *str_array, *str_lod;
static PyObject *str_inputs, *str_outputs, *str_attrs, *str_block, *str_program;
static PyObject *empty_var_name; /* "@EMPTY@": an output slot bound to no variable */
static PyObject *str_version, *str_recording, *str_trace, *str_watch, *str_run_token;
static PyObject *str_kids, *str_fast, *str_step_failed, *str_run_reporter, *str_global_scope;
static PyObject *fetched_array_type;  /* feed_fetch.FetchedArray */
static PyObject *one_int;             /* 1 */
static PyObject *as_declared_scalar_fn, *fetched_fn; /* feed_fetch's, for what fast_run leaves */

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

/* ScopeVariable(name): a new holder of no value, its slots written here (its __init__ is a
 * Python frame, a tenth of a live op's first run) */
static PyObject *new_holder(PyObject *name) {
    PyObject *holder = holder_type->tp_alloc(holder_type, 0);
    if (holder == NULL)
        return NULL;
    Py_INCREF(name), Py_INCREF(Py_None);
    SLOT(holder, name_offset) = name;
    SLOT(holder, value_offset) = Py_None;
    return holder;
}

/* holder.value = value. A holder given an untracked LoDTensor (an array and its LoD) is
 * left out of the cyclic collector's passes, which would otherwise walk each of a live
 * loop's holders until its value is let go: a name and a tensor close no cycle, nor do
 * the other values this file stores (tensor arrays, feed and fetch lists). Only a list of
 * step scopes refers back to a scope, and a loop's step scopes go to a holder of their
 * own (a STEP_SCOPES variable), which no tensor is stored in. */
static int set_holder_value(PyObject *holder, PyObject *value) {
    if (Py_IS_TYPE(holder, holder_type)) {
        PyObject *old = SLOT(holder, value_offset);
        if (Py_IS_TYPE(value, tensor_type) && !PyObject_GC_IsTracked(value) &&
            PyObject_GC_IsTracked(holder))
            PyObject_GC_UnTrack(holder);
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

/* holder.value = stored(value, lod_of(source)) for the kernel's ``result`` (value: the
 * result itself when ``single``, else result[index]); a None value leaves the holder as it
 * was. 0, or -1 with an error */
static int store_output(PyObject *result, Py_ssize_t index, int single, PyObject *holder,
                        PyObject *source) {
    PyObject *value, *lod, *kept;
    if (single) {
        value = result;
        Py_INCREF(value);
    } else if ((value = PySequence_GetItem(result, index)) == NULL) {
        return -1;
    }
    if (value == Py_None) {
        Py_DECREF(value);
        return 0;
    }
    if (lod_of(source, &lod) < 0) {
        Py_DECREF(value);
        return -1;
    }
    kept = stored(value, lod);
    Py_XDECREF(lod);
    Py_DECREF(value);
    if (kept == NULL)
        return -1;
    int done = set_holder_value(holder, kept);
    Py_DECREF(kept);
    return done;
}

/* values[name], made where missing as Scope.var makes it (a new reference) */
static PyObject *named_holder(PyObject *values, PyObject *name) {
    PyObject *holder = PyDict_GetItemWithError(values, name);
    if (holder != NULL)
        return Py_NewRef(holder);
    if (PyErr_Occurred() || (holder = new_holder(name)) == NULL)
        return NULL;
    if (PyDict_SetItem(values, name, holder) < 0) {
        Py_DECREF(holder);
        return NULL;
    }
    return holder;
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

/* --- NumPy allocating from the host arena ----------------------------------------------- */
/* NumPy's data allocator is a context variable: setting it and back made two new mappings
 * of the context's variables for every run and every live op (about 1,400 instructions
 * each, and garbage for the collector). Entering a context is a pointer swap, so the
 * kernels run in a copy of the caller's context that holds the arena's handler, made once
 * and kept while the caller's context holds the same variables (the same mapping: a
 * pointer compare) and the same arena is asked for. Nothing changes in the caller's
 * context. A copy that is already entered (a run inside a kernel, or another thread's)
 * cannot be entered again: the handler is then set and put back as before. */
static PyObject *arena_capsule, *arena_base, *arena_context;

typedef struct {
    PyObject *context;  /* the copy entered, or NULL */
    PyObject *previous; /* the handler to put back when set instead, or NULL */
} Allocating;

/* 0 when NumPy allocates from ``capsule`` (None: the allocator as it is) until
 * stop_allocating, -1 with an error */
static int start_allocating(PyObject *set_handler, PyObject *capsule, Allocating *a) {
    a->context = a->previous = NULL;
    if (capsule == Py_None)
        return 0;
    PyObject *current = PyContext_CopyCurrent();
    if (current == NULL)
        return -1;
    int same = arena_context != NULL && capsule == arena_capsule
                   ? PyObject_RichCompareBool(current, arena_base, Py_EQ) : 0;
    if (same < 0) { /* (a variable's value that cannot be compared: a copy made anew) */
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            Py_DECREF(current);
            return -1;
        }
        PyErr_Clear();
        same = 0;
    }
    if (!same) { /* a copy of the caller's context with the arena's handler set in it */
        PyObject *context = PyContext_Copy(current);
        if (context == NULL || PyContext_Enter(context) < 0) {
            Py_XDECREF(context);
            Py_DECREF(current);
            return -1;
        }
        PyObject *previous = PyObject_CallOneArg(set_handler, capsule);
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        int exited = PyContext_Exit(context);
        if (previous == NULL || exited < 0) {
            Py_XDECREF(previous);
            Py_DECREF(context);
            Py_DECREF(current);
            if (previous == NULL) { /* the handler's error, not the exit's */
                PyErr_Clear();
                PyErr_Restore(type, value, traceback);
            }
            return -1;
        }
        Py_DECREF(previous);
        Py_INCREF(capsule);
        Py_XSETREF(arena_capsule, capsule);
        Py_XSETREF(arena_base, current);
        Py_XSETREF(arena_context, context);
    } else { /* (kept as the base: an equal mapping made anew compares by pointer next) */
        Py_XSETREF(arena_base, current);
    }
    PyObject *context = arena_context;
    Py_INCREF(context);
    if (PyContext_Enter(context) == 0) {
        a->context = context;
        return 0;
    }
    Py_DECREF(context);
    if (!PyErr_ExceptionMatches(PyExc_RuntimeError)) /* (entered already) */
        return -1;
    PyErr_Clear();
    a->previous = PyObject_CallOneArg(set_handler, capsule);
    return a->previous == NULL ? -1 : 0;
}

/* NumPy's allocator back to the caller's, whatever ran since start_allocating (an error
 * it raised is kept): 0, or -1 when putting it back failed (with that error, unless what
 * ran raised one) */
static int stop_allocating(PyObject *set_handler, Allocating *a) {
    if (a->context == NULL && a->previous == NULL)
        return 0;
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    int failed;
    if (a->context != NULL) {
        failed = PyContext_Exit(a->context) < 0;
        Py_CLEAR(a->context);
    } else {
        PyObject *restored = PyObject_CallOneArg(set_handler, a->previous);
        Py_CLEAR(a->previous);
        failed = restored == NULL;
        Py_XDECREF(restored);
    }
    if (failed && type != NULL) /* (the error of what ran wins) */
        PyErr_Clear();
    if (!failed || type != NULL)
        PyErr_Restore(type, value, traceback);
    return failed ? -1 : 0;
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

/* the holder of ``name`` in ``values`` if it holds a LoDTensor (a borrowed reference), else
 * NULL without an error (a SelectedRows or an array of tensors is the kernel's own case) */
static PyObject *holder_with_tensor(PyObject *values, PyObject *name) {
    PyObject *holder = PyDict_GetItemWithError(values, name);
    if (holder == NULL)
        return NULL;
    if (Py_IS_TYPE(holder, holder_type))
        return SLOT(holder, value_offset) != NULL &&
                       Py_IS_TYPE(SLOT(holder, value_offset), tensor_type)
                   ? holder : NULL;
    PyObject *value = PyObject_GetAttr(holder, str_value);
    if (value == NULL)
        return NULL; /* (an error: the caller checks) */
    int held = Py_IS_TYPE(value, tensor_type);
    Py_DECREF(value);
    return held ? holder : NULL;
}

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* Operator's slots that the live paths read and write (LiveHook, first_run, the look for
 * values nobody holds), found once from the class: an attribute read or write from C was
 * a quarter of first_run's own instructions. An object of another class is read and
 * written by attribute. KernelContext's slots, all of which first_run's copy writes, are
 * found likewise. */
static PyTypeObject *operator_class, *known_ctx_type;
static Py_ssize_t op_block_at, op_type_at, op_inputs_at, op_outputs_at, op_attrs_at,
    op_source_at;
static Py_ssize_t ctx_op_at, ctx_attrs_at, ctx_program_at, ctx_cache_at, ctx_wanted_at;
/* every object slot of the context class, which a fresh context copies from its template */
#define MAX_CTX_SLOTS 24
static Py_ssize_t ctx_slot_at[MAX_CTX_SLOTS], ctx_slot_count;

/* Operator's slot offsets from ``type`` (0), or a TypeError (-1) when it lacks one */
static int find_operator_slots(PyTypeObject *type) {
    if (type == operator_class)
        return 0;
    Py_ssize_t at[6];
    static const char *const names[6] = {"block", "type", "inputs", "outputs", "attrs",
                                         "_source"};
    for (int i = 0; i < 6; ++i)
        if (slot_offset(type, names[i], &at[i]) < 0)
            return -1;
    Py_INCREF(type);
    Py_XSETREF(operator_class, type);
    op_block_at = at[0], op_type_at = at[1], op_inputs_at = at[2], op_outputs_at = at[3];
    op_attrs_at = at[4], op_source_at = at[5];
    return 0;
}

/* whether ``op`` is an Operator whose slots are known (the class found from the first op
 * seen, unless a LiveHook named it first) */
static int op_slots_known(PyObject *op) {
    if (Py_IS_TYPE(op, operator_class))
        return 1;
    if (operator_class != NULL)
        return 0;
    if (find_operator_slots(Py_TYPE(op)) == 0)
        return 1;
    PyErr_Clear();
    return 0;
}

static int ctx_slots_known(PyObject *ctx) {
    PyTypeObject *type = Py_TYPE(ctx);
    if (type == known_ctx_type)
        return 1;
    Py_ssize_t op, attrs, program, cache, wanted, count = 0;
    if (slot_offset(type, "op", &op) < 0 || slot_offset(type, "attrs", &attrs) < 0 ||
        slot_offset(type, "program", &program) < 0 || slot_offset(type, "cache", &cache) < 0 ||
        slot_offset(type, "_wanted", &wanted) < 0) {
        PyErr_Clear();
        return 0;
    }
    /* (a class with a __dict__ or a slot not an object's is not copied slot by slot) */
    if (type->tp_dictoffset != 0 || type->tp_members == NULL ||
        type->tp_base != &PyBaseObject_Type)
        return 0;
    for (PyMemberDef *member = type->tp_members; member->name != NULL; ++member) {
        if (member->type != T_OBJECT_EX || count == MAX_CTX_SLOTS)
            return 0;
        ctx_slot_at[count++] = member->offset;
    }
    Py_INCREF(type);
    Py_XSETREF(known_ctx_type, type);
    ctx_op_at = op, ctx_attrs_at = attrs, ctx_program_at = program, ctx_cache_at = cache;
    ctx_wanted_at = wanted;
    ctx_slot_count = count;
    return 1;
}

/* A context of its own for ``op``: a copy of ``template`` (a context of the known class)
 * with the op, its attributes, its program and an empty cache (a new reference). The
 * slots are written here: the class's __init__ is a Python frame as long as the rest of a
 * first run. */
static PyObject *context_for(PyObject *template, PyObject *op, PyObject *attrs,
                             PyObject *program) {
    PyTypeObject *type = Py_TYPE(template);
    PyObject *cache = PyDict_New();
    if (cache == NULL)
        return NULL;
    PyObject *ctx = type->tp_alloc(type, 0);
    if (ctx == NULL) {
        Py_DECREF(cache);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < ctx_slot_count; ++i) {
        Py_ssize_t at = ctx_slot_at[i];
        PyObject *value = at == ctx_op_at ? op : at == ctx_attrs_at ? attrs :
                          at == ctx_program_at ? program : SLOT(template, at);
        Py_XINCREF(value);
        SLOT(ctx, at) = value;
    }
    Py_XSETREF(SLOT(ctx, ctx_cache_at), cache);
    return ctx;
}

/* obj.name (a new reference), from its slot at ``at`` when ``known`` */
static PyObject *field_of(PyObject *obj, int known, Py_ssize_t at, PyObject *name) {
    PyObject *value = known ? SLOT(obj, at) : NULL;
    if (value == NULL) /* (not known, or unset: the attribute read raises) */
        return PyObject_GetAttr(obj, name);
    Py_INCREF(value);
    return value;
}

/* The context ``op``'s first run calls its kernel with (a new reference): ``ctx`` pointed
 * at the op (ctx.op, ctx.attrs, ctx.program) when the type's first runs share it, else
 * context_for's copy. ``op_known``: its slots are read by offset. */
static PyObject *run_context(PyObject *op, int op_known, PyObject *ctx, int shared) {
    PyObject *attrs = NULL, *block = NULL, *program = NULL, *run_ctx = NULL;
    if ((attrs = field_of(op, op_known, op_attrs_at, str_attrs)) == NULL ||
        (block = field_of(op, op_known, op_block_at, str_block)) == NULL ||
        (program = PyObject_GetAttr(block, str_program)) == NULL)
        goto done;
    if (!shared) {
        run_ctx = context_for(ctx, op, attrs, program);
        goto done;
    }
    Py_INCREF(op), Py_INCREF(attrs), Py_INCREF(program);
    Py_XSETREF(SLOT(ctx, ctx_op_at), op);
    Py_XSETREF(SLOT(ctx, ctx_attrs_at), attrs);
    Py_XSETREF(SLOT(ctx, ctx_program_at), program);
    Py_INCREF(ctx);
    run_ctx = ctx;
done:
    Py_XDECREF(attrs), Py_XDECREF(block), Py_XDECREF(program);
    return run_ctx;
}

/* A first run's answer once its kernel ran (``ran``: it and the stores succeeded): the
 * allocator switched back, then the seconds since ``start`` (a float), or NULL with the
 * error */
static PyObject *ran_for(PyObject *set_handler, Allocating *allocating, int ran,
                         double start) {
    double took = seconds_now() - start;
    if (stop_allocating(set_handler, allocating) < 0 || !ran)
        return NULL;
    return PyFloat_FromDouble(took);
}

/* A first run's answer for an op it hands back: None, unless an error was raised */
static PyObject *handed_back(void) {
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* first_run(op, plan, values, set_handler, capsule): the first run of a live op, or None
 * when it is not this path's: an input without a LoDTensor (the caller provides a missing
 * value, the kernel takes other kinds), an input besides the plan's, an output left out.
 * plan is (fn, in_slots, out_slot, src_index, ctx, shared) for an op of one output: the
 * kernel, the input slots in order, the output slot, the index of the LoD source among
 * the inputs (None: none) and the context, which the type's first runs share (``shared``:
 * a kernel that is a pure function of its inputs and attributes), pointed here at the op
 * (ctx.op, ctx.attrs, ctx.program), or which each copies for its op (context_for). A plan
 * naming a tuple of output slots is the general step's (general_first_run below). values is the scope's name -> holder dict (an output
 * without a holder gets one there, as Scope.var makes it). The kernel runs as plain_step
 * runs it, with NumPy allocating from ``capsule`` (set_handler(capsule) and back; None: no
 * switch). Returns the seconds that took, as time.perf_counter measures them. */
static PyObject *general_first_run(PyObject *op, PyObject *plan, PyObject *values,
                                   PyObject *set_handler, PyObject *capsule);

static PyObject *first_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5)
        return PyErr_Format(PyExc_TypeError, "first_run expected op, plan, values, "
                            "set_handler and capsule, got %zd arguments", nargs);
    if (!configured())
        return NULL;
    PyObject *op = args[0], *plan = args[1], *values = args[2], *set_handler = args[3],
             *capsule = args[4];
    if (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != 6 || !PyDict_Check(values) ||
        !PyTuple_Check(PyTuple_GET_ITEM(plan, 1)))
        return PyErr_Format(PyExc_TypeError, "first_run expected a plan (fn, in_slots, "
                            "out_slot, src_index, ctx, shared) or (fn, in_slots, out_slots, "
                            "lod_sources, ctx, read_values) and a dict of holders");
    if (PyTuple_Check(PyTuple_GET_ITEM(plan, 2)))
        return general_first_run(op, plan, values, set_handler, capsule);
    PyObject *fn = PyTuple_GET_ITEM(plan, 0), *in_slots = PyTuple_GET_ITEM(plan, 1),
             *out_slot = PyTuple_GET_ITEM(plan, 2), *src_index = PyTuple_GET_ITEM(plan, 3),
             *ctx = PyTuple_GET_ITEM(plan, 4);
    int shared = PyObject_IsTrue(PyTuple_GET_ITEM(plan, 5));
    if (shared < 0)
        return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(in_slots);
    if (count > FEW_ARGUMENTS)
        return PyErr_Format(PyExc_ValueError, "first_run expected at most %d input slots, "
                            "got %zd", FEW_ARGUMENTS, count);
    PyObject *ins[FEW_ARGUMENTS], *inputs = NULL, *outputs = NULL, *out = NULL,
             *run_ctx = NULL, *result = NULL;
    Py_ssize_t held = 0;
    int op_known = op_slots_known(op);
    if (!ctx_slots_known(ctx))
        goto not_this_path; /* (a context this function cannot write or copy) */
    if ((inputs = field_of(op, op_known, op_inputs_at, str_inputs)) == NULL ||
        (outputs = field_of(op, op_known, op_outputs_at, str_outputs)) == NULL)
        goto done;
    /* (an op with inputs besides the plan's: scale's ScaleTensor is its kernel's case; the
     * plan's last slots may be left out, optional ones the kernel is given None for, as
     * the general binder gives it: one_hot's depth_tensor) */
    if (!PyDict_Check(inputs) || PyDict_GET_SIZE(inputs) > count || PyDict_GET_SIZE(inputs) == 0)
        goto not_this_path;
    Py_ssize_t given = PyDict_GET_SIZE(inputs);
    for (; held < given; ++held) {
        PyObject *name = first_name(inputs, PyTuple_GET_ITEM(in_slots, held));
        PyObject *holder = name == NULL ? NULL : holder_with_tensor(values, name);
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
            (out = new_holder(out_name)) == NULL ||
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
        if (at >= given)
            goto not_this_path; /* (the LoD source left out) */
        src = ins[at];
    }
    /* (a context's copy costs a pure kernel's first run 2% of its time: shared) */
    if ((run_ctx = run_context(op, op_known, ctx, shared)) == NULL)
        goto done;
    Allocating allocating;
    if (start_allocating(set_handler, capsule, &allocating) < 0)
        goto done;
    double start = seconds_now();
    PyObject *ran = run_plain(out, fn, run_ctx, src, ins, given, count - given, NULL);
    result = ran_for(set_handler, &allocating, ran != NULL, start);
    Py_XDECREF(ran);
    goto done;
not_this_path:
    result = handed_back();
done:
    for (Py_ssize_t i = 0; i < held; ++i)
        Py_DECREF(ins[i]);
    Py_XDECREF(inputs), Py_XDECREF(outputs), Py_XDECREF(out), Py_XDECREF(run_ctx);
    return result;
}

/* The names an op keeps in ``slot`` of ``slots`` (a dict of tuples): 1 and *names (borrowed)
 * when the slot is there, 0 when it is not, -1 on error */
static int slot_names(PyObject *slots, PyObject *slot, PyObject **names) {
    *names = PyDict_GetItemWithError(slots, slot);
    if (*names == NULL)
        return PyErr_Occurred() ? -1 : 0;
    return 1;
}

/* holder.value (read_values) or holder.value.array for each of ``holders`` (a list), as a
 * new list */
static PyObject *read_list(PyObject *holders, int read_values) {
    Py_ssize_t n = PyList_GET_SIZE(holders);
    PyObject *read = PyList_New(n);
    if (read == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *holder = PyList_GET_ITEM(holders, i);
        PyObject *value = read_values ? holder_value(holder) : holder_array(holder);
        if (value == NULL) {
            Py_DECREF(read);
            return NULL;
        }
        PyList_SET_ITEM(read, i, value);
    }
    return read;
}

/* first_run's general case, plan (fn, in_slots, out_slots, lod_sources, ctx, read_values):
 * any op (binding.once_step is the definition: the general step over the op's holders,
 * nothing kept). in_slots and out_slots: (slot, duplicable) pairs in the definition's
 * order; lod_sources: per output, the index among in_slots of the input whose LoD it takes
 * (a duplicable slot's first), or None;
 * ctx: the context each run copies for its op (its _wanted the slots out_slots names);
 * read_values: the kernel takes runtime values (LoDTensors), not arrays.
 *
 *   result = fn(ctx, *[None for an absent slot, a list for a duplicable one, else the
 *                      holder's value or array]), (result,) for one output slot;
 *   for each output named: if result[k] is not None:
 *       holder.value = stored(result[k], lod_of(its LoD source's holder))
 *   (a duplicable output slot: result[k] a sequence, its i-th item stored so in the
 *   holder of the slot's i-th name, an empty name's left out)
 *
 * None, before anything was changed, when an input or output is not this path's: an input
 * whose holder holds no LoDTensor (the caller provides a missing value; the kernel takes
 * other kinds), a slot the plan does not name, a slot of one variable given several. */
static int store_outputs(PyObject *result, Py_ssize_t index, int single, PyObject *holders,
                         PyObject *source) {
    PyObject *items = single ? Py_NewRef(result) : PySequence_GetItem(result, index);
    if (items == NULL)
        return -1;
    if (items == Py_None) {
        Py_DECREF(items);
        return 0;
    }
    Py_ssize_t n = PyList_GET_SIZE(holders);
    PyObject *seq = PySequence_Fast(items, "a duplicable output expected a sequence");
    Py_DECREF(items);
    if (seq == NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(seq) < n) {
        PyErr_Format(PyExc_ValueError, "first_run: a duplicable output of %zd names given "
                     "%zd values", n, PySequence_Fast_GET_SIZE(seq));
        Py_DECREF(seq);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *holder = PyList_GET_ITEM(holders, i);
        if (holder != Py_None &&
            store_output(PySequence_Fast_GET_ITEM(seq, i), 0, 1, holder, source) < 0) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

static PyObject *general_first_run(PyObject *op, PyObject *plan, PyObject *values,
                                   PyObject *set_handler, PyObject *capsule) {
    PyObject *fn = PyTuple_GET_ITEM(plan, 0), *in_slots = PyTuple_GET_ITEM(plan, 1),
             *out_slots = PyTuple_GET_ITEM(plan, 2), *sources = PyTuple_GET_ITEM(plan, 3),
             *ctx = PyTuple_GET_ITEM(plan, 4);
    int read_values = PyObject_IsTrue(PyTuple_GET_ITEM(plan, 5));
    if (read_values < 0)
        return NULL;
    if (!PyTuple_Check(out_slots) || !PyTuple_Check(sources) ||
        PyTuple_GET_SIZE(sources) != PyTuple_GET_SIZE(out_slots))
        return PyErr_Format(PyExc_TypeError, "first_run expected out_slots and lod_sources "
                            "as tuples of one length");
    Py_ssize_t n_in = PyTuple_GET_SIZE(in_slots), n_out = PyTuple_GET_SIZE(out_slots);
    if (n_in > FEW_ARGUMENTS || n_out > FEW_ARGUMENTS)
        return PyErr_Format(PyExc_ValueError, "first_run expected at most %d input and output "
                            "slots, got %zd and %zd", FEW_ARGUMENTS, n_in, n_out);
    /* ins[i]: None, a holder or a list of holders (new references); outs[k]: a holder or
     * NULL (the slot names no variable) */
    PyObject *ins[FEW_ARGUMENTS], *out_names[FEW_ARGUMENTS], *outs[FEW_ARGUMENTS] = {NULL};
    PyObject *call[1 + FEW_ARGUMENTS] = {NULL};
    PyObject *inputs = NULL, *outputs = NULL, *run_ctx = NULL, *result = NULL, *ran = NULL,
             *wanted = NULL;
    Py_ssize_t held = 0, made = 0, named = 0, read = 0, given = 0;
    int op_known = op_slots_known(op);
    if (!ctx_slots_known(ctx))
        goto not_this_path;
    if ((inputs = field_of(op, op_known, op_inputs_at, str_inputs)) == NULL ||
        (outputs = field_of(op, op_known, op_outputs_at, str_outputs)) == NULL)
        goto done;
    if (!PyDict_Check(inputs) || !PyDict_Check(outputs))
        goto not_this_path;
    for (; held < n_in; ++held) {
        PyObject *spec = PyTuple_GET_ITEM(in_slots, held), *names;
        if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 2) {
            PyErr_Format(PyExc_TypeError, "first_run expected (slot, duplicable) pairs, "
                         "got %R", spec);
            goto done;
        }
        int found = slot_names(inputs, PyTuple_GET_ITEM(spec, 0), &names);
        if (found < 0)
            goto done;
        if (found)
            ++given;
        if (!found || (PyTuple_Check(names) && PyTuple_GET_SIZE(names) == 0)) {
            Py_INCREF(Py_None);
            ins[held] = Py_None;
            continue;
        }
        if (!PyTuple_Check(names))
            goto not_this_path;
        Py_ssize_t n = PyTuple_GET_SIZE(names);
        if (PyTuple_GET_ITEM(spec, 1) != Py_True) {
            PyObject *holder = n == 1 ? holder_with_tensor(values, PyTuple_GET_ITEM(names, 0))
                                      : NULL;
            if (holder == NULL)
                goto not_this_path;
            Py_INCREF(holder); /* (the kernel may run any code, a scope change included) */
            ins[held] = holder;
            continue;
        }
        PyObject *holders = PyList_New(n);
        if (holders == NULL)
            goto done;
        ins[held] = holders;
        for (Py_ssize_t i = 0; i < n; ++i) {
            PyObject *holder = holder_with_tensor(values, PyTuple_GET_ITEM(names, i));
            if (holder == NULL) {
                ++held; /* (the list is let go below) */
                goto not_this_path;
            }
            Py_INCREF(holder);
            PyList_SET_ITEM(holders, i, holder);
        }
    }
    if (given != PyDict_GET_SIZE(inputs))
        goto not_this_path; /* (a slot the plan does not name) */
    given = 0;
    for (Py_ssize_t k = 0; k < n_out; ++k) {
        PyObject *spec = PyTuple_GET_ITEM(out_slots, k), *names;
        if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 2) {
            PyErr_Format(PyExc_TypeError, "first_run expected (slot, duplicable) pairs, "
                         "got %R", spec);
            goto done;
        }
        int found = slot_names(outputs, PyTuple_GET_ITEM(spec, 0), &names);
        if (found < 0)
            goto done;
        out_names[k] = NULL;
        if (!found)
            continue;
        ++given;
        if (!PyTuple_Check(names))
            goto not_this_path;
        int duplicable = PyTuple_GET_ITEM(spec, 1) == Py_True;
        if (PyTuple_GET_SIZE(names) > 1 && !duplicable)
            goto not_this_path;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); ++i) {
            int empty = PyUnicode_Compare(PyTuple_GET_ITEM(names, i), empty_var_name);
            if (empty == -1 && PyErr_Occurred())
                goto done;
            if (empty != 0) { /* (a slot naming a variable: a duplicable one, its names) */
                out_names[k] = duplicable ? names : PyTuple_GET_ITEM(names, 0), ++named;
                break;
            }
        }
    }
    if (given != PyDict_GET_SIZE(outputs))
        goto not_this_path;
    /* the op is this path's: its output holders, made where missing as Scope.var makes them
     * (a duplicable slot's: a list, None for an empty name) */
    for (; made < n_out; ++made) {
        PyObject *name = out_names[made], *holder;
        if (name == NULL)
            continue;
        if (PyTuple_Check(name)) {
            Py_ssize_t n = PyTuple_GET_SIZE(name);
            PyObject *holders = PyList_New(n);
            if (holders == NULL)
                goto done;
            outs[made] = holders;
            for (Py_ssize_t i = 0; i < n; ++i) {
                PyObject *each = PyTuple_GET_ITEM(name, i);
                int empty = PyUnicode_Compare(each, empty_var_name);
                if (empty == -1 && PyErr_Occurred()) {
                    ++made; /* (the list is let go below) */
                    goto done;
                }
                holder = empty == 0 ? Py_NewRef(Py_None) : named_holder(values, each);
                if (holder == NULL) {
                    ++made;
                    goto done;
                }
                PyList_SET_ITEM(holders, i, holder);
            }
            continue;
        }
        if ((holder = named_holder(values, name)) == NULL)
            goto done;
        outs[made] = holder;
    }
    if ((run_ctx = run_context(op, op_known, ctx, 0)) == NULL)
        goto done;
    if (named != n_out) { /* the outputs the op names: the plan's context wants them all */
        if ((wanted = PyFrozenSet_New(NULL)) == NULL)
            goto done;
        for (Py_ssize_t k = 0; k < n_out; ++k)
            if (out_names[k] != NULL &&
                PySet_Add(wanted, PyTuple_GET_ITEM(PyTuple_GET_ITEM(out_slots, k), 0)) < 0)
                goto done;
        Py_INCREF(wanted);
        Py_XSETREF(SLOT(run_ctx, ctx_wanted_at), wanted);
    }
    call[0] = run_ctx;
    for (; read < n_in; ++read) {
        PyObject *in = ins[read];
        if (in == Py_None) {
            Py_INCREF(Py_None);
            call[1 + read] = Py_None;
        } else if ((call[1 + read] = PyList_Check(in) ? read_list(in, read_values) :
                                     read_values ? holder_value(in) : holder_array(in))
                   == NULL) {
            goto done;
        }
    }
    Allocating allocating;
    if (start_allocating(set_handler, capsule, &allocating) < 0)
        goto done;
    double start = seconds_now();
    ran = PyObject_Vectorcall(fn, call, 1 + n_in, NULL);
    for (Py_ssize_t k = 0; ran != NULL && k < n_out; ++k) {
        if (outs[k] == NULL)
            continue;
        PyObject *source = PyTuple_GET_ITEM(sources, k);
        if (source != Py_None) {
            Py_ssize_t at = PyLong_AsSsize_t(source);
            if (at < 0 || at >= n_in) {
                if (!PyErr_Occurred())
                    PyErr_Format(PyExc_IndexError, "first_run: LoD source %zd out of %zd "
                                 "inputs", at, n_in);
                Py_CLEAR(ran);
                break;
            }
            source = ins[at]; /* (a duplicable slot's: its first holder) */
            if (PyList_Check(source))
                source = PyList_GET_SIZE(source) ? PyList_GET_ITEM(source, 0) : Py_None;
        }
        if ((PyList_Check(outs[k])
                 ? store_outputs(ran, k, n_out == 1, outs[k], source)
                 : store_output(ran, k, n_out == 1, outs[k], source)) < 0)
            Py_CLEAR(ran);
    }
    result = ran_for(set_handler, &allocating, ran != NULL, start);
    goto done;
not_this_path:
    result = handed_back();
done:
    for (Py_ssize_t i = 0; i < held; ++i)
        Py_DECREF(ins[i]);
    for (Py_ssize_t k = 0; k < made; ++k)
        Py_XDECREF(outs[k]);
    for (Py_ssize_t i = 0; i < read; ++i)
        Py_DECREF(call[1 + i]);
    Py_XDECREF(inputs), Py_XDECREF(outputs), Py_XDECREF(run_ctx), Py_XDECREF(ran);
    Py_XDECREF(wanted);
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
        PyObject *entry = PyTuple_GET_ITEM(self->stores, k);
        Py_ssize_t index = self->single ? 0 : PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 0));
        if ((index == -1 && PyErr_Occurred()) ||
            store_output(result, index, self->single, PyTuple_GET_ITEM(entry, 1),
                         PyTuple_GET_ITEM(entry, 2)) < 0)
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

/* --- ArrayStep: a loop's tensor-array reads and writes -------------------------------- */
/* read_from_array's and write_to_array's host steps (ops/array_ops.py) in their common case:
 * an index of one int64 or int32 element on the host, a LoDTensorArray and LoDTensors, and
 * for a write an array this run made already (``run_token``). Anything else calls
 * ``fallback``, the Python host step, before anything is changed; that step decides every
 * case again, so the C path stores exactly what it stores.
 *
 *   ArrayStep(x, index, out, executor, fallback) with executor None: a read,
 *       out.value = LoDTensor(x.value[i].array, x.value[i]._lod) for 0 <= i < len, nothing
 *       for any other i (as Paddle: Out is left as it was);
 *   with the executor: a write, out.value[i] = LoDTensor(x.value.array, x.value._lod),
 *       the array grown with empty LoDTensors to i + 1 entries. */
typedef struct {
    PyObject_HEAD
    PyObject *x, *index, *out, *executor, *fallback;
    vectorcallfunc vectorcall;
} ArrayStep;

/* the index in ``holder``: 1 and *at set when it holds a LoDTensor of one int64 or int32
 * element in a host array, 0 when it holds anything else, -1 on error */
static int host_index(PyObject *holder, Py_ssize_t *at) {
    PyObject *value = holder_value(holder);
    if (value == NULL)
        return -1;
    int found = 0;
    PyObject *array = Py_IS_TYPE(value, tensor_type) ? SLOT(value, array_offset) : NULL;
    if (array != NULL && Py_IS_TYPE(array, ndarray_type)) {
        PyArrayObject *a = (PyArrayObject *)array;
        if (PyArray_SIZE(a) == 1 && PyArray_ISALIGNED(a) && PyArray_ISNOTSWAPPED(a)) {
            if (PyArray_TYPE(a) == NPY_INT64)
                *at = (Py_ssize_t) * (npy_int64 *)PyArray_DATA(a), found = 1;
            else if (PyArray_TYPE(a) == NPY_INT32)
                *at = (Py_ssize_t) * (npy_int32 *)PyArray_DATA(a), found = 1;
        }
    }
    Py_DECREF(value);
    return found;
}

/* LoDTensor(tensor.array, tensor._lod) of a LoDTensor whose slots are set; NULL without an
 * error when they are not */
static PyObject *sharing_tensor(PyObject *tensor) {
    PyObject *array = SLOT(tensor, array_offset), *lod = SLOT(tensor, lod_offset);
    if (array == NULL || lod == NULL)
        return NULL;
    return new_tensor(array, lod);
}

/* the read's common case: 1 done, 0 not this path's, -1 error */
static int array_read(ArrayStep *self) {
    Py_ssize_t at;
    int found = host_index(self->index, &at);
    if (found <= 0)
        return found;
    PyObject *array = holder_value(self->x);
    if (array == NULL)
        return -1;
    int done = 0;
    if (Py_IS_TYPE(array, tensor_array_type)) {
        if (at < 0 || at >= PyList_GET_SIZE(array)) {
            done = 1; /* past the end: Out is left as it was */
        } else {
            PyObject *item = PyList_GET_ITEM(array, at);
            if (Py_IS_TYPE(item, tensor_type)) {
                PyObject *shared = sharing_tensor(item);
                if (shared != NULL) {
                    done = set_holder_value(self->out, shared) < 0 ? -1 : 1;
                    Py_DECREF(shared);
                } else if (PyErr_Occurred()) {
                    done = -1;
                }
            }
        }
    }
    Py_DECREF(array);
    return done;
}

/* the write's common case (the array made earlier in this run): 1 done, 0 not this path's,
 * -1 error */
static int array_write(ArrayStep *self) {
    Py_ssize_t at;
    int found = host_index(self->index, &at);
    if (found <= 0 || at < 0)
        return found < 0 ? -1 : 0;
    PyObject *x = holder_value(self->x), *array = NULL, *token = NULL, *made = NULL;
    if (x == NULL)
        return -1;
    int done = 0;
    if (!Py_IS_TYPE(x, tensor_type))
        goto out;
    if ((array = holder_value(self->out)) == NULL ||
        (token = PyObject_GetAttr(self->executor, str_run_token)) == NULL)
        goto error;
    if (token == Py_None || !Py_IS_TYPE(array, tensor_array_type))
        goto out;
    if (LOOKUP_ATTR(array, str_run_token, &made) < 0)
        goto error;
    if (made != token)
        goto out; /* the run's first write: the Python step makes the array */
    PyObject *item = sharing_tensor(x);
    if (item == NULL) {
        if (PyErr_Occurred())
            goto error;
        goto out;
    }
    while (PyList_GET_SIZE(array) <= at) {
        PyObject *empty = PyObject_CallNoArgs((PyObject *)tensor_type);
        if (empty == NULL || PyList_Append(array, empty) < 0) {
            Py_XDECREF(empty);
            Py_DECREF(item);
            goto error;
        }
        Py_DECREF(empty);
    }
    PyObject *old = PyList_GET_ITEM(array, at);
    PyList_SET_ITEM(array, at, item);
    Py_DECREF(old);
    done = 1;
    goto out;
error:
    done = -1;
out:
    Py_DECREF(x);
    Py_XDECREF(array), Py_XDECREF(token), Py_XDECREF(made);
    return done;
}

static PyObject *array_step_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames) {
    ArrayStep *self = (ArrayStep *)callable;
    if (PyVectorcall_NARGS(nargsf) != 0 || kwnames != NULL)
        return PyErr_Format(PyExc_TypeError, "a step takes no arguments");
    int done = self->executor == Py_None ? array_read(self) : array_write(self);
    if (done < 0)
        return NULL;
    if (done)
        Py_RETURN_NONE;
    return PyObject_CallNoArgs(self->fallback);
}

static PyObject *array_step_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *x, *index, *out, *executor, *fallback;
    if (!configured() ||
        !PyArg_ParseTuple(args, "OOOOO:ArrayStep", &x, &index, &out, &executor, &fallback))
        return NULL;
    ArrayStep *self = (ArrayStep *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(x), Py_INCREF(index), Py_INCREF(out), Py_INCREF(executor), Py_INCREF(fallback);
    self->x = x, self->index = index, self->out = out, self->executor = executor;
    self->fallback = fallback;
    self->vectorcall = array_step_call;
    return (PyObject *)self;
}

static int array_step_traverse(ArrayStep *self, visitproc visit, void *arg) {
    Py_VISIT(self->x); Py_VISIT(self->index); Py_VISIT(self->out); Py_VISIT(self->executor);
    Py_VISIT(self->fallback);
    return 0;
}

static int array_step_clear(ArrayStep *self) {
    Py_CLEAR(self->x); Py_CLEAR(self->index); Py_CLEAR(self->out); Py_CLEAR(self->executor);
    Py_CLEAR(self->fallback);
    return 0;
}

static void array_step_dealloc(ArrayStep *self) {
    PyObject_GC_UnTrack(self);
    array_step_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject ArrayStepType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fluid_nb.exec._steps.ArrayStep",
    .tp_basicsize = sizeof(ArrayStep),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A tensor array's read or write step: see fluid_nb/exec/_steps.c.",
    .tp_new = array_step_new,
    .tp_traverse = (traverseproc)array_step_traverse,
    .tp_clear = (inquiry)array_step_clear,
    .tp_dealloc = (destructor)array_step_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(ArrayStep, vectorcall),
};

/* --- fast_run -------------------------------------------------------------------------- */
/* Executor.run's common case in one call: the run before again on the host (the same
 * program at the same version, the same scope, feed names in the same order, the same
 * fetch list items, flags and host arena; nothing traced, watched or reported). ``last`` is
 * what the executor kept of that run (executor.py, Executor._remember), the plan's parts
 * are plan.fast (run_plan.py, RunPlan.fast_parts). It does what Executor.run, _run_plan and
 * RunPlan.run do, in their order: the collector paused, NumPy's allocator switched to the
 * arena, a run token set, each fed array wrapped in a LoDTensor, the values of the holders
 * the run writes kept (the undo log), the local scope hung under the plan's scope, the feed
 * and fetch lists set, the steps run, the local scope taken down and its holders emptied,
 * a 0-D fetch of a variable declared [1] reshaped, and the fetched arrays viewed as
 * FetchedArrays (return_numpy). A step that raises hands its error, the undo log and its
 * index to plan._step_failed, which ends the run as RunPlan.run does and raises. Anything
 * ``last`` does not match, and a fed value other than a NumPy array (or a LoDTensor of one,
 * without LoD) of the declared dtype and shape, answers NotImplemented before anything is
 * done. */
enum {
    LAST_PROGRAM,      /* weakref to the program */
    LAST_VERSION,      /* program._version */
    LAST_GLOBAL_SCOPE, /* True: the scope argument was None (the global scope) */
    LAST_SCOPE,        /* weakref to the scope the run ran in */
    LAST_FEED_NAMES,   /* tuple(feed) */
    LAST_FETCH_ITEMS,  /* tuple(fetch_list or ()) */
    LAST_FEED_VAR,     /* feed_var_name */
    LAST_FETCH_VAR,    /* fetch_var_name */
    LAST_FLAGS,        /* flags.version (a list of one int) */
    LAST_FLAGS_AT,     /* flags.version[0] then */
    LAST_HOST,         /* memory.places._host (a list of one entry) */
    LAST_HOST_ENTRY,   /* memory.places._host[0] then */
    LAST_CAPSULE,      /* the arena's allocator capsule, None with the system allocator */
    LAST_ARENA,        /* the arena core (its ``recording``), or None */
    LAST_SET_HANDLER,  /* memory.arena's set_handler */
    LAST_EXECUTOR_GLOBALS, /* executor.py's globals (run_reporter) */
    LAST_SCOPE_GLOBALS,    /* scope.py's globals (_global_scope) */
    LAST_PAUSING,      /* collector.PAUSING */
    LAST_PLAN,         /* weakref to the RunPlan */
    LAST_SIZE
};
enum {
    FAST_FEEDS,         /* ((name, dtype, shape or None), ...) */
    FAST_WRITTEN,       /* the holders outside the run that it writes */
    FAST_SCOPE,         /* the plan's scope */
    FAST_LOCAL,         /* its local scope */
    FAST_FEED_HOLDER,
    FAST_FETCH_HOLDER,
    FAST_N_FETCH,
    FAST_STEPS,
    FAST_LOCAL_HOLDERS,
    FAST_SCALAR_FETCHES, /* the fetch columns declared [1] */
    FAST_SIZE
};

/* the object a weak reference refers to (borrowed; Py_None when it died) */
static PyObject *referent(PyObject *ref) {
    if (!PyWeakref_CheckRef(ref))
        return NULL;
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *object;
    if (PyWeakref_GetRef(ref, &object) <= 0) {
        PyErr_Clear();
        return Py_None;
    }
    Py_DECREF(object); /* (compared, or kept alive by the caller's own reference) */
    return object;
#else
    return PyWeakref_GET_OBJECT(ref);
#endif
}

/* a == b for two names (str) */
static int same_name(PyObject *a, PyObject *b) {
    if (a == b)
        return 1;
    if (!PyUnicode_CheckExact(a) || !PyUnicode_CheckExact(b))
        return 0;
    return PyUnicode_Compare(a, b) == 0;
}

static int fetch_and_state_match(PyObject *last, PyObject *executor, PyObject *fetch_list);

/* 1 when what ``last`` kept matches this run, 0 when not (or on an error, cleared) */
static int matches(PyObject *last, PyObject *executor, PyObject *program, PyObject *feed,
                   PyObject *fetch_list, PyObject *scope, PyObject *feed_var,
                   PyObject *fetch_var, PyObject *use_prune) {
#define LAST(i) PyTuple_GET_ITEM(last, i)
    if (referent(LAST(LAST_PROGRAM)) != program || !same_name(feed_var, LAST(LAST_FEED_VAR)) ||
        !same_name(fetch_var, LAST(LAST_FETCH_VAR)))
        return 0;
    if (use_prune != Py_False && PyObject_IsTrue(use_prune) != 0)
        goto not_this;
    /* the flags and the host's arena as they were */
    PyObject *flags = LAST(LAST_FLAGS), *host = LAST(LAST_HOST);
    if (!PyList_CheckExact(flags) || PyList_GET_SIZE(flags) < 1 ||
        !PyList_CheckExact(host) || PyList_GET_SIZE(host) < 1 ||
        PyList_GET_ITEM(host, 0) != LAST(LAST_HOST_ENTRY))
        return 0;
    int same = PyObject_RichCompareBool(PyList_GET_ITEM(flags, 0), LAST(LAST_FLAGS_AT), Py_EQ);
    if (same <= 0)
        goto not_this;
    PyObject *version = PyObject_GetAttr(program, str_version);
    if (version == NULL)
        goto not_this;
    same = PyObject_RichCompareBool(version, LAST(LAST_VERSION), Py_EQ);
    Py_DECREF(version);
    if (same <= 0)
        goto not_this;
    /* the scope */
    PyObject *ran_in = referent(LAST(LAST_SCOPE));
    if (scope == Py_None) {
        PyObject *current = PyDict_GetItemWithError(LAST(LAST_SCOPE_GLOBALS), str_global_scope);
        if (LAST(LAST_GLOBAL_SCOPE) != Py_True || current == NULL || current != ran_in)
            goto not_this;
    } else if (LAST(LAST_GLOBAL_SCOPE) != Py_False || scope != ran_in) {
        return 0;
    }
    /* the feed's names, in order (None feeds nothing, as {} does) */
    PyObject *names = LAST(LAST_FEED_NAMES);
    if (feed == Py_None)
        return PyTuple_GET_SIZE(names) == 0 ? fetch_and_state_match(last, executor, fetch_list)
                                            : 0;
    if (!PyDict_CheckExact(feed) || PyDict_GET_SIZE(feed) != PyTuple_GET_SIZE(names))
        return 0;
    Py_ssize_t position = 0, k = 0;
    PyObject *key, *value;
    while (PyDict_Next(feed, &position, &key, &value))
        if (!same_name(key, PyTuple_GET_ITEM(names, k++)))
            return 0;
    return fetch_and_state_match(last, executor, fetch_list);
not_this:
    PyErr_Clear();
    return 0;
#undef LAST
}

/* the rest of matches: the fetch list's items, and nothing recording, tracing or reporting */
static int fetch_and_state_match(PyObject *last, PyObject *executor, PyObject *fetch_list) {
#define LAST(i) PyTuple_GET_ITEM(last, i)
    /* the fetch list's items (a name may be an equal string) */
    PyObject *items = LAST(LAST_FETCH_ITEMS);
    Py_ssize_t count = PyTuple_GET_SIZE(items);
    if (fetch_list == Py_None) {
        if (count != 0)
            return 0;
    } else {
        if (!PyList_CheckExact(fetch_list) && !PyTuple_CheckExact(fetch_list))
            return 0;
        if (PySequence_Fast_GET_SIZE(fetch_list) != count)
            return 0;
        PyObject **given = PySequence_Fast_ITEMS(fetch_list);
        for (Py_ssize_t i = 0; i < count; ++i)
            if (given[i] != PyTuple_GET_ITEM(items, i) && !(PyUnicode_CheckExact(given[i]) &&
                                                            same_name(given[i],
                                                                      PyTuple_GET_ITEM(items, i))))
                return 0;
    }
    /* nothing recording the arena's events, tracing ops or reporting runs */
    if (LAST(LAST_ARENA) != Py_None) {
        PyObject *recording = PyObject_GetAttr(LAST(LAST_ARENA), str_recording);
        if (recording == NULL)
            goto not_this;
        int on = PyObject_IsTrue(recording);
        Py_DECREF(recording);
        if (on != 0)
            goto not_this;
    }
    PyObject *reporter = PyDict_GetItemWithError(LAST(LAST_EXECUTOR_GLOBALS), str_run_reporter);
    if (reporter == NULL || reporter != Py_None)
        goto not_this;
    PyObject *looked[2] = {str_trace, str_watch};
    for (int i = 0; i < 2; ++i) {
        PyObject *found = PyObject_GetAttr(executor, looked[i]);
        if (found == NULL)
            goto not_this;
        Py_DECREF(found);
        if (found != Py_None)
            return 0;
    }
    return 1;
not_this:
    PyErr_Clear();
    return 0;
#undef LAST
}

/* the LoDTensor a fed value goes in as, or NULL (no error set) when the value is not the
 * common case: an exact ndarray (or a LoDTensor of one, no LoD) of dtype ``want`` and a
 * shape that fits ``shape`` (None, or the declared dims, -1 for any) */
static PyObject *fed_tensor(PyObject *value, PyObject *want, PyObject *shape) {
    PyObject *array = value;
    if (Py_IS_TYPE(value, tensor_type)) {
        PyObject *lod = SLOT(value, lod_offset);
        array = SLOT(value, array_offset);
        if (array == NULL || lod == NULL ||
            (lod != Py_None && !(PyTuple_CheckExact(lod) && PyTuple_GET_SIZE(lod) == 0) &&
             !(PyList_CheckExact(lod) && PyList_GET_SIZE(lod) == 0)))
            return NULL;
    }
    if (!Py_IS_TYPE(array, ndarray_type) || !PyArray_DescrCheck(want))
        return NULL;
    PyArrayObject *a = (PyArrayObject *)array;
    if (PyArray_DESCR(a) != (PyArray_Descr *)want &&
        !PyArray_EquivTypes(PyArray_DESCR(a), (PyArray_Descr *)want))
        return NULL;
    if (shape != Py_None) {
        if (!PyTuple_CheckExact(shape) || PyTuple_GET_SIZE(shape) != PyArray_NDIM(a))
            return NULL;
        for (int d = 0; d < PyArray_NDIM(a); ++d) {
            Py_ssize_t declared = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
            if (declared == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                return NULL;
            }
            if (declared >= 0 && declared != PyArray_DIM(a, d))
                return NULL;
        }
    }
    if (array != value) {
        Py_INCREF(value);
        return value;
    }
    PyObject *tensor = new_tensor(value, NULL);
    if (tensor == NULL)
        PyErr_Clear(); /* (the Python path makes it again, and says what failed) */
    return tensor;
}

/* RunPlan._end: the local scope off its parent, its kids dropped, its holders emptied */
static int end_run(PyObject *parts) {
    PyObject *kids = PyObject_GetAttr(PyTuple_GET_ITEM(parts, FAST_SCOPE), str_kids);
    if (kids == NULL)
        return -1;
    PyObject *removed = PyObject_CallMethod(kids, "remove", "O",
                                            PyTuple_GET_ITEM(parts, FAST_LOCAL));
    Py_DECREF(kids);
    if (removed == NULL)
        return -1;
    Py_DECREF(removed);
    kids = PyObject_GetAttr(PyTuple_GET_ITEM(parts, FAST_LOCAL), str_kids);
    if (kids == NULL)
        return -1;
    int cleared = PyList_CheckExact(kids) ? PyList_SetSlice(kids, 0, PyList_GET_SIZE(kids), NULL)
                                          : -1;
    Py_DECREF(kids);
    if (cleared < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "fast_run: a scope's kids expected a list");
        return -1;
    }
    return empty_all(PyTuple_GET_ITEM(parts, FAST_LOCAL_HOLDERS));
}

/* feed_fetch.as_declared_scalar(value) (a new reference) */
static PyObject *as_declared_scalar(PyObject *value) {
    if (Py_IS_TYPE(value, tensor_type)) {
        PyObject *array = SLOT(value, array_offset), *lod = SLOT(value, lod_offset);
        if (array != NULL && lod != NULL && Py_IS_TYPE(array, ndarray_type) &&
            PyArray_NDIM((PyArrayObject *)array) == 0) {
            npy_intp one = 1;
            PyArray_Dims shape = {&one, 1};
            PyObject *reshaped = PyArray_Newshape((PyArrayObject *)array, &shape, NPY_CORDER);
            if (reshaped == NULL)
                return NULL;
            PyObject *tensor = new_tensor(reshaped, lod);
            Py_DECREF(reshaped);
            return tensor;
        }
    }
    return PyObject_CallOneArg(as_declared_scalar_fn, value);
}

/* feed_fetch.fetched(value) (a new reference) */
static PyObject *fetched(PyObject *value) {
    if (Py_IS_TYPE(value, tensor_type)) {
        PyObject *array = SLOT(value, array_offset);
        if (array != NULL && Py_IS_TYPE(array, ndarray_type)) {
            Py_INCREF(PyArray_DESCR((PyArrayObject *)array)); /* (PyArray_View takes one) */
            return PyArray_View((PyArrayObject *)array, PyArray_DESCR((PyArrayObject *)array),
                                (PyTypeObject *)fetched_array_type);
        }
    }
    return PyObject_CallOneArg(fetched_fn, value);
}

/* the fetch list's values as the run returns them (a new reference) */
static PyObject *fetch_results(PyObject *parts, PyObject *results, int return_numpy) {
    PyObject *scalars = PyTuple_GET_ITEM(parts, FAST_SCALAR_FETCHES);
    if (!PyList_CheckExact(results))
        return PyErr_Format(PyExc_TypeError, "fast_run: the fetch list expected a list, got %R",
                            Py_TYPE(results));
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(scalars); ++k) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(scalars, k));
        if (i < 0 || i >= PyList_GET_SIZE(results)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_IndexError, "fast_run: a fetch column out of range");
            return NULL;
        }
        PyObject *shaped = as_declared_scalar(PyList_GET_ITEM(results, i));
        if (shaped == NULL)
            return NULL;
        PyList_SetItem(results, i, shaped); /* (steals; the old item released) */
    }
    if (!return_numpy) {
        Py_INCREF(results);
        return results;
    }
    Py_ssize_t count = PyList_GET_SIZE(results);
    PyObject *out = PyList_New(count);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < count; ++i) {
        PyObject *array = fetched(PyList_GET_ITEM(results, i));
        if (array == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, array);
    }
    return out;
}

/* the collector paused as collector.pause does (1 when this call disabled it) */
static int pause_collector(void) {
#if PY_VERSION_HEX >= 0x030A0000
    return PyGC_Disable();
#else
    PyObject *gc = PyImport_ImportModule("gc");
    if (gc == NULL)
        return -1;
    PyObject *on = PyObject_CallMethod(gc, "isenabled", NULL);
    int was = on == NULL ? -1 : PyObject_IsTrue(on);
    Py_XDECREF(on);
    if (was == 1) {
        PyObject *done = PyObject_CallMethod(gc, "disable", NULL);
        if (done == NULL)
            was = -1;
        Py_XDECREF(done);
    }
    Py_DECREF(gc);
    return was;
#endif
}

static void resume_collector(int paused) {
    if (paused != 1)
        return;
#if PY_VERSION_HEX >= 0x030A0000
    PyGC_Enable();
#else
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject *gc = PyImport_ImportModule("gc");
    PyObject *done = gc == NULL ? NULL : PyObject_CallMethod(gc, "enable", NULL);
    Py_XDECREF(done);
    Py_XDECREF(gc);
    PyErr_Restore(type, value, traceback);
#endif
}

static PyObject *fast_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 10)
        return PyErr_Format(PyExc_TypeError, "fast_run expected 10 arguments (last, executor, "
                            "program, feed, fetch_list, scope, return_numpy, feed_var_name, "
                            "fetch_var_name, use_prune), got %zd", nargs);
    PyObject *last = args[0], *executor = args[1], *program = args[2], *feed = args[3],
             *fetch_list = args[4], *scope = args[5], *feed_var = args[7],
             *fetch_var = args[8], *use_prune = args[9];
    if (!configured() || fetched_array_type == NULL)
        return PyErr_Format(PyExc_RuntimeError, "fast_run: configure_fetches() was not called");
    if (!PyTuple_CheckExact(last) || PyTuple_GET_SIZE(last) != LAST_SIZE)
        return PyErr_Format(PyExc_TypeError, "fast_run: last expected a tuple of %d, got %R",
                            LAST_SIZE, last);
    int return_numpy = PyObject_IsTrue(args[6]);
    if (return_numpy < 0)
        return NULL;
    if (!matches(last, executor, program, feed, fetch_list, scope, feed_var, fetch_var,
                 use_prune))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *plan = referent(PyTuple_GET_ITEM(last, LAST_PLAN));
    if (plan == NULL || plan == Py_None)
        Py_RETURN_NOTIMPLEMENTED;
    Py_INCREF(plan);
    PyObject *parts = PyObject_GetAttr(plan, str_fast), *tensors = NULL, *fetch_values = NULL;
    if (parts == NULL || !PyTuple_CheckExact(parts) || PyTuple_GET_SIZE(parts) != FAST_SIZE) {
        PyErr_Clear();
        Py_XDECREF(parts);
        Py_DECREF(plan);
        Py_RETURN_NOTIMPLEMENTED;
    }
#define PART(i) PyTuple_GET_ITEM(parts, i)
    /* the feed, each value as the plan's check takes it */
    PyObject *feeds = PART(FAST_FEEDS);
    Py_ssize_t n_feeds = PyTuple_GET_SIZE(feeds);
    if ((tensors = PyList_New(n_feeds)) == NULL)
        goto fail_early;
    for (Py_ssize_t i = 0; i < n_feeds; ++i) {
        PyObject *check = PyTuple_GET_ITEM(feeds, i);
        PyObject *value = feed == Py_None
                              ? NULL
                              : PyDict_GetItemWithError(feed, PyTuple_GET_ITEM(check, 0));
        PyObject *tensor = value == NULL ? NULL : fed_tensor(value, PyTuple_GET_ITEM(check, 1),
                                                             PyTuple_GET_ITEM(check, 2));
        if (tensor == NULL) {
            PyErr_Clear();
            Py_DECREF(tensors);
            Py_DECREF(parts);
            Py_DECREF(plan);
            Py_RETURN_NOTIMPLEMENTED;
        }
        PyList_SET_ITEM(tensors, i, tensor);
    }
    Py_ssize_t n_fetch = PyLong_AsSsize_t(PART(FAST_N_FETCH));
    if (n_fetch < 0 || (fetch_values = PyList_New(n_fetch)) == NULL)
        goto fail_early;
    for (Py_ssize_t i = 0; i < n_fetch; ++i) {
        Py_INCREF(Py_None);
        PyList_SET_ITEM(fetch_values, i, Py_None);
    }
    /* Executor.run: the collector paused (unless FLUID_NB_COLLECTOR=always), NumPy
     * allocating from the arena */
    int paused = PyTuple_GET_ITEM(last, LAST_PAUSING) == Py_True ? pause_collector() : 0;
    if (paused < 0)
        goto fail_early;
    PyObject *token = NULL, *undo = NULL, *results = NULL, *out = NULL;
    Allocating allocating;
    if (start_allocating(PyTuple_GET_ITEM(last, LAST_SET_HANDLER),
                         PyTuple_GET_ITEM(last, LAST_CAPSULE), &allocating) < 0)
        goto done;
    /* _run_plan: a run token for the run */
    if ((token = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type)) == NULL ||
        PyObject_SetAttr(executor, str_run_token, token) < 0)
        goto done;
    /* RunPlan.run: the undo log, the local scope under the plan's, the feed and fetch lists */
    PyObject *written = PART(FAST_WRITTEN);
    if ((undo = PyList_New(PyTuple_GET_SIZE(written))) == NULL)
        goto done_token;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(written); ++i) {
        PyObject *held = holder_value(PyTuple_GET_ITEM(written, i));
        if (held == NULL)
            goto done_token;
        PyList_SET_ITEM(undo, i, held);
    }
    PyObject *kids = PyObject_GetAttr(PART(FAST_SCOPE), str_kids);
    int hung = kids == NULL ? -1 : PyList_CheckExact(kids) ? PyList_Append(kids, PART(FAST_LOCAL))
                                                           : -1;
    Py_XDECREF(kids);
    if (hung < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "fast_run: a scope's kids expected a list");
        goto done_token;
    }
    /* from here a failure ends as RunPlan.run's: plan._step_failed puts back and raises */
    Py_ssize_t failed_at = -1;
    if (set_holder_value(PART(FAST_FEED_HOLDER), tensors) < 0 ||
        set_holder_value(PART(FAST_FETCH_HOLDER), fetch_values) < 0)
        goto failed;
    PyObject *steps = PART(FAST_STEPS);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(steps); ++i) {
        PyObject *done_step = PyObject_CallNoArgs(PyTuple_GET_ITEM(steps, i));
        if (done_step == NULL) {
            failed_at = i;
            goto failed;
        }
        Py_DECREF(done_step);
    }
    if ((results = holder_value(PART(FAST_FETCH_HOLDER))) == NULL)
        goto failed;
    if (end_run(parts) < 0)
        goto done_token;
    out = fetch_results(parts, results, return_numpy);
    goto done_token;
failed: {
        PyObject *type, *error, *traceback;
        PyErr_Fetch(&type, &error, &traceback);
        PyErr_NormalizeException(&type, &error, &traceback);
        if (traceback != NULL && error != NULL)
            PyException_SetTraceback(error, traceback);
        PyObject *index = failed_at < 0 ? (Py_INCREF(Py_None), Py_None)
                                        : PyLong_FromSsize_t(failed_at);
        if (index != NULL && error != NULL) {
            PyObject *raised = PyObject_CallMethodObjArgs(plan, str_step_failed, undo, index,
                                                          error, NULL);
            if (raised != NULL) { /* (it always raises) */
                Py_DECREF(raised);
                PyErr_SetString(PyExc_RuntimeError, "fast_run: plan._step_failed returned");
            }
        } else if (error == NULL) {
            PyErr_SetString(PyExc_SystemError, "fast_run: a step failed with no error");
        }
        Py_XDECREF(index);
        Py_XDECREF(type);
        Py_XDECREF(error);
        Py_XDECREF(traceback);
    }
done_token: {
        /* _run_plan's finally: no run token (an error raised meanwhile kept) */
        PyObject *type, *error, *traceback;
        PyErr_Fetch(&type, &error, &traceback);
        if (PyObject_SetAttr(executor, str_run_token, Py_None) < 0)
            PyErr_Clear();
        PyErr_Restore(type, error, traceback);
    }
done:
    if (stop_allocating(PyTuple_GET_ITEM(last, LAST_SET_HANDLER), &allocating) < 0)
        Py_CLEAR(out); /* Executor.run's finally: the allocator back */
    resume_collector(paused);
    Py_XDECREF(token);
    Py_XDECREF(undo);
    Py_XDECREF(results);
    Py_DECREF(tensors);
    Py_DECREF(fetch_values);
    Py_DECREF(parts);
    Py_DECREF(plan);
    return out;
fail_early:
    Py_XDECREF(tensors);
    Py_XDECREF(fetch_values);
    Py_DECREF(parts);
    Py_DECREF(plan);
    return NULL;
#undef PART
}

static PyObject *configure_fetches(PyObject *module, PyObject *args) {
    PyObject *array_type, *scalar, *fetch;
    if (!PyArg_ParseTuple(args, "O!OO:configure_fetches", &PyType_Type, &array_type, &scalar,
                          &fetch))
        return NULL;
    Py_INCREF(array_type), Py_INCREF(scalar), Py_INCREF(fetch);
    Py_XSETREF(fetched_array_type, array_type);
    Py_XSETREF(as_declared_scalar_fn, scalar);
    Py_XSETREF(fetched_fn, fetch);
    Py_RETURN_NONE;
}

/* --- a live session's hook ---------------------------------------------------------------- */
/* LiveHook(session, fallback, look, failed, block, Operator, host_arena, host, flags_version,
 *          source, optimize_role, weigh_every, runner_globals): what a live session's
 * program calls with each appended op (live/session.py, LiveSession._on_main_op, is the
 * definition). Its common case, a new op of the session's global block whose type has a
 * first-run plan, run on the host or a device with no memory event log on, outside
 * record-only mode and with nothing pending, is done here: the op's source marked as the
 * call stack's, the runner module's first_run (steps.first_run, unless a test counts its
 * calls) with its _set_handler, the runner's last_run and the session's ops_run count,
 * and the op added to the ops since the last look for values nobody holds (look(op) when
 * one may be due). Anything else is fallback(op), before anything was changed, and an op
 * first_run said None to is fallback(op, True); a failed first run is failed(op,
 * exception). The session's and the runner's state is read from their __dict__s, kept
 * while each is unchanged (tensor/_kept.h: a user or a view may change it between two ops;
 * an attribute read from C cost as much as the bytecode it replaced), the host arena through
 * places._host and flags.version as places.host_arena reads them. As a Python hook the
 * common case was about 170 bytecodes and 8% of a live op's instructions. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *session_dict, *runner, *runner_dict, *block, *block_dict, *values;
    PyObject *fallback, *look, *failed, *host_arena_fn, *host, *flags_version, *source;
    PyObject *runner_globals;
    /* the host arena last asked for: places._host[0] and flags.version[0] then, and what
     * host_arena() answered (arena None: the system allocator) */
    PyObject *arena_entry, *arena_version, *arena_core, *capsule;
    long optimize_role;
    Py_ssize_t weigh_every;
    /* what each op reads of the block's, the session's and the runner's dicts and the
     * runner module's globals, read again only when one changed (the groups' keys below) */
    KeptDict kept_block, kept_session, kept_session_after, kept_runner, kept_runner_after,
        kept_globals;
    PyObject *block_reads[1], *session_reads[3], *session_after_reads[3], *runner_reads[5],
        *runner_after_reads[1], *globals_reads[2];
} LiveHook;

static PyObject *str_record_only, *str_pending, *str_runner, *str_stats, *str_ops_run,
    *str_since_sweep, *str_sweep_at, *str_steps, *str_last_run, *str_first_plans,
    *str_root_scope, *str_on_host, *str_op_role, *str_ops, *str_capsule, *str_arena,
    *str_first_run, *str_set_handler;

/* ``d[key]`` (borrowed), or NULL with a KeyError naming it */
static PyObject *state(PyObject *d, PyObject *key) {
    PyObject *value = PyDict_GetItemWithError(d, key);
    if (value == NULL && !PyErr_Occurred())
        PyErr_Format(PyExc_KeyError, "LiveHook: attribute %R expected", key);
    return value;
}

/* read_kept's reads, each one there: 0, or -1 with an error (a KeyError naming the first
 * key missing: then nothing is kept) */
static int kept_state(KeptDict *kept, PyObject *d, PyObject **const *keys, PyObject **values,
                      int n) {
    int read = read_kept(kept, d, keys, values, n);
    for (int i = 0; read == 1 && i < n; i++)
        if (values[i] == NULL) {
            kept->tag = 0;
            PyErr_Format(PyExc_KeyError, "LiveHook: attribute %R expected", *keys[i]);
            return -1;
        }
    return read < 0 ? -1 : 0;
}

/* the session's, the runner's and the runner module's state each op reads: before its run
 * and after it (each group a key read where it is used, as a call without dict tags reads
 * them all) */
enum { RUNNER, RECORD_ONLY, PENDING };
enum { STATS, SINCE_SWEEP, SWEEP_AT };
enum { FIRST_PLANS, STEPS, LAST_RUN, ROOT_SCOPE, ON_HOST };
enum { FIRST_RUN, SET_HANDLER };
static PyObject **const session_keys[] = {&str_runner, &str_record_only, &str_pending},
                **const session_after_keys[] = {&str_stats, &str_since_sweep, &str_sweep_at},
                **const runner_keys[] = {&str_first_plans, &str_steps, &str_last_run,
                                         &str_root_scope, &str_on_host},
                **const runner_after_keys[] = {&str_last_run},
                **const block_keys[] = {&str_ops},
                **const globals_keys[] = {&str_first_run, &str_set_handler};
#define KEPT_STATE(self, group, d, keys)                                                   \
    kept_state(&(self)->kept_##group, (self)->d, keys, (self)->group##_reads, KEPT_COUNT(keys))

/* the capsule NumPy's allocator switches to for this op (borrowed; Py_None: no switch), or
 * NULL: not this path (the event log is on), or NULL with an error */
static PyObject *host_capsule(LiveHook *self) {
    PyObject *entry = PyList_GET_ITEM(self->host, 0), *version =
        PyList_GET_ITEM(self->flags_version, 0);
    if (entry != self->arena_entry || version != self->arena_version ||
        self->capsule == NULL) {
        PyObject *arena = PyObject_CallNoArgs(self->host_arena_fn);
        if (arena == NULL)
            return NULL;
        PyObject *core = NULL, *capsule = NULL;
        if (arena == Py_None) {
            core = Py_None, capsule = Py_None;
            Py_INCREF(core), Py_INCREF(capsule);
        } else if ((core = PyObject_GetAttr(arena, str_arena)) == NULL ||
                   (capsule = PyObject_GetAttr(arena, str_capsule)) == NULL) {
            Py_XDECREF(core);
            Py_DECREF(arena);
            return NULL;
        }
        Py_DECREF(arena);
        entry = PyList_GET_ITEM(self->host, 0); /* (host_arena() may have made it) */
        version = PyList_GET_ITEM(self->flags_version, 0);
        Py_INCREF(entry), Py_INCREF(version);
        Py_XSETREF(self->arena_entry, entry);
        Py_XSETREF(self->arena_version, version);
        Py_XSETREF(self->arena_core, core);
        Py_XSETREF(self->capsule, capsule);
    }
    if (self->arena_core == Py_None)
        return Py_None;
    PyObject *recording = PyObject_GetAttr(self->arena_core, str_recording);
    if (recording == NULL)
        return NULL;
    int on = PyObject_IsTrue(recording);
    Py_DECREF(recording);
    return on < 0 ? NULL : on ? NULL : self->capsule;
}

#define NOT_THIS_OP NULL /* (with no error set: the fallback's op) */

/* the common case; NOT_THIS_OP (no error) for the fallback's ops */
static PyObject *live_op(LiveHook *self, PyObject *op) {
    if (!Py_IS_TYPE(op, operator_class) || SLOT(op, op_block_at) != self->block)
        return NOT_THIS_OP;
    if (KEPT_STATE(self, block, block_dict, block_keys) < 0)
        return NULL;
    PyObject *ops = self->block_reads[0], *plan;
    if (!PyList_Check(ops) || PyList_GET_SIZE(ops) == 0 ||
        PyList_GET_ITEM(ops, PyList_GET_SIZE(ops) - 1) != op)
        return NOT_THIS_OP; /* (inserted before ops that ran: they run again) */
    if (KEPT_STATE(self, runner, runner_dict, runner_keys) < 0 ||
        KEPT_STATE(self, session, session_dict, session_keys) < 0)
        return NULL;
    PyObject *plans = self->runner_reads[FIRST_PLANS], *pending = self->session_reads[PENDING],
             *steps = self->runner_reads[STEPS], *last_run = self->runner_reads[LAST_RUN];
    if (self->session_reads[RUNNER] != self->runner ||
        self->session_reads[RECORD_ONLY] != Py_False || !PyList_Check(pending) ||
        PyList_GET_SIZE(pending) != 0 || self->runner_reads[ROOT_SCOPE] != Py_True ||
        !PyDict_Check(plans) || !PyDict_Check(steps) || !PyDict_Check(last_run))
        return NOT_THIS_OP;
    int on_host = self->runner_reads[ON_HOST] == Py_True;
    /* (held: a key's __eq__ may run code that changes what the dicts hold) */
    Py_INCREF(plans), Py_INCREF(steps), Py_INCREF(last_run);
    plan = Py_XNewRef(PyDict_GetItemWithError(plans, SLOT(op, op_type_at)));
    int ran = plan == NULL || !PyTuple_Check(plan) ? -2 : PyDict_Contains(steps, op);
    if (ran == 0)
        ran = PyDict_Contains(last_run, op);
    Py_DECREF(plans), Py_DECREF(steps), Py_DECREF(last_run);
    if (ran != 0) { /* (no plan yet, or none (False); or it ran: the fallback's) */
        Py_XDECREF(plan);
        return PyErr_Occurred() ? NULL : NOT_THIS_OP;
    }
    PyObject *attrs = SLOT(op, op_attrs_at);
    PyObject *role = attrs != NULL && PyDict_Check(attrs) ?
                     PyDict_GetItemWithError(attrs, str_op_role) : NULL;
    if (role != NULL) {
        long bits = PyLong_CheckExact(role) ? PyLong_AsLong(role) : -1;
        if (bits == -1 || bits & self->optimize_role) {
            PyErr_Clear(); /* (a role that is no plain int: the fallback reads it) */
            Py_DECREF(plan);
            return NOT_THIS_OP;
        }
    } else if (PyErr_Occurred()) {
        Py_DECREF(plan);
        return NULL;
    }
    PyObject *capsule = Py_None;
    if (on_host && (capsule = host_capsule(self)) == NULL) {
        Py_DECREF(plan);
        return PyErr_Occurred() ? NULL : NOT_THIS_OP;
    }
    /* (the runner module's first_run and _set_handler, as the runner calls them) */
    if (KEPT_STATE(self, globals, runner_globals, globals_keys) < 0) {
        Py_DECREF(plan);
        return NULL;
    }
    PyObject *run = self->globals_reads[FIRST_RUN], *set_handler =
        self->globals_reads[SET_HANDLER];
    /* the op's user line, found if someone asks (as _on_main_op marks it) */
    Py_INCREF(self->source);
    Py_XSETREF(SLOT(op, op_source_at), self->source);
    /* (what the call reads, held across the kernel, which may run any code) */
    PyObject *call[5] = {op, plan, self->values, set_handler, capsule};
    for (int i = 0; i < 5; ++i)
        if (i != 1) /* (the plan is held already) */
            Py_INCREF(call[i]);
    Py_INCREF(run);
    PyObject *took = PyObject_Vectorcall(run, call, 5, NULL);
    Py_DECREF(run);
    for (int i = 1; i < 5; ++i) /* (the op's own reference is let go at the end) */
        Py_DECREF(call[i]);
    if (took == NULL) { /* the session takes the op's empty holders back and names it */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyErr_NormalizeException(&type, &value, &traceback);
        if (traceback != NULL && value != NULL)
            PyException_SetTraceback(value, traceback);
        PyObject *raised = value == NULL ? NULL :
                           PyObject_CallFunctionObjArgs(self->failed, op, value, NULL);
        Py_XDECREF(raised);
        Py_XDECREF(type), Py_XDECREF(value), Py_XDECREF(traceback);
        Py_DECREF(op);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "LiveHook: failed() expected to raise");
        return NULL;
    }
    if (took == Py_None) { /* the fallback's op, first_run not asked again */
        Py_DECREF(took);
        PyObject *call[2] = {op, Py_True};
        PyObject *done = PyObject_Vectorcall(self->fallback, call, 2, NULL);
        Py_DECREF(op);
        return done;
    }
    PyObject *stats, *count, *swept = NULL, *sweep_at = NULL, *result = NULL;
    /* (read now: the kernel may have run any code) */
    if (KEPT_STATE(self, runner_after, runner_dict, runner_after_keys) < 0 ||
        PyDict_SetItem(self->runner_after_reads[0], op, took) < 0 ||
        KEPT_STATE(self, session_after, session_dict, session_after_keys) < 0)
        goto done;
    stats = self->session_after_reads[STATS];
    swept = Py_NewRef(self->session_after_reads[SINCE_SWEEP]); /* (held across the count) */
    sweep_at = Py_NewRef(self->session_after_reads[SWEEP_AT]);
    if ((count = PyDict_GetItemWithError(stats, str_ops_run)) == NULL) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_KeyError, "LiveHook: stats[%R] expected", str_ops_run);
        goto done;
    }
    if ((count = PyNumber_Add(count, one_int)) == NULL)
        goto done;
    int counted = PyDict_SetItem(stats, str_ops_run, count);
    Py_DECREF(count);
    if (counted < 0)
        goto done;
    if (!PyList_Check(swept)) {
        PyErr_Format(PyExc_TypeError, "LiveHook: a list of the ops since the last sweep "
                     "expected, got %R", swept);
        goto done;
    }
    if (PyList_Append(swept, op) < 0)
        goto done;
    Py_ssize_t n = PyList_GET_SIZE(swept), due = PyLong_AsSsize_t(sweep_at);
    if (due == -1 && PyErr_Occurred())
        goto done;
    if (n >= due || n % self->weigh_every == 0) {
        PyObject *looked = PyObject_CallOneArg(self->look, op);
        if (looked == NULL)
            goto done;
        Py_DECREF(looked);
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    Py_XDECREF(swept), Py_XDECREF(sweep_at);
    Py_DECREF(took);
    Py_DECREF(op);
    return result;
}

static PyObject *live_hook_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames) {
    LiveHook *self = (LiveHook *)callable;
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL)
        return PyErr_Format(PyExc_TypeError, "a live hook takes the op alone");
    PyObject *done = live_op(self, args[0]);
    if (done != NOT_THIS_OP || PyErr_Occurred())
        return done;
    return PyObject_CallOneArg(self->fallback, args[0]);
}

static PyObject *live_hook_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *session, *fallback, *look, *failed, *block, *operator_type, *host_arena_fn, *host, *flags_version, *source, *runner_globals;
    long optimize_role;
    Py_ssize_t weigh_every;
    if (!configured() ||
        !PyArg_ParseTuple(args, "OOOOOO!OO!O!OlnO!:LiveHook", &session, &fallback, &look,
                          &failed, &block, &PyType_Type, &operator_type, &host_arena_fn, &PyList_Type, &host, &PyList_Type, &flags_version,
                          &source, &optimize_role, &weigh_every, &PyDict_Type,
                          &runner_globals))
        return NULL;
    if (PyList_GET_SIZE(host) != 1 || PyList_GET_SIZE(flags_version) != 1 || weigh_every < 1)
        return PyErr_Format(PyExc_ValueError, "LiveHook expected one-item host and "
                            "flags_version lists and weigh_every >= 1");
    LiveHook *self = (LiveHook *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = live_hook_call;
    PyObject *runner = NULL, *scope = NULL;
    if (find_operator_slots((PyTypeObject *)operator_type) < 0 ||
        (self->session_dict = PyObject_GenericGetDict(session, NULL)) == NULL ||
        (self->block_dict = PyObject_GenericGetDict(block, NULL)) == NULL ||
        (runner = state(self->session_dict, str_runner)) == NULL ||
        (self->runner_dict = PyObject_GenericGetDict(runner, NULL)) == NULL ||
        (scope = PyObject_GetAttrString(runner, "scope")) == NULL ||
        (self->values = PyObject_GetAttrString(scope, "vars")) == NULL) {
        Py_XDECREF(scope);
        Py_DECREF(self);
        return NULL;
    }
    Py_DECREF(scope);
    if (!PyDict_Check(self->values)) {
        Py_DECREF(self);
        return PyErr_Format(PyExc_TypeError, "LiveHook: the runner's scope.vars expected a "
                                             "dict");
    }
    Py_INCREF(runner), Py_INCREF(block), Py_INCREF(fallback), Py_INCREF(look);
    Py_INCREF(failed), Py_INCREF(host_arena_fn), Py_INCREF(host);
    Py_INCREF(flags_version), Py_INCREF(source), Py_INCREF(runner_globals);
    self->runner_globals = runner_globals;
    self->runner = runner, self->block = block, self->fallback = fallback;
    self->look = look, self->failed = failed;
    self->host_arena_fn = host_arena_fn, self->host = host;
    self->flags_version = flags_version, self->source = source;
    self->optimize_role = optimize_role, self->weigh_every = weigh_every;
    return (PyObject *)self;
}

static int live_hook_traverse(LiveHook *self, visitproc visit, void *arg) {
    Py_VISIT(self->session_dict); Py_VISIT(self->runner); Py_VISIT(self->runner_dict);
    Py_VISIT(self->block); Py_VISIT(self->block_dict); Py_VISIT(self->values);
    Py_VISIT(self->fallback); Py_VISIT(self->look); Py_VISIT(self->failed);
    Py_VISIT(self->host_arena_fn); Py_VISIT(self->host);
    Py_VISIT(self->flags_version); Py_VISIT(self->source); Py_VISIT(self->arena_entry);
    Py_VISIT(self->arena_version); Py_VISIT(self->arena_core); Py_VISIT(self->capsule);
    Py_VISIT(self->runner_globals);
    return 0;
}

static int live_hook_clear(LiveHook *self) {
    Py_CLEAR(self->session_dict); Py_CLEAR(self->runner); Py_CLEAR(self->runner_dict);
    Py_CLEAR(self->block); Py_CLEAR(self->block_dict); Py_CLEAR(self->values);
    Py_CLEAR(self->fallback); Py_CLEAR(self->look); Py_CLEAR(self->failed);
    Py_CLEAR(self->host_arena_fn); Py_CLEAR(self->host);
    Py_CLEAR(self->flags_version); Py_CLEAR(self->source); Py_CLEAR(self->arena_entry);
    Py_CLEAR(self->arena_version); Py_CLEAR(self->arena_core); Py_CLEAR(self->capsule);
    Py_CLEAR(self->runner_globals);
    return 0;
}

static void live_hook_dealloc(LiveHook *self) {
    PyObject_GC_UnTrack(self);
    live_hook_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject LiveHookType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fluid_nb.exec._steps.LiveHook",
    .tp_basicsize = sizeof(LiveHook),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A live session's append hook: see fluid_nb/exec/_steps.c.",
    .tp_new = live_hook_new,
    .tp_traverse = (traverseproc)live_hook_traverse,
    .tp_clear = (inquiry)live_hook_clear,
    .tp_dealloc = (destructor)live_hook_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(LiveHook, vectorcall),
};

/* --- a live session's look for values nobody holds ------------------------------------ */
/* OpRunner.drop_unreachable's walk (fluid_nb/live/runner.py says what it lets go and
 * why), last op first:
 *
 *   drop_unreachable(ops, block_vars, values, kinds, kind_of, lod_tensor, dropped, order,
 *                    first) -> the ops whose outputs someone still holds, in program order
 *
 * kinds[op.type] (kind_of(op.type) when missing) is False (keep the outputs), an output slot
 * (a formula op: one output, a function of its tensor inputs) or True (another recomputable
 * op, let go of only when its inputs and the outputs that hold values are variables of the
 * block whose type is ``lod_tensor``, VarType.LOD_TENSOR, and none of those outputs is an
 * input: no tensor array, rank table or SelectedRows, which later ops may change or which
 * are not one value). A value let go leaves ``values``; dropped[name] is its op and
 * order[name] ``first`` + the op's index. A Variable that the block's dict alone holds is
 * one nobody can reach. */
static PyObject *str_type, *str_persistable, *str_is_data;

static int flag(PyObject *var, PyObject *name) {
    PyObject *value = PyObject_GetAttr(var, name);
    if (value == NULL)
        return -1;
    int on = PyObject_IsTrue(value);
    Py_DECREF(value);
    return on;
}

/* every name of every slot of ``slots`` (an op's inputs or outputs) in ``names`` */
static int add_names(PyObject *names, PyObject *slots) {
    PyObject *slot, *args;
    Py_ssize_t at = 0;
    while (PyDict_Next(slots, &at, &slot, &args)) {
        PyObject *iter = PyObject_GetIter(args), *name;
        if (iter == NULL)
            return -1;
        while ((name = PyIter_Next(iter)) != NULL) {
            int added = PySet_Add(names, name);
            Py_DECREF(name);
            if (added < 0)
                break;
        }
        Py_DECREF(iter);
        if (PyErr_Occurred())
            return -1;
    }
    return 0;
}

/* 1 when some slot of ``inputs`` names ``name`` */
static int reads(PyObject *inputs, PyObject *name) {
    PyObject *slot, *args;
    Py_ssize_t at = 0;
    while (PyDict_Next(inputs, &at, &slot, &args)) {
        int found = PySequence_Contains(args, name);
        if (found != 0)
            return found;
    }
    return 0;
}

typedef struct {
    PyObject *block_vars, *values, *lod_tensor, *dropped, *order, *written_later, *still;
} Sweep;

/* 1 when ``name`` is a variable of the block whose type is a LoD tensor's, 0 when not, -1 */
static int dense_variable(Sweep *s, PyObject *name) {
    PyObject *var = PyDict_GetItemWithError(s->block_vars, name);
    if (var == NULL)
        return PyErr_Occurred() ? -1 : 0;
    Py_INCREF(var);
    PyObject *kind = PyObject_GetAttr(var, str_type);
    Py_DECREF(var);
    if (kind == NULL)
        return -1;
    int same = kind == s->lod_tensor ? 1 : PyObject_RichCompareBool(kind, s->lod_tensor, Py_EQ);
    Py_DECREF(kind);
    return same;
}

/* 1 when ``op``'s inputs and ``names`` (its outputs that hold values) are all dense
 * variables (dense_variable) and no input is among ``names``; 0 when not, -1 on error */
static int tensors_only(Sweep *s, PyObject *op, int known, PyObject *names) {
    PyObject *inputs = field_of(op, known, op_inputs_at, str_inputs), *slot, *args;
    if (inputs == NULL)
        return -1;
    int only = PyDict_Check(inputs);
    Py_ssize_t pos = 0;
    while (only == 1 && PyDict_Next(inputs, &pos, &slot, &args)) {
        PyObject *iter = PyObject_GetIter(args), *name;
        if (iter == NULL) {
            only = -1;
            break;
        }
        while (only == 1 && (name = PyIter_Next(iter)) != NULL) {
            only = dense_variable(s, name);
            if (only == 1) {
                int written = PySequence_Contains(names, name);
                only = written < 0 ? -1 : !written;
            }
            Py_DECREF(name);
        }
        Py_DECREF(iter);
        if (only == 1 && PyErr_Occurred())
            only = -1;
    }
    Py_DECREF(inputs);
    for (Py_ssize_t i = 0; only == 1 && i < PyList_GET_SIZE(names); ++i)
        only = dense_variable(s, PyList_GET_ITEM(names, i));
    return only;
}

/* whether nobody but the block holds the variable of each of ``names``, when none is a
 * parameter, persistable or data: 1 (let them go), 0 (keep them; the op is looked at again
 * later when someone holds one), -1 (an error) */
static int nobody_holds(Sweep *s, PyObject *op, PyObject *names) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(names); ++i) {
        PyObject *var = PyDict_GetItemWithError(s->block_vars, PyList_GET_ITEM(names, i));
        if (var == NULL)
            return PyErr_Occurred() ? -1 : 0;
        Py_INCREF(var);
        int kept = flag(var, str_persistable);
        if (kept == 0)
            kept = flag(var, str_is_data);
        if (kept == 0 && Py_REFCNT(var) > 2) /* (the block's dict and this function) */
            kept = PyList_Append(s->still, op) < 0 ? -1 : 1;
        Py_DECREF(var);
        if (kept != 0)
            return kept < 0 ? -1 : 0;
    }
    return 1;
}

static int let_go(Sweep *s, PyObject *op, PyObject *names, Py_ssize_t index) {
    PyObject *at = PyLong_FromSsize_t(index);
    if (at == NULL)
        return -1;
    int failed = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(names); ++i) {
        PyObject *name = PyList_GET_ITEM(names, i);
        int present = PyDict_Contains(s->values, name); /* (a name twice among the outputs) */
        if (present < 0 || (present && (PyDict_SetItem(s->dropped, name, op) < 0 ||
                                        PyDict_SetItem(s->order, name, at) < 0 ||
                                        PyDict_DelItem(s->values, name) < 0))) {
            failed = -1;
            break;
        }
    }
    Py_DECREF(at);
    return failed;
}

/* the values ``op`` (its kind ``kind``, at ``at`` in the order) let go of, if any */
static int look_at(Sweep *s, PyObject *op, PyObject *kind, Py_ssize_t at) {
    int known = op_slots_known(op);
    PyObject *outputs = field_of(op, known, op_outputs_at, str_outputs), *names = NULL,
             *inputs = NULL;
    int result = -1;
    if (outputs == NULL)
        return -1;
    if (!PyDict_Check(outputs)) {
        PyErr_Format(PyExc_TypeError, "drop_unreachable: op.outputs expected to be a dict, "
                                      "not %.100s", Py_TYPE(outputs)->tp_name);
        goto done;
    }
    if (kind == Py_False) { /* (its outputs are written here: earlier ones keep theirs) */
        result = add_names(s->written_later, outputs);
        goto done;
    }
    if ((names = PyList_New(0)) == NULL)
        goto done;
    int droppable;
    if (kind != Py_True) { /* a formula op: its one output */
        PyObject *args = PyDict_GetItemWithError(outputs, kind), *name;
        if (args == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetObject(PyExc_KeyError, kind);
            goto done;
        }
        if ((name = PySequence_GetItem(args, 0)) == NULL)
            goto done;
        int appended = PyList_Append(names, name);
        Py_DECREF(name);
        if (appended < 0)
            goto done;
        /* (a value the ops after it write again, or one it writes over its input, is kept) */
        int held = PyDict_Contains(s->values, name);
        int later = held > 0 ? PySet_Contains(s->written_later, name) : 0;
        if (held < 0 || later < 0 || PySet_Add(s->written_later, name) < 0)
            goto done;
        droppable = held && !later;
        if (droppable) {
            if ((inputs = field_of(op, known, op_inputs_at, str_inputs)) == NULL)
                goto done;
            int overwritten = PyDict_Check(inputs) ? reads(inputs, name) : 1;
            if (overwritten < 0)
                goto done;
            droppable = !overwritten;
        }
    } else { /* its outputs that hold values, when the ops after it write none of them */
        PyObject *slot, *args;
        Py_ssize_t pos = 0;
        droppable = 1;
        while (PyDict_Next(outputs, &pos, &slot, &args)) {
            PyObject *iter = PyObject_GetIter(args), *name;
            if (iter == NULL)
                goto done;
            while ((name = PyIter_Next(iter)) != NULL) {
                int holds = PyDict_Contains(s->values, name), later = 0;
                if (holds > 0 && (later = PySet_Contains(s->written_later, name)) > 0)
                    droppable = 0;
                if (holds < 0 || later < 0 || (holds > 0 && PyList_Append(names, name) < 0))
                    droppable = -1;
                Py_DECREF(name);
                if (droppable < 0)
                    break;
            }
            Py_DECREF(iter);
            if (droppable < 0 || PyErr_Occurred())
                goto done;
        }
        if (droppable && PyList_GET_SIZE(names) > 0) {
            droppable = tensors_only(s, op, known, names);
        } else {
            droppable = 0;
        }
        if (droppable < 0 || add_names(s->written_later, outputs) < 0)
            goto done;
    }
    if (droppable > 0)
        droppable = nobody_holds(s, op, names);
    result = droppable < 0 ? -1 : droppable ? let_go(s, op, names, at) : 0;
done:
    Py_DECREF(outputs);
    Py_XDECREF(names), Py_XDECREF(inputs);
    return result;
}

static PyObject *drop_unreachable(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 9)
        return PyErr_Format(PyExc_TypeError, "drop_unreachable: 9 arguments expected, %zd "
                                             "given", nargs);
    PyObject *ops = args[0], *kinds = args[3], *kind_of = args[4];
    Sweep s = {args[1], args[2], args[5], args[6], args[7], NULL, NULL};
    if (!PyList_Check(ops) || !PyDict_Check(s.block_vars) || !PyDict_Check(s.values) ||
        !PyDict_Check(kinds) || !PyDict_Check(s.dropped) || !PyDict_Check(s.order))
        return PyErr_Format(PyExc_TypeError, "drop_unreachable: a list of ops and dicts "
                                             "expected");
    Py_ssize_t first = PyLong_AsSsize_t(args[8]);
    if (first == -1 && PyErr_Occurred())
        return NULL;
    if ((s.written_later = PySet_New(NULL)) == NULL || (s.still = PyList_New(0)) == NULL)
        goto failed;
    Py_INCREF(ops);
    for (Py_ssize_t index = PyList_GET_SIZE(ops) - 1; index >= 0; --index) {
        if (index >= PyList_GET_SIZE(ops)) /* (a callback shortened the list) */
            continue;
        PyObject *op = PyList_GET_ITEM(ops, index), *type, *kind;
        Py_INCREF(op);
        int looked = -1;
        if ((type = field_of(op, op_slots_known(op), op_type_at, str_type)) != NULL) {
            kind = PyDict_GetItemWithError(kinds, type);
            if (kind != NULL)
                Py_INCREF(kind);
            else if (!PyErr_Occurred() && (kind = PyObject_CallOneArg(kind_of, type)) != NULL &&
                     PyDict_SetItem(kinds, type, kind) < 0)
                Py_CLEAR(kind);
            if (kind != NULL)
                looked = look_at(&s, op, kind, first + index);
            Py_XDECREF(kind);
            Py_DECREF(type);
        }
        Py_DECREF(op);
        if (looked < 0) {
            Py_DECREF(ops);
            goto failed;
        }
    }
    Py_DECREF(ops);
    Py_DECREF(s.written_later);
    if (PyList_Reverse(s.still) < 0) {
        Py_DECREF(s.still);
        return NULL;
    }
    return s.still;
failed:
    Py_XDECREF(s.written_later), Py_XDECREF(s.still);
    return NULL;
}

/* --- configure ------------------------------------------------------------------------ */
static PyObject *configure(PyObject *module, PyObject *args) {
    PyObject *tensor, *tensor_array, *holder, *ndarray, *stored_callable;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O:configure", &PyType_Type, &tensor, &PyType_Type,
                          &tensor_array, &PyType_Type, &holder, &PyType_Type, &ndarray,
                          &stored_callable))
        return NULL;
    Py_ssize_t array_at, lod_at, value_at, name_at;
    if (slot_offset((PyTypeObject *)tensor, "array", &array_at) < 0 ||
        slot_offset((PyTypeObject *)tensor, "_lod", &lod_at) < 0 ||
        slot_offset((PyTypeObject *)holder, "value", &value_at) < 0 ||
        slot_offset((PyTypeObject *)holder, "name", &name_at) < 0)
        return NULL;
    /* new_holder writes the slots ScopeVariable.__init__ writes: name and value, no more */
    PyObject *slots = PyObject_GetAttrString(holder, "__slots__");
    if (slots == NULL)
        return NULL;
    int two = PySequence_Size(slots) == 2;
    Py_DECREF(slots);
    if (!two)
        return PyErr_Format(PyExc_TypeError, "configure: ScopeVariable.__slots__ expected to "
                                             "be name and value");
    Py_INCREF(tensor), Py_INCREF(tensor_array), Py_INCREF(holder), Py_INCREF(ndarray);
    Py_INCREF(stored_callable);
    Py_XSETREF(tensor_type, (PyTypeObject *)tensor);
    Py_XSETREF(tensor_array_type, (PyTypeObject *)tensor_array);
    Py_XSETREF(holder_type, (PyTypeObject *)holder);
    Py_XSETREF(ndarray_type, (PyTypeObject *)ndarray);
    Py_XSETREF(stored_fn, stored_callable);
    array_offset = array_at, lod_offset = lod_at, value_offset = value_at, name_offset = name_at;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"plain_step", (PyCFunction)(void (*)(void))plain_step, METH_FASTCALL,
     "plain_step(out, fn, ctx, src, *ins): what a PlainStep of these does when called."},
    {"first_run", (PyCFunction)(void (*)(void))first_run, METH_FASTCALL,
     "first_run(op, plan, values, set_handler, capsule): a live op's first run in one call; "
     "the seconds it took, or None when the op is not this path's."},
    {"fast_run", (PyCFunction)(void (*)(void))fast_run, METH_FASTCALL,
     "fast_run(last, executor, program, feed, fetch_list, scope, return_numpy, feed_var_name, "
     "fetch_var_name, use_prune): the run ``last`` describes again, in one call; "
     "NotImplemented when this run is not that one (see _steps.c)."},
    {"configure_fetches", configure_fetches, METH_VARARGS,
     "configure_fetches(FetchedArray, as_declared_scalar, fetched): what fast_run returns "
     "fetched arrays as, and the functions for the values it does not convert itself."},
    {"drop_unreachable", (PyCFunction)(void (*)(void))drop_unreachable, METH_FASTCALL,
     "drop_unreachable(ops, block_vars, values, kinds, kind_of, tensors_only, dropped, order, "
     "first): a live session's look for values nobody holds (see _steps.c); the ops whose "
     "outputs someone still holds."},
    {"configure", configure, METH_VARARGS,
     "configure(LoDTensor, LoDTensorArray, ScopeVariable, numpy.ndarray, stored): the "
     "classes the steps make and read, and the function that stores what they do not "
     "store themselves."},
    {NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_steps",
                                    "The interpreter's steps in C: see _steps.c.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__steps(void) {
    import_array();
    if (PyType_Ready(&PlainStepType) < 0 || PyType_Ready(&KernelStepType) < 0 ||
        PyType_Ready(&LiveHookType) < 0 || PyType_Ready(&ArrayStepType) < 0)
        return NULL;
    if ((one_int = PyLong_FromLong(1)) == NULL)
        return NULL;
    static struct { PyObject **name; const char *text; } const names[] = {
        {&str_value, "value"},     {&str_array, "array"},       {&str_lod, "_lod"},
        {&str_inputs, "inputs"},   {&str_outputs, "outputs"},   {&str_attrs, "attrs"},
        {&str_block, "block"},     {&str_program, "program"},
        {&empty_var_name, "@EMPTY@"}, {&str_version, "_version"},
        {&str_recording, "recording"}, {&str_trace, "trace"},      {&str_watch, "watch"},
        {&str_run_token, "run_token"}, {&str_kids, "kids"},        {&str_fast, "fast"},
        {&str_step_failed, "_step_failed"}, {&str_run_reporter, "run_reporter"},
        {&str_global_scope, "_global_scope"}, {&str_record_only, "record_only"},
        {&str_pending, "pending"},  {&str_runner, "runner"},     {&str_stats, "stats"},
        {&str_ops_run, "ops_run"},  {&str_since_sweep, "_since_sweep"},
        {&str_sweep_at, "_sweep_at"}, {&str_steps, "steps"},     {&str_last_run, "last_run"},
        {&str_first_plans, "_first_plans"}, {&str_root_scope, "_root_scope"},
        {&str_on_host, "on_host"},  {&str_op_role, "op_role"},   {&str_ops, "ops"},
        {&str_capsule, "capsule"},  {&str_arena, "arena"},       {&str_first_run, "first_run"},
        {&str_set_handler, "_set_handler"}, {&str_type, "type"},
        {&str_persistable, "persistable"}, {&str_is_data, "is_data"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i)
        if ((*names[i].name = PyUnicode_InternFromString(names[i].text)) == NULL)
            return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&PlainStepType);
    Py_INCREF(&KernelStepType);
    Py_INCREF(&LiveHookType);
    Py_INCREF(&ArrayStepType);
    if (PyModule_AddObject(m, "PlainStep", (PyObject *)&PlainStepType) < 0 ||
        PyModule_AddObject(m, "KernelStep", (PyObject *)&KernelStepType) < 0 ||
        PyModule_AddObject(m, "LiveHook", (PyObject *)&LiveHookType) < 0 ||
        PyModule_AddObject(m, "ArrayStep", (PyObject *)&ArrayStepType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
