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
 *
 * walk_block_only: the collector's walk of an op (program.Operator) visits its block and
 * class alone; see walk_block_only below.
 *
 * append_one_op: transaction.append_one_op's common case (a one-op layer's call, a
 * Variable's `+`) in one call; see append_one_op below. append_with_xshape: the same for
 * transaction.append_with_xshape (reshape, transpose, squeeze, unsqueeze, flatten: Out and
 * XShape). OneOpCall: a Variable's `+`, `*`, `<`, ... and the one-op layers, whose common
 * calls append through the same walk with no Python frame of their own; see OneOpCall.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <structmember.h>

#include "../tensor/_slots.h"
#include "../tensor/_kept.h"

static PyObject *module_name; /* "<module>", interned */
static PyObject *empty_tuple, *one;

static int frame_offset(PyFrameObject *frame, PyObject **offset) {
#if PY_VERSION_HEX >= 0x030B0000
    *offset = PyLong_FromLong(PyFrame_GetLasti(frame));
#else
    *offset = PyObject_GetAttrString((PyObject *)frame, "f_lasti");
#endif
    return *offset == NULL ? -1 : 0;
}

#define MOST_FRAMES 64 /* frames one capture keeps at most, whatever it is asked for */

static PyObject *capture_stack(long skip, long max_frames);

static PyObject *capture(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    long skip = 1, max_frames = 32;
    if (nargs > 2)
        return PyErr_Format(PyExc_TypeError, "capture expected at most 2 arguments, got %zd",
                            nargs);
    if (nargs > 0 && (skip = PyLong_AsLong(args[0])) == -1 && PyErr_Occurred())
        return NULL;
    if (nargs > 1 && (max_frames = PyLong_AsLong(args[1])) == -1 && PyErr_Occurred())
        return NULL;
    return capture_stack(skip, max_frames);
}

static PyObject *capture_stack(long skip, long max_frames) {
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

/* (name,) (a new reference, or NULL), untracked when `name` is a str: a dict of such
 * tuples is never tracked, and an op's slots need no untrack_slots walk */
static PyObject *one_name(PyObject *name) {
    PyObject *names = PyTuple_Pack(1, name);
    if (names != NULL && PyUnicode_CheckExact(name))
        PyObject_GC_UnTrack(names);
    return names;
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

/* Untrack `slots` and its tuples when it is a dict whose keys are str and whose values are str
 * or tuples of str; anything else is left as it is. (An untracked dict holds no tracked
 * tuple: inserting one tracks the dict.) */
static void untrack_slots(PyObject *slots) {
    if (!PyDict_CheckExact(slots) || !PyObject_GC_IsTracked(slots))
        return;
    Py_ssize_t pos = 0;
    PyObject *slot, *names;
    while (PyDict_Next(slots, &pos, &slot, &names))
        if (!PyUnicode_CheckExact(slot) || !holds_no_container(names))
            return;
    for (pos = 0; PyDict_Next(slots, &pos, &slot, &names);)
        if (PyObject_GC_IsTracked(names))
            PyObject_GC_UnTrack(names);
    if (PyObject_GC_IsTracked(slots))
        PyObject_GC_UnTrack(slots);
}

/* untrack_arguments(*slots): untrack_slots of each argument. */
static PyObject *untrack_arguments(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    for (Py_ssize_t a = 0; a < nargs; a++)
        untrack_slots(args[a]);
    Py_RETURN_NONE;
}

/* --- walk_block_only --------------------------------------------------------------------
 *
 * walk_block_only(Operator): the cyclic collector's walk of an op visits its class and its
 * block, not its other fields. Those hold names (str, tuples and dicts of them), plain
 * attribute values (numbers, str, lists of them: a block as its index), its call stack
 * (code objects and ints) and its source line, none of which can refer back to the op; its
 * block is the one way back (the block's ops hold the op), so every cycle through an op is
 * still found. A live loop keeps every op it appends, and walking each field of each op
 * was a cache miss per field at every pass of the collector over it. Leaving a reference
 * unvisited can only keep something alive, never free what is in use. An instance of a
 * subclass has its own fields walked first (CPython's walk of a class made in Python),
 * which leaves its class to this walk, as it would leave it to its base's own.
 */
static PyTypeObject *walked_operator_type;
static Py_ssize_t walked_block_offset;

static int walk_op_block(PyObject *op, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(op)); /* (an instance of a class made in Python holds its class) */
    Py_VISIT(SLOT(op, walked_block_offset));
    return 0;
}

static PyObject *walk_block_only(PyObject *self, PyObject *type) {
    if (!PyType_Check(type) || !PyType_HasFeature((PyTypeObject *)type, Py_TPFLAGS_HEAPTYPE) ||
        !PyType_IS_GC((PyTypeObject *)type))
        return PyErr_Format(PyExc_TypeError, "walk_block_only: a class made in Python "
                                             "expected, not %.100s", Py_TYPE(type)->tp_name);
    if (walked_operator_type != NULL && walked_operator_type != (PyTypeObject *)type)
        return PyErr_Format(PyExc_TypeError, "walk_block_only: %.100s is the op class already",
                            walked_operator_type->tp_name);
    Py_ssize_t offset;
    if (slot_offset((PyTypeObject *)type, "block", &offset) < 0)
        return NULL;
    if (walked_operator_type == NULL) {
        Py_INCREF(type);
        walked_operator_type = (PyTypeObject *)type;
    }
    walked_block_offset = offset;
    walked_operator_type->tp_traverse = walk_op_block;
    Py_RETURN_NONE;
}

/* --- append_one_op ----------------------------------------------------------------------
 *
 * append_one_op(block, op_type, inputs, attrs, dtype, layer_type=None) does what
 * transaction.append_one_op's Python (`_append_one_op`, the fallback) does, for the call a
 * live loop repeats: outside any transaction, a registered formula op or one with a plain
 * kernel (its definition keeps `_inferred`), inputs {"X": (name,)} or {"X": (x,), "Y": (y,)}
 * of the block's own LoD-tensor variables, attributes None or scalars, and each memo the
 * Python way fills already holding this call's answer:
 *
 *   completed attributes  spec._completed[key] (spec._default_attrs for none given), with
 *                         key = ((name, type(value), value), ...) as OpDef.complete_attrs
 *                         builds it;
 *   the slot check        (spec, *inputs, None, "Out") in program._single_slots_passed;
 *   shape inference       spec._inferred[(x.shape, x.dtype, x.lod_level, y.shape, y.dtype,
 *                         y.lod_level, program.version, *attrs.values(), 0)] (the 0: the fresh
 *                         temporary's LoD level), as OpDef.run_infer_shape builds it.
 *
 * It then makes the temporary `<prefix><layer_type>_<n>.tmp_<m>` (`<prefix>tmp_<n>` without
 * a layer type) and the Operator as the Python way would (the same fields, the same order
 * of the variable's fields, the call stack from the calling Python frame on), appends them,
 * advances the program's version by the Python way's two steps and calls the program's
 * append hook (a live session runs the op there). A hook that raises has the op, the
 * temporary and its name taken back by transaction._take_back_one_op.
 *
 * append_with_xshape(block, op_type, x, attrs, layer_type) is the same walk for an op of
 * the infer_from_x trait on X = x (a Variable) alone, with two temporaries, Out
 * `<prefix><layer_type>_<n>.tmp_<m>` and XShape `..._<m + 1>`, and inference's memo
 * spec._inferred_from_x[(x.shape, x.dtype, x.lod_level, program.version, "Out", "XShape",
 * *attrs.values(), 0, 0)] (a pair of fields; the zeros: the fresh temporaries' LoD levels);
 * the slot check's key ends "Out", "XShape".
 *
 * Any other call, or one whose answer a memo lacks, goes to the fallback before anything
 * is changed: the Python way is the definition, this its common case without the frames
 * (it was a third of a live op). configure_one_op names the fallback and the modules whose
 * globals are read at each call (a generator, a transaction or the registry may change
 * between calls).
 */
static PyObject *fallback_fn, *take_back_fn, *xshape_fallback_fn, *xshape_take_back_fn;
static PyObject *program_globals, *transaction_globals, *unique_name_globals,
    *annotations_globals;
/* found at the first call: the classes made here, and the ones whose methods this path
 * stands for (a subclass of Block or of the name generator may change them: the Python
 * way) */
static PyTypeObject *variable_type, *operator_type, *block_type, *generator_type, *program_type;
/* Operator's __slots__, in the order Operator.__init__ sets them */
static const char *const operator_slot_names[] = {"block", "type", "inputs", "outputs",
                                                  "attrs", "attr_types", "is_target",
                                                  "_source", "callstack"};
#define OPERATOR_SLOTS (sizeof(operator_slot_names) / sizeof(operator_slot_names[0]))
static Py_ssize_t operator_slots[OPERATOR_SLOTS];
static PyObject *str_vars, *str_ops, *str_program, *str_version_counter, *str_append_hook,
    *str_current_role, *str_version, *str_ids, *str_prefix, *str_undo, *str_inferred,
    *str_completed, *str_default_attrs, *str_list_defaults, *str_shape, *str_dtype,
    *str_lod_level, *str_block, *str_name, *str_op_defs, *str_slots_passed, *str_depth,
    *str_journal, *str_generator, *str_current, *str_x, *str_y, *str_out, *str_tmp,
    *str_variable, *str_operator, *str_block_class, *str_generator_class, *str_type,
    *str_program_class, *str_xshape, *str_inferred_from_x, *str_first_input, *str_every_input,
    *str_registry, *str_opdef_class, *str_blocks, *str_current_block_idx;
/* Variable.type, the kind a variable has unless it says otherwise (VarType.LOD_TENSOR) */
static PyObject *lod_tensor_kind;

/* Variable, Operator, Block and Program from the program module (complete only after its
 * import) and the name generator's class, and
 * Operator's slot offsets; 0 when they are not there yet, -1 with an error when Operator's
 * slots are not the ones this file sets. */
static int find_classes(void) {
    if (operator_type != NULL)
        return 1;
    PyObject *variable = PyDict_GetItemWithError(program_globals, str_variable);
    PyObject *operator = variable == NULL ? NULL
                                          : PyDict_GetItemWithError(program_globals, str_operator);
    PyObject *block = operator == NULL ? NULL
                                       : PyDict_GetItemWithError(program_globals, str_block_class);
    PyObject *program = block == NULL ? NULL
                                      : PyDict_GetItemWithError(program_globals, str_program_class);
    PyObject *generator = program == NULL ? NULL : PyDict_GetItemWithError(unique_name_globals,
                                                                           str_generator_class);
    if (generator == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyType_Check(variable) || !PyType_Check(operator) || !PyType_Check(block) ||
        !PyType_Check(program) || !PyType_Check(generator)) {
        PyErr_SetString(PyExc_TypeError, "append_one_op: program.Variable, Operator, Block, "
                                         "Program and unique_name.UniqueNameGenerator expected "
                                         "to be classes");
        return -1;
    }
    PyObject *slots = PyObject_GetAttrString(operator, "__slots__");
    if (slots == NULL)
        return -1;
    /* every slot but __weakref__ is one this file sets: a slot added to Operator must be
     * added here too, or made ops would lack it */
    Py_ssize_t n = PySequence_Size(slots);
    int same = n == (Py_ssize_t)OPERATOR_SLOTS + 1;
    for (Py_ssize_t i = 0; same && i < (Py_ssize_t)OPERATOR_SLOTS; i++) {
        PyObject *item = PySequence_GetItem(slots, i);
        same = item != NULL && PyUnicode_Check(item) &&
               PyUnicode_CompareWithASCIIString(item, operator_slot_names[i]) == 0;
        Py_XDECREF(item);
    }
    Py_DECREF(slots);
    if (PyErr_Occurred())
        return -1;
    if (!same) {
        PyErr_SetString(PyExc_TypeError, "append_one_op: Operator.__slots__ expected to be "
                                         "the fields _op_record.c sets, then __weakref__");
        return -1;
    }
    for (size_t i = 0; i < OPERATOR_SLOTS; i++)
        if (slot_offset((PyTypeObject *)operator, operator_slot_names[i], &operator_slots[i]) < 0)
            return -1;
    if ((lod_tensor_kind = PyObject_GetAttr(variable, str_type)) == NULL)
        return -1;
    Py_INCREF(variable), Py_INCREF(operator), Py_INCREF(block), Py_INCREF(program);
    Py_INCREF(generator);
    variable_type = (PyTypeObject *)variable;
    block_type = (PyTypeObject *)block;
    program_type = (PyTypeObject *)program;
    generator_type = (PyTypeObject *)generator;
    operator_type = (PyTypeObject *)operator; /* (last: it says all four are found) */
    return 1;
}

/* --- op_arguments ---------------------------------------------------------------------
 *
 * op_arguments(inputs, outputs, Variable): Block.append_op's arguments in the form an op
 * keeps them, (slot -> tuple of names for the inputs, the same for the outputs, whether
 * every slot holds one name), where each slot holds a name, a Variable, or a list or tuple
 * of them (None: no argument; a falsy `inputs` or `outputs`: no slots). None when an
 * argument is of any other kind, or a slot map is no dict: the Python way
 * (program._slot_arguments) is the definition, and names the error. Every op appended
 * through append_op passes here; the loop over slots in Python was a tenth of building a
 * Transformer.
 */

/* `item`'s name as an argument (a new reference): a str itself, a Variable's name; NULL
 * without an error for anything else */
static PyObject *argument_name(PyObject *item, PyTypeObject *variable) {
    if (PyUnicode_Check(item)) {
        Py_INCREF(item);
        return item;
    }
    if (PyObject_TypeCheck(item, variable))
        return PyObject_GetAttr(item, str_name);
    return NULL;
}

/* slot -> tuple of names of `slots` into *args (a new dict), *single cleared when a slot
 * holds another number of names than one; 1, or 0 (not this path), or -1 (an error) */
static int slot_arguments(PyObject *slots, PyTypeObject *variable, PyObject **args,
                          int *single) {
    *args = NULL;
    int truth = slots == Py_None ? 0 : PyObject_IsTrue(slots);
    if (truth < 0)
        return -1;
    if (truth && !PyDict_Check(slots))
        return 0;
    PyObject *made = PyDict_New();
    if (made == NULL)
        return -1;
    Py_ssize_t at = 0;
    PyObject *slot, *value;
    while (truth && PyDict_Next(slots, &at, &slot, &value)) {
        if (value == Py_None)
            continue;
        PyObject *names;
        if (PyList_Check(value) || PyTuple_Check(value)) {
            PyObject *items = PySequence_Fast(value, ""); /* (the list or tuple itself) */
            if (items == NULL)
                goto failed;
            Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
            names = PyTuple_New(n);
            for (Py_ssize_t i = 0; names != NULL && i < n; i++) {
                /* (a name read through a subclass's property may change the list: then
                 * the Python way) */
                PyObject *item = PySequence_Fast_GET_SIZE(items) != n ? NULL :
                    PySequence_Fast_GET_ITEM(items, i);
                Py_XINCREF(item);
                PyObject *name = item == NULL ? NULL : argument_name(item, variable);
                Py_XDECREF(item);
                if (name == NULL)
                    Py_CLEAR(names);
                else
                    PyTuple_SET_ITEM(names, i, name);
            }
            Py_DECREF(items);
            if (n != 1)
                *single = 0;
        } else {
            PyObject *name = argument_name(value, variable);
            names = name == NULL ? NULL : one_name(name);
            Py_XDECREF(name);
        }
        if (names == NULL)
            goto failed;
        int set = PyDict_SetItem(made, slot, names);
        Py_DECREF(names);
        if (set < 0)
            goto failed;
    }
    *args = made;
    return 1;
failed:
    Py_DECREF(made);
    return PyErr_Occurred() ? -1 : 0;
}

static PyObject *op_arguments(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyType_Check(args[2]))
        return PyErr_Format(PyExc_TypeError, "op_arguments expected inputs, outputs and the "
                                             "Variable class");
    PyTypeObject *variable = (PyTypeObject *)args[2];
    int single = 1;
    PyObject *in_args, *out_args;
    int found = slot_arguments(args[0], variable, &in_args, &single);
    if (found == 1) {
        found = slot_arguments(args[1], variable, &out_args, &single);
        if (found != 1)
            Py_DECREF(in_args);
    }
    if (found < 0)
        return NULL;
    if (found == 0)
        Py_RETURN_NONE;
    PyObject *result = PyTuple_Pack(3, in_args, out_args, single ? Py_True : Py_False);
    Py_DECREF(in_args);
    Py_DECREF(out_args);
    return result;
}

/* the two appends this file makes: append_one_op's (the inputs given, one Out) and
 * append_with_xshape's (X given, Out and the XShape its gradient reads) */
enum form { ONE_OUT, WITH_XSHAPE };

static PyObject *call_fallback(enum form form, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames) {
    PyObject *fallback = form == ONE_OUT ? fallback_fn : xshape_fallback_fn;
    if (fallback == NULL)
        return PyErr_Format(PyExc_RuntimeError, "append_one_op: configure_one_op() was not "
                                                "called");
    return PyObject_Vectorcall(fallback, args, nargsf, kwnames);
}

/* `value`'s single name when it is a 1-tuple of str (borrowed), else NULL */
static PyObject *single_name(PyObject *value) {
    if (!PyTuple_CheckExact(value) || PyTuple_GET_SIZE(value) != 1 ||
        !PyUnicode_CheckExact(PyTuple_GET_ITEM(value, 0)))
        return NULL;
    return PyTuple_GET_ITEM(value, 0);
}

/* ids.get(key, 0) as a new reference to an exact int, or NULL (no error: not this path; an
 * error: failed) */
static PyObject *counter(PyObject *ids, PyObject *key) {
    PyObject *n = PyDict_GetItemWithError(ids, key);
    if (n == NULL)
        return PyErr_Occurred() ? NULL : PyLong_FromLong(0);
    if (!PyLong_CheckExact(n))
        return NULL;
    Py_INCREF(n);
    return n;
}

/* `a` + `b` + "_" + str(n) + `suffix` (`n` an exact int): a generator's name, as an f-string
 * makes it. ASCII parts are copied into the new str directly (PyUnicode_FromFormat parses
 * its format on every call: two names took a twentieth of a live op). */
static PyObject *numbered(PyObject *a, PyObject *b, PyObject *n, const char *suffix) {
    long value = PyLong_AsLong(n);
    if (value == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return NULL;
        PyErr_Clear(); /* (a count past a C long: the format writes it) */
    }
    size_t suffix_length = strlen(suffix);
    if (value < 0 || suffix_length > 8 || !PyUnicode_IS_ASCII(a) || !PyUnicode_IS_ASCII(b))
        return PyUnicode_FromFormat("%U%U_%S%s", a, b, n, suffix);
    char digits[32]; /* "_<n><suffix>", written backwards from the end (no printf: it
                      * cost as much as the format) */
    char *end = digits + sizeof digits, *at = end - suffix_length;
    memcpy(at, suffix, suffix_length);
    do {
        *--at = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    *--at = '_';
    int n_digits = (int)(end - at);
    Py_ssize_t a_length = PyUnicode_GET_LENGTH(a), b_length = PyUnicode_GET_LENGTH(b);
    PyObject *joined = PyUnicode_New(a_length + b_length + n_digits, 127);
    if (joined == NULL)
        return NULL;
    Py_UCS1 *data = PyUnicode_1BYTE_DATA(joined);
    memcpy(data, PyUnicode_1BYTE_DATA(a), a_length);
    memcpy(data + a_length, PyUnicode_1BYTE_DATA(b), b_length);
    memcpy(data + a_length + b_length, at, n_digits);
    return joined;
}

/* whether ``value`` is of a class OpDef.complete_attrs keys its memo by (registry._SCALARS) */
static int is_scalar(PyObject *value) {
    PyTypeObject *kind = Py_TYPE(value);
    return kind == &PyLong_Type || kind == &PyFloat_Type || kind == &PyBool_Type ||
           kind == &PyUnicode_Type || value == Py_None;
}

static PyObject *str_negative_zero; /* registry.NEGATIVE_ZERO */

/* value's class in a memo's key (borrowed): a negative zero's is "-0.0", as
 * registry._key_class gives it (-0.0 == 0.0, but a scale by one is not the other's) */
static PyObject *key_class(PyObject *value) {
    if (PyFloat_CheckExact(value) && PyFloat_AS_DOUBLE(value) == 0.0 &&
        signbit(PyFloat_AS_DOUBLE(value)))
        return str_negative_zero;
    return (PyObject *)Py_TYPE(value);
}

/* --- what an append asks its op's definition and memos -----------------------------------
 *
 * spec_field(spec, field): an OpDef's field as getattr reads it (a new reference, or NULL
 * with an error): its memos, its attribute defaults, its first input slot. They are the
 * definition's instance dict's entries (set in OpDef.__init__; the class defines none of
 * those names), read from the dict and kept per definition while it is unchanged; a
 * definition of another class, or a field its dict lacks, is read by getattr.
 *
 * A live loop asks the same memo the same key op after op (inference's, of X's and Y's
 * fields; the slot check's): the last key a memo answered is kept as its parts, held (so
 * an address is still that object's), with the answer. Parts identical to those make an
 * equal key; the memo, unchanged since (its version tag), gives the same answer; the slot
 * check's answer depends on its key alone. */
enum spec_field { INFERRED, INFERRED_FROM_X, FIRST_INPUT, DEFAULT_ATTRS, LIST_DEFAULTS,
                  COMPLETED, EVERY_INPUT, SPEC_FIELDS };
static PyObject **const spec_keys[SPEC_FIELDS] = {
    &str_inferred, &str_inferred_from_x, &str_first_input, &str_default_attrs,
    &str_list_defaults, &str_completed, &str_every_input};
/* a table's place for an object's address (objects are 16-byte aligned) */
#define PLACE_OF(address, places) ((((uintptr_t)(address) >> 4) ^ ((uintptr_t)(address) >> 10)) % (places))

#if DICT_TAGS /* (without tags nothing would be kept: getattr's one read is cheaper) */
static PyTypeObject *opdef_type; /* registry.OpDef, found at the first definition read */
#define KEPT_SPECS 32
static struct {
    KeptDict kept;
    PyObject *reads[SPEC_FIELDS];
} kept_specs[KEPT_SPECS];

/* 1 when `type` is registry.OpDef, whose fields are plain instance attributes */
static int is_opdef(PyTypeObject *type) {
    if (opdef_type != NULL)
        return type == opdef_type;
    PyObject *registry = PyDict_GetItemWithError(program_globals, str_registry), *found;
    if (registry == NULL || registry == Py_None || !PyModule_Check(registry)) {
        PyErr_Clear();
        return 0; /* (not loaded yet) */
    }
    if ((found = PyObject_GetAttr(registry, str_opdef_class)) == NULL) {
        PyErr_Clear();
        return 0;
    }
    int plain = PyType_Check(found) &&
                ((PyTypeObject *)found)->tp_getattro == PyObject_GenericGetAttr;
    for (int i = 0; plain && i < SPEC_FIELDS; i++)
        plain = _PyType_Lookup((PyTypeObject *)found, *spec_keys[i]) == NULL;
    if (!plain) {
        Py_DECREF(found);
        return 0;
    }
    opdef_type = (PyTypeObject *)found;
    return type == opdef_type;
}

#endif

static PyObject *spec_field(PyObject *spec, enum spec_field field) {
#if DICT_TAGS
    if (is_opdef(Py_TYPE(spec))) {
        PyObject *d = PyObject_GenericGetDict(spec, NULL), *value = NULL;
        if (d == NULL)
            return NULL;
        if (PyDict_CheckExact(d)) {
            size_t at = PLACE_OF(d, KEPT_SPECS);
            if (read_kept(&kept_specs[at].kept, d, spec_keys, kept_specs[at].reads,
                          SPEC_FIELDS) < 0) {
                Py_DECREF(d);
                return NULL;
            }
            value = Py_XNewRef(kept_specs[at].reads[field]);
        }
        Py_DECREF(d);
        if (value != NULL)
            return value;
    }
#endif
    return PyObject_GetAttr(spec, *spec_keys[field]);
}

#define MOST_PARTS 16
#define RECENT_KEYS 64
typedef struct {
    PyObject *memo; /* (its address alone) */
    uint64_t tag;   /* 0: nothing kept */
    Py_ssize_t n;
    PyObject *parts[MOST_PARTS], *answer;
} RecentKey;
/* inference's memos' (by memo), the slot check's (by op definition) */
static RecentKey recent_inferred[RECENT_KEYS], recent_slots[RECENT_KEYS];

/* `memo`'s answer for `key` when its parts are the ones kept (borrowed: the table holds
 * it), else NULL; `tag`: the memo's state (DICT_TAG; 1 for a memo whose answer depends on
 * the key alone) */
static PyObject *recent_answer(RecentKey *table, PyObject *memo, uint64_t tag, PyObject *key) {
    RecentKey *recent = &table[PLACE_OF(memo, RECENT_KEYS)];
    Py_ssize_t n = PyTuple_GET_SIZE(key);
    if (tag == 0 || recent->tag != tag || recent->memo != memo || recent->n != n)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        if (recent->parts[i] != PyTuple_GET_ITEM(key, i))
            return NULL;
    return recent->answer;
}

/* `answer`, given by `memo` in state `tag` for `key`, kept (the old parts let go after the
 * new ones are in place: letting go may run code that asks again) */
static void keep_answer(RecentKey *table, PyObject *memo, uint64_t tag, PyObject *key,
                        PyObject *answer) {
    Py_ssize_t n = PyTuple_GET_SIZE(key);
    if (tag == 0 || n > MOST_PARTS)
        return;
    RecentKey *recent = &table[PLACE_OF(memo, RECENT_KEYS)];
    PyObject *old[MOST_PARTS + 1];
    Py_ssize_t n_old = recent->tag == 0 ? 0 : recent->n;
    for (Py_ssize_t i = 0; i < n_old; i++)
        old[i] = recent->parts[i];
    old[n_old] = recent->tag == 0 ? NULL : recent->answer;
    for (Py_ssize_t i = 0; i < n; i++)
        recent->parts[i] = Py_NewRef(PyTuple_GET_ITEM(key, i));
    recent->answer = Py_NewRef(answer);
    recent->memo = memo, recent->tag = tag, recent->n = n;
    for (Py_ssize_t i = 0; i <= n_old; i++)
        Py_XDECREF(old[i]);
}

/* memo[key] (a new reference), or NULL: with an error, or none; the last answer kept */
static PyObject *memo_answer(RecentKey *table, PyObject *memo, PyObject *key) {
    uint64_t tag = DICT_TAG(memo); /* (before the lookup, whose __eq__ may change it) */
    PyObject *answer = recent_answer(table, memo, tag, key);
    if (answer != NULL)
        return Py_NewRef(answer);
    if ((answer = PyDict_GetItemWithError(memo, key)) == NULL)
        return NULL;
    Py_INCREF(answer);
    keep_answer(table, memo, tag, key, answer);
    return answer;
}

/* whether `key` passed the slot check (in `passed`, the memo of those that did): 1, 0, or
 * -1 with an error */
static int slots_passed_before(PyObject *passed, PyObject *spec, PyObject *key) {
    if (recent_answer(recent_slots, spec, 1, key) != NULL)
        return 1;
    int found = PySet_Contains(passed, key);
    if (found == 1)
        keep_answer(recent_slots, spec, 1, key, Py_True);
    return found;
}

/* OpDef.complete_attrs's answer from its memo: the completed attributes and their types
 * (new references in *attrs_out, *types_out), 1; 0 when the memo has no answer (or a value
 * is not a scalar or a list or tuple of them); -1 on error. The key is the one the Python
 * builds: (name, class, value) for a scalar, (name, class, tuple(value), the items'
 * classes) for a list or tuple, a negative zero's class "-0.0" (key_class). */
static int completed_attrs(PyObject *spec, PyObject *given, PyObject **attrs_out,
                           PyObject **types_out) {
    PyObject *attrs = NULL, *types = NULL, *lists = NULL, *memo_attrs = NULL,
             *memo_types = NULL, *completed = NULL, *key = NULL;
    int found = -1;
    if (given == Py_None || PyDict_GET_SIZE(given) == 0) {
        if ((memo_attrs = spec_field(spec, DEFAULT_ATTRS)) == NULL ||
            (lists = spec_field(spec, LIST_DEFAULTS)) == NULL)
            goto done;
        if (!PyDict_CheckExact(memo_attrs) || !PyList_CheckExact(lists)) {
            found = 0;
            goto done;
        }
    } else {
        if ((key = PyTuple_New(PyDict_GET_SIZE(given))) == NULL)
            goto done;
        Py_ssize_t pos = 0, at = 0;
        PyObject *name, *value;
        while (PyDict_Next(given, &pos, &name, &value)) {
            PyTypeObject *kind = Py_TYPE(value);
            PyObject *item;
            if (is_scalar(value)) {
                item = PyTuple_Pack(3, name, key_class(value), value);
            } else if (kind == &PyList_Type || kind == &PyTuple_Type) {
                /* (name, kind, tuple(value), tuple(map(type, value))), scalars only */
                PyObject *items = PySequence_Tuple(value), *classes = NULL;
                if (items == NULL ||
                    (classes = PyTuple_New(PyTuple_GET_SIZE(items))) == NULL) {
                    Py_XDECREF(items);
                    goto done;
                }
                for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(items); ++i) {
                    PyObject *one_item = PyTuple_GET_ITEM(items, i);
                    if (!is_scalar(one_item)) {
                        Py_DECREF(items), Py_DECREF(classes);
                        found = 0;
                        goto done;
                    }
                    PyTuple_SET_ITEM(classes, i, Py_NewRef(key_class(one_item)));
                }
                item = PyTuple_Pack(4, name, (PyObject *)kind, items, classes);
                Py_DECREF(items), Py_DECREF(classes);
            } else {
                found = 0; /* (other values: the Python way) */
                goto done;
            }
            if (item == NULL)
                goto done;
            PyTuple_SET_ITEM(key, at++, item);
        }
        if ((completed = spec_field(spec, COMPLETED)) == NULL)
            goto done;
        if (!PyDict_CheckExact(completed)) {
            found = 0;
            goto done;
        }
        PyObject *entry = PyDict_GetItemWithError(completed, key);
        if (entry == NULL) {
            found = PyErr_Occurred() ? -1 : 0;
            goto done;
        }
        if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3 ||
            !PyDict_CheckExact(PyTuple_GET_ITEM(entry, 0)) ||
            !PyDict_CheckExact(PyTuple_GET_ITEM(entry, 1)) ||
            !PyList_CheckExact(PyTuple_GET_ITEM(entry, 2))) {
            found = 0;
            goto done;
        }
        memo_attrs = PyTuple_GET_ITEM(entry, 0), memo_types = PyTuple_GET_ITEM(entry, 1);
        lists = PyTuple_GET_ITEM(entry, 2);
        Py_INCREF(memo_attrs), Py_INCREF(memo_types), Py_INCREF(lists);
    }
    /* copies: no op shares the memo's dicts or lists */
    if ((attrs = PyDict_Copy(memo_attrs)) == NULL ||
        (types = memo_types != NULL && PyDict_GET_SIZE(memo_types) ? PyDict_Copy(memo_types)
                                                                  : PyDict_New()) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lists); i++) {
        PyObject *name = PyList_GET_ITEM(lists, i);
        PyObject *value = PyDict_GetItemWithError(attrs, name);
        PyObject *copy = value == NULL ? NULL : PySequence_List(value);
        if (copy == NULL) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_KeyError, "append_one_op: list attribute %R missing", name);
            goto done;
        }
        int failed = PyDict_SetItem(attrs, name, copy);
        Py_DECREF(copy);
        if (failed < 0)
            goto done;
    }
    *attrs_out = attrs, *types_out = types;
    attrs = types = NULL;
    found = 1;
done:
    Py_XDECREF(attrs), Py_XDECREF(types), Py_XDECREF(lists), Py_XDECREF(memo_attrs);
    Py_XDECREF(memo_types), Py_XDECREF(completed), Py_XDECREF(key);
    return found;
}

static PyObject *completed(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || (args[1] != Py_None && !PyDict_Check(args[1])))
        return PyErr_Format(PyExc_TypeError, "completed expected an op definition and a "
                            "dict of attributes (or None)");
    PyObject *attrs, *types;
    int found = completed_attrs(args[0], args[1], &attrs, &types);
    if (found <= 0) {
        if (found < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *pair = PyTuple_Pack(2, attrs, types);
    Py_DECREF(attrs), Py_DECREF(types);
    return pair;
}

/* `dict`'s keys (values with `values`) into `tuple` from index `at` on (new references) */
static int put_items(PyObject *tuple, Py_ssize_t at, PyObject *dict, int values) {
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        PyObject *item = values ? value : key;
        if (values && PyList_CheckExact(item)) {
            /* a list attribute (a reduction's dims) keyed as a tuple, as
             * OpDef.run_infer_shape keys it */
            if ((item = PyList_AsTuple(item)) == NULL)
                return -1;
        } else {
            Py_INCREF(item);
        }
        PyTuple_SET_ITEM(tuple, at++, item);
    }
    return 0;
}

/* attr_values(attrs): the values of a dict of attributes in its order, a list as a tuple:
 * the part of each inference memo's key the attributes give (OpDef.run_infer_shape's,
 * OpDef._infer_from_x's and this module's keys) */
static PyObject *attr_values(PyObject *module, PyObject *attrs) {
    if (!PyDict_CheckExact(attrs))
        return PyErr_Format(PyExc_TypeError, "attr_values expected a dict, but received %s",
                            Py_TYPE(attrs)->tp_name);
    PyObject *values = PyTuple_New(PyDict_GET_SIZE(attrs));
    if (values != NULL && put_items(values, 0, attrs, 1) < 0)
        Py_CLEAR(values);
    return values;
}

/* (variable.shape, variable.dtype, variable.lod_level) into items[0..2] (new references) */
static int var_fields(PyObject *var, PyObject **items) {
    if ((items[0] = PyObject_GetAttr(var, str_shape)) == NULL)
        return -1;
    if ((items[1] = PyObject_GetAttr(var, str_dtype)) == NULL) {
        Py_CLEAR(items[0]);
        return -1;
    }
    if ((items[2] = PyObject_GetAttr(var, str_lod_level)) == NULL) {
        Py_CLEAR(items[0]);
        Py_CLEAR(items[1]);
        return -1;
    }
    return 0;
}

/* 1 when `var` is a LoD tensor (its type the class's default), 0 when not, -1 on error */
static int holds_lod_tensor(PyObject *var) {
    PyObject *kind = PyObject_GetAttr(var, str_type);
    if (kind == NULL)
        return -1;
    int same = kind == lod_tensor_kind;
    Py_DECREF(kind);
    return same;
}

/* The instance dict of a Block, Program or name generator (a new reference): these are few
 * and every op reads several of their attributes, which a dict lookup reads for a quarter
 * of an attribute read's instructions (the dict is made once, from the inline values). A
 * plain instance attribute of these exact classes is its dict entry. */
static PyObject *instance_dict(PyObject *obj) {
    PyObject *d = PyObject_GenericGetDict(obj, NULL);
    if (d != NULL && !PyDict_CheckExact(d)) {
        Py_CLEAR(d);
        PyErr_SetString(PyExc_TypeError, "append_one_op: an instance dict expected");
    }
    return d;
}

/* `obj`'s instance dict (a new reference in *d) and read_kept's reads of it: 0, or -1 with
 * an error */
static int read_instance(PyObject *obj, PyObject **d, KeptDict *kept, PyObject **const *keys,
                         PyObject **values, int n) {
    if ((*d = instance_dict(obj)) == NULL)
        return -1;
    return read_kept(kept, *d, keys, values, n) < 0 ? -1 : 0;
}

/* A fresh Variable of `block` named `name` with (shape, dtype, lod_level) `fields`, its
 * instance fields in the order the Python way writes them: block, name, dtype, shape,
 * lod_level (a new reference, or NULL) */
static PyObject *new_variable(PyObject *block, PyObject *name, PyObject *fields) {
    PyObject *var = PyBaseObject_Type.tp_new(variable_type, empty_tuple, NULL);
    if (var == NULL || PyObject_SetAttr(var, str_block, block) < 0 ||
        PyObject_SetAttr(var, str_name, name) < 0 ||
        PyObject_SetAttr(var, str_dtype, PyTuple_GET_ITEM(fields, 1)) < 0 ||
        PyObject_SetAttr(var, str_shape, PyTuple_GET_ITEM(fields, 0)) < 0 ||
        PyObject_SetAttr(var, str_lod_level, PyTuple_GET_ITEM(fields, 2)) < 0)
        Py_CLEAR(var);
    return var;
}

/* An Operator of `block` with these fields, as Operator.__init__ sets them, and the call
 * stack from the calling Python frame on; its argument dicts untracked (a new reference,
 * or NULL) */
static PyObject *new_operator(PyObject *block, PyObject *op_type, PyObject *inputs,
                              PyObject *outputs, PyObject *attrs, PyObject *types) {
    PyObject *stack = capture_stack(1, 32), *op;
    if (stack == NULL)
        return NULL;
    if ((op = PyBaseObject_Type.tp_new(operator_type, empty_tuple, NULL)) == NULL) {
        Py_DECREF(stack);
        return NULL;
    }
    PyObject *fields[OPERATOR_SLOTS] = {block, op_type, inputs, outputs, attrs, types,
                                        Py_False, Py_None, stack};
    for (size_t i = 0; i < OPERATOR_SLOTS; i++) {
        Py_INCREF(fields[i]);
        Py_XSETREF(SLOT(op, operator_slots[i]), fields[i]);
    }
    Py_DECREF(stack);
    untrack_slots(inputs);
    untrack_slots(outputs);
    return op;
}

/* what each append reads of its program's dict (kept_program's): its op role guard, append
 * hook, desc version and version counter, the last kept current through the writes below */
static KeptDict kept_program;
static PyObject **const program_keys[] = {&str_current_role, &str_append_hook, &str_version,
                                          &str_version_counter};
static PyObject *program_reads[4];
/* and what a layer reads of its default program's (kept_blocks'): its blocks and current
 * block's index */
static KeptDict kept_blocks;
static PyObject **const blocks_keys[] = {&str_blocks, &str_current_block_idx};
static PyObject *blocks_reads[2];

/* The program's version advanced by the Python way's `steps` (one per temporary made, one
 * for the op), then its append hook (a live session) called with the appended `op`: 0, or
 * -1 with the error (the caller takes the op back) */
static int advance_and_run(PyObject *program_dict, PyObject *version, Py_ssize_t steps,
                           PyObject *hook, PyObject *op) {
    PyObject *count = PyLong_FromSsize_t(steps);
    PyObject *advanced = count == NULL ? NULL : PyNumber_Add(version, count);
    Py_XDECREF(count);
    if (advanced == NULL)
        return -1;
    /* (the counter kept is an exact int, whose replacing runs no code) */
    int current = kept_current(&kept_program, program_dict) &&
                  PyLong_CheckExact(program_reads[3]),
        blocks_current = current && kept_current(&kept_blocks, program_dict);
    if (PyDict_SetItem(program_dict, str_version_counter, advanced) < 0) {
        Py_DECREF(advanced);
        return -1;
    }
    if (current) {
        kept_written(&kept_program, program_dict);
        program_reads[3] = advanced; /* (borrowed: the dict holds it) */
    }
    if (blocks_current)
        kept_written(&kept_blocks, program_dict);
    Py_DECREF(advanced);
    if (hook != Py_None) {
        PyObject *ran = PyObject_CallOneArg(hook, op);
        if (ran == NULL)
            return -1;
        Py_DECREF(ran);
    }
    return 0;
}

/* What an append in C reads of its block, the block's program and the name generator (new
 * references) */
typedef struct {
    PyObject *block_dict, *vars, *ops, *program, *program_dict, *hook, *desc_version,
        *version, *generator, *generator_dict, *ids, *prefix;
} AppendState;

/* 1 with `state` filled when the block, its program and the generator are as this path
 * knows them: the block's vars a dict and its ops a list, its program a Program with no op
 * role guard (which stamps its ops) and an int version, the name generator with no undo
 * log (only a transaction keeps one); 0 when not (the Python way), -1 with an error; `state`
 * holds nothing unless 1 */
static int read_append_state(PyObject *block, AppendState *state) {
    /* (what each call reads of the four dicts, read again only when one changed) */
    static KeptDict kept_block, kept_names, kept_generator;
    static PyObject **const block_keys[] = {&str_vars, &str_ops, &str_program},
                    **const names_keys[] = {&str_generator},
                    **const generator_keys[] = {&str_undo, &str_ids, &str_prefix};
    static PyObject *block_reads[3], *names_reads[1], *generator_reads[3];
    PyObject **fields = &state->block_dict;
    int found = 0;
    *state = (AppendState){NULL};
    if (read_instance(block, &state->block_dict, &kept_block, block_keys, block_reads,
                      KEPT_COUNT(block_keys)) < 0)
        goto done;
    state->vars = Py_XNewRef(block_reads[0]), state->ops = Py_XNewRef(block_reads[1]);
    state->program = Py_XNewRef(block_reads[2]);
    if (state->vars == NULL || state->ops == NULL || state->program == NULL ||
        !PyDict_CheckExact(state->vars) || !PyList_CheckExact(state->ops) ||
        !Py_IS_TYPE(state->program, program_type) ||
        read_instance(state->program, &state->program_dict, &kept_program, program_keys,
                      program_reads, KEPT_COUNT(program_keys)) < 0)
        goto done;
    PyObject *role = Py_XNewRef(program_reads[0]); /* (its truth may run any code) */
    state->hook = Py_XNewRef(program_reads[1]), state->desc_version = Py_XNewRef(program_reads[2]);
    state->version = Py_XNewRef(program_reads[3]);
    int has_role = role == NULL ? 1 : role == Py_None ? 0 : PyObject_IsTrue(role);
    Py_XDECREF(role);
    if (has_role != 0 || state->hook == NULL || state->desc_version == NULL ||
        state->version == NULL || !PyLong_CheckExact(state->version) ||
        read_kept(&kept_names, unique_name_globals, names_keys, names_reads,
                  KEPT_COUNT(names_keys)) < 0)
        goto done;
    if ((state->generator = Py_XNewRef(names_reads[0])) == NULL) {
        PyErr_Format(PyExc_KeyError, "append_one_op: module global %R expected", str_generator);
        goto done;
    }
    if (!Py_IS_TYPE(state->generator, generator_type) ||
        read_instance(state->generator, &state->generator_dict, &kept_generator,
                      generator_keys, generator_reads, KEPT_COUNT(generator_keys)) < 0)
        goto done;
    state->ids = Py_XNewRef(generator_reads[1]), state->prefix = Py_XNewRef(generator_reads[2]);
    found = generator_reads[0] == Py_None && state->ids != NULL && state->prefix != NULL &&
            PyDict_CheckExact(state->ids) && PyUnicode_CheckExact(state->prefix);
done:
    if (found != 1) {
        if (PyErr_Occurred())
            found = -1; /* (an error reading them; none: the Python way) */
        for (size_t i = 0; i < sizeof(AppendState) / sizeof(PyObject *); i++)
            Py_CLEAR(fields[i]);
    }
    return found;
}

/* 1 when no transaction is open and no name_scope or device_guard annotates ops, with the
 * registry's op definitions and the slot check's memo (borrowed) in *op_defs and *passed;
 * 0 when one is (the Python way), -1 with an error. */
static int plain_append(PyObject **op_defs, PyObject **passed) {
    static KeptDict kept_transaction, kept_annotations, kept_registry;
    static PyObject **const transaction_keys[] = {&str_depth, &str_journal},
                    **const annotations_keys[] = {&str_current},
                    **const registry_keys[] = {&str_op_defs, &str_slots_passed};
    static PyObject *transaction_reads[2], *annotations_reads[1], *registry_reads[2];
    if (read_kept(&kept_transaction, transaction_globals, transaction_keys,
                  transaction_reads, KEPT_COUNT(transaction_keys)) < 0 ||
        read_kept(&kept_annotations, annotations_globals, annotations_keys,
                  annotations_reads, KEPT_COUNT(annotations_keys)) < 0 ||
        read_kept(&kept_registry, program_globals, registry_keys, registry_reads,
                  KEPT_COUNT(registry_keys)) < 0)
        return -1;
    PyObject *depth = transaction_reads[0], *journal = transaction_reads[1],
             *current = annotations_reads[0];
    *op_defs = registry_reads[0], *passed = registry_reads[1];
    if (depth == NULL || journal == NULL || current == NULL || *op_defs == NULL ||
        *passed == NULL) {
        PyErr_SetString(PyExc_KeyError, "append_one_op: the transaction's depth and journal, "
                        "the annotations' current and the registry's op definitions and "
                        "slot memo expected as module globals");
        return -1;
    }
    if (!PyLong_CheckExact(depth) || PyLong_AsLong(depth) != 0 || journal != Py_None ||
        !PyDict_CheckExact(current) || PyDict_GET_SIZE(current) != 0)
        return 0;
    return PyDict_CheckExact(*op_defs) && PyAnySet_CheckExact(*passed);
}

/* Call `take_back(*args)` with the error set now (a hook's) kept: raised again after it, or,
 * when the take-back fails, its own error raised with the hook's as its context. */
static void take_back_raising(PyObject *take_back, PyObject *const *args, size_t nargs) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject *undone = PyObject_Vectorcall(take_back, args, nargs, NULL);
    if (undone != NULL) {
        Py_DECREF(undone);
        PyErr_Restore(type, value, traceback);
        return;
    }
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != NULL && value != NULL)
        PyException_SetTraceback(value, traceback);
    PyObject *t2, *v2, *tb2;
    PyErr_Fetch(&t2, &v2, &tb2);
    PyErr_NormalizeException(&t2, &v2, &tb2);
    if (v2 != NULL && value != NULL)
        PyException_SetContext(v2, value); /* (steals value) */
    else
        Py_XDECREF(value);
    Py_XDECREF(type), Py_XDECREF(traceback);
    PyErr_Restore(t2, v2, tb2);
}

static PyObject *append_record(enum form form, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (program_globals == NULL || kwnames != NULL ||
        (form == ONE_OUT ? nargs < 5 || nargs > 6 : nargs != 5))
        return call_fallback(form, args, nargsf, kwnames);
    int classes = find_classes();
    if (classes <= 0)
        return classes < 0 ? NULL : call_fallback(form, args, nargsf, kwnames);
    /* append_one_op(block, op_type, inputs, attrs, dtype, layer_type=None): (args[4], the
     * dtype, is not read: the temporary takes inference's, which the Python way writes over
     * it); append_with_xshape(block, op_type, x, attrs, layer_type): inputs {"X": (x.name,)} */
    PyObject *block = args[0], *op_type = args[1], *inputs = args[2], *given = args[3],
             *layer_type = form == WITH_XSHAPE ? args[4] : nargs == 6 ? args[5] : Py_None;
    PyObject *made_inputs = NULL, *x_var_name = NULL, *name2 = NULL, *var2 = NULL,
             *out_names2 = NULL, *m2 = NULL, *first_slot = NULL;
    if (form == WITH_XSHAPE) {
        if (!PyObject_TypeCheck(inputs, variable_type) || layer_type == Py_None)
            return call_fallback(form, args, nargsf, kwnames);
        PyObject *names = NULL;
        if ((x_var_name = PyObject_GetAttr(inputs, str_name)) == NULL)
            return NULL;
        if (!PyUnicode_CheckExact(x_var_name)) {
            Py_DECREF(x_var_name);
            return call_fallback(form, args, nargsf, kwnames);
        }
        if ((names = one_name(x_var_name)) == NULL ||
            (made_inputs = PyDict_New()) == NULL ||
            PyDict_SetItem(made_inputs, str_x, names) < 0) {
            Py_XDECREF(names), Py_XDECREF(made_inputs), Py_DECREF(x_var_name);
            return NULL;
        }
        Py_DECREF(names);
        inputs = made_inputs;
    }
    PyObject *vars = NULL, *ops = NULL, *program = NULL, *hook = NULL,
             *desc_version = NULL, *version = NULL, *generator = NULL,
             *ids = NULL, *prefix = NULL, *inferred = NULL, *attrs = NULL, *types = NULL,
             *slots_key = NULL, *n = NULL, *m = NULL, *counter_key = NULL, *name = NULL,
             *infer_key = NULL, *var = NULL, *op = NULL, *outputs = NULL, *out_names = NULL,
             *result = NULL, *block_dict = NULL, *known = NULL,
             *program_dict = NULL, *generator_dict = NULL;
    int python_way = 0;
#define NOT_THIS_PATH                                                                          \
    do {                                                                                       \
        python_way = 1;                                                                        \
        goto done;                                                                             \
    } while (0)
    if (!Py_IS_TYPE(block, block_type) || !PyUnicode_CheckExact(op_type) ||
        !PyDict_CheckExact(inputs) ||
        (given != Py_None && !PyDict_CheckExact(given)) ||
        (layer_type != Py_None &&
         (!PyUnicode_CheckExact(layer_type) || PyUnicode_GET_LENGTH(layer_type) == 0)))
        NOT_THIS_PATH;
    PyObject *op_defs, *passed;
    int plain = plain_append(&op_defs, &passed);
    if (plain <= 0) {
        if (plain < 0)
            goto done;
        NOT_THIS_PATH;
    }
    PyObject *spec = PyDict_GetItemWithError(op_defs, op_type);
    if (spec == NULL) {
        if (PyErr_Occurred())
            goto done;
        NOT_THIS_PATH; /* (not loaded yet, or unknown: append_op's own lookup decides) */
    }
    Py_INCREF(spec); /* (a borrowed reference across calls that may run Python) */
    /* the inputs: X, or X and Y, one name each (X alone with XShape); one input of the
     * op's first slot for an infer_from_x op (slice's Input) */
    Py_ssize_t n_inputs = PyDict_GET_SIZE(inputs);
    PyObject *x_args = PyDict_GetItemWithError(inputs, str_x);
    PyObject *y_args = x_args == NULL ? NULL : PyDict_GetItemWithError(inputs, str_y);
    if (PyErr_Occurred())
        goto done_spec;
    /* from_x: inference's memo is _inferred_from_x (the one input's fields, the output
     * slots, the attributes, the outputs' LoD levels), not _inferred (X's and Y's fields) */
    int from_x = form == WITH_XSHAPE;
    if (x_args == NULL && form == ONE_OUT && n_inputs == 1) {
        if ((first_slot = spec_field(spec, FIRST_INPUT)) == NULL)
            goto done_spec;
        if (PyUnicode_CheckExact(first_slot) &&
            (x_args = PyDict_GetItemWithError(inputs, first_slot)) == NULL && PyErr_Occurred())
            goto done_spec;
        from_x = 1;
    }
    if (form == ONE_OUT && n_inputs == 0) /* (no input: an infer_from_attrs op's memo) */
        from_x = 1;
    PyObject *x_name = x_args == NULL ? NULL : single_name(x_args);
    PyObject *y_name = y_args == NULL ? NULL : single_name(y_args);
    if (n_inputs == 0 ? !from_x
                      : x_name == NULL ||
                        (n_inputs == 2 ? y_name == NULL || form == WITH_XSHAPE : n_inputs != 1))
        goto python_way_spec;
    AppendState state;
    int usable = read_append_state(block, &state);
    if (usable <= 0) {
        if (usable < 0)
            goto done_spec;
        goto python_way_spec;
    }
    block_dict = state.block_dict, vars = state.vars, ops = state.ops, program = state.program;
    program_dict = state.program_dict, hook = state.hook, desc_version = state.desc_version;
    version = state.version, generator = state.generator, generator_dict = state.generator_dict;
    ids = state.ids, prefix = state.prefix;
    /* the memos (an XShape op's: the infer_from_x trait's; so is an op's of X alone that
     * is no formula op, as concat of one X) */
    if ((inferred = spec_field(spec, from_x ? INFERRED_FROM_X : INFERRED)) == NULL)
        goto done_spec;
    if (inferred == Py_None && !from_x && n_inputs == 1) { /* (X must be the first slot) */
        if ((first_slot = spec_field(spec, FIRST_INPUT)) == NULL)
            goto done_spec;
        if (first_slot != str_x && (!PyUnicode_CheckExact(first_slot) ||
                                    PyUnicode_Compare(first_slot, str_x) != 0))
            goto python_way_spec;
        Py_DECREF(inferred);
        if ((inferred = spec_field(spec, INFERRED_FROM_X)) == NULL)
            goto done_spec;
        from_x = 1;
    }
    if (!PyDict_CheckExact(inferred)) /* (None: not a formula op, not infer_from_x) */
        goto python_way_spec;
    int completed = completed_attrs(spec, given, &attrs, &types);
    if (completed <= 0) {
        if (completed < 0)
            goto done_spec;
        goto python_way_spec;
    }
    if ((slots_key = PyTuple_New(n_inputs + (form == ONE_OUT ? 3 : 4))) == NULL)
        goto done_spec;
    Py_INCREF(spec), Py_INCREF(Py_None), Py_INCREF(str_out);
    PyTuple_SET_ITEM(slots_key, 0, spec);
    put_items(slots_key, 1, inputs, 0);
    PyTuple_SET_ITEM(slots_key, n_inputs + 1, Py_None);
    PyTuple_SET_ITEM(slots_key, n_inputs + 2, str_out);
    if (form == WITH_XSHAPE) {
        Py_INCREF(str_xshape);
        PyTuple_SET_ITEM(slots_key, n_inputs + 3, str_xshape);
    }
    int slots_passed = slots_passed_before(passed, spec, slots_key);
    if (slots_passed <= 0) {
        if (slots_passed < 0)
            goto done_spec;
        goto python_way_spec;
    }
    /* the temporary's name, its counters not advanced yet */
    if (layer_type == Py_None) {
        if ((n = counter(ids, str_tmp)) == NULL)
            goto check_spec;
        name = numbered(prefix, str_tmp, n, "");
    } else {
        if ((n = counter(ids, layer_type)) == NULL)
            goto check_spec;
        if ((counter_key = numbered(prefix, layer_type, n, ".tmp")) == NULL)
            goto done_spec;
        if ((m = counter(ids, counter_key)) == NULL)
            goto check_spec;
        name = numbered(prefix, counter_key, m, "");
    }
    if (name == NULL)
        goto done_spec;
    if (form == WITH_XSHAPE && ((m2 = PyNumber_Add(m, one)) == NULL ||
                                (name2 = numbered(prefix, counter_key, m2, "")) == NULL))
        goto done_spec;
    int taken = PyDict_Contains(vars, name);
    if (taken == 0 && name2 != NULL)
        taken = PyDict_Contains(vars, name2);
    if (taken != 0) { /* (a variable of that name: the Python way reuses it) */
        if (taken < 0)
            goto done_spec;
        goto python_way_spec;
    }
    /* shape inference's memo (x, y: None for an op of no input) */
    PyObject *x = x_name == NULL ? Py_None : PyDict_GetItemWithError(vars, x_name);
    PyObject *y = x == NULL ? NULL : y_name == NULL ? x : PyDict_GetItemWithError(vars, y_name);
    if (y == NULL) {
        if (PyErr_Occurred())
            goto done_spec;
        goto python_way_spec; /* (a parent block's variable) */
    }
    {
        Py_INCREF(x), Py_INCREF(y);
        int dense = x == Py_None ? 1 : holds_lod_tensor(x);
        if (dense > 0 && y != x)
            dense = holds_lod_tensor(y);
        Py_DECREF(x), Py_DECREF(y);
        if (dense <= 0) {
            if (dense < 0)
                goto done_spec;
            goto python_way_spec; /* (a SelectedRows input: inference decides its Out) */
        }
    }
    /* the key OpDef.run_infer_shape builds: X's fields, Y's, the program's version, the
     * attributes, Out's LoD level (the fresh temporary's 0); from X alone
     * (OpDef._infer_from_x): X's fields (none without an input), the version, the output
     * slots, the attributes, the outputs' LoD levels (the fresh temporaries' 0s) */
    Py_ssize_t n_outs = form == WITH_XSHAPE ? 2 : 1, n_attrs = PyDict_GET_SIZE(attrs),
               n_fields = !from_x ? 6 : x == Py_None ? 0 : 3,
               at_attrs = from_x ? n_fields + 1 + n_outs : 7;
    if ((infer_key = PyTuple_New(at_attrs + n_attrs + n_outs)) == NULL)
        goto done_spec;
    {
        PyObject *fields[6] = {NULL};
        Py_INCREF(x), Py_INCREF(y);
        int failed = n_fields > 0 && (var_fields(x, fields) < 0 ||
                                      (!from_x && var_fields(y, fields + 3) < 0));
        Py_DECREF(x), Py_DECREF(y);
        for (int i = 0; i < n_fields; i++)
            if (fields[i] != NULL)
                PyTuple_SET_ITEM(infer_key, i, fields[i]);
        if (failed) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                goto done_spec;
            PyErr_Clear();
            goto python_way_spec;
        }
        Py_INCREF(desc_version);
        PyTuple_SET_ITEM(infer_key, n_fields, desc_version);
        if (from_x) {
            PyTuple_SET_ITEM(infer_key, n_fields + 1, Py_NewRef(str_out));
            if (form == WITH_XSHAPE)
                PyTuple_SET_ITEM(infer_key, n_fields + 2, Py_NewRef(str_xshape));
        }
        if (put_items(infer_key, at_attrs, attrs, 1) < 0)
            goto done_spec;
        for (Py_ssize_t i = 0; i < n_outs; i++) {
            PyObject *zero = PyLong_FromLong(0);
            if (zero == NULL)
                goto done_spec;
            PyTuple_SET_ITEM(infer_key, at_attrs + n_attrs + i, zero);
        }
    }
    known = memo_answer(recent_inferred, inferred, infer_key);
    if (known == NULL) {
        if (!PyErr_Occurred())
            goto python_way_spec;
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) /* (an unhashable attribute value) */
            goto done_spec;
        PyErr_Clear();
        goto python_way_spec;
    }
    /* (shape, dtype, lod_level) of Out; from X alone, a tuple of them, one per output */
    PyObject *out_fields = known, *xshape_fields = NULL;
    if (from_x) {
        if (!PyTuple_CheckExact(known) || PyTuple_GET_SIZE(known) != n_outs)
            goto python_way_spec;
        out_fields = PyTuple_GET_ITEM(known, 0);
    }
    if (form == WITH_XSHAPE) {
        out_fields = PyTuple_GET_ITEM(known, 0), xshape_fields = PyTuple_GET_ITEM(known, 1);
        if (!PyTuple_CheckExact(xshape_fields) || PyTuple_GET_SIZE(xshape_fields) != 3)
            goto python_way_spec;
    }
    if (!PyTuple_CheckExact(out_fields) || PyTuple_GET_SIZE(out_fields) != 3)
        goto python_way_spec;
    /* the record: the variables' fields in the order the Python way writes them */
    if ((var = new_variable(block, name, out_fields)) == NULL ||
        (xshape_fields != NULL && (var2 = new_variable(block, name2, xshape_fields)) == NULL))
        goto done_spec;
    if ((out_names = one_name(name)) == NULL || (outputs = PyDict_New()) == NULL ||
        PyDict_SetItem(outputs, str_out, out_names) < 0 ||
        (name2 != NULL && ((out_names2 = one_name(name2)) == NULL ||
                           PyDict_SetItem(outputs, str_xshape, out_names2) < 0)) ||
        (op = new_operator(block, op_type, inputs, outputs, attrs, types)) == NULL)
        goto done_spec;
    /* the changes: the counters, the variable, the op, the version */
    PyObject *next_n = PyNumber_Add(n, one);
    if (next_n == NULL)
        goto done_spec;
    int failed = PyDict_SetItem(ids, layer_type == Py_None ? str_tmp : layer_type, next_n);
    Py_DECREF(next_n);
    if (failed < 0)
        goto done_spec;
    if (counter_key != NULL) { /* (with XShape, the names m and m + 1 taken) */
        PyObject *next_m = PyNumber_Add(m2 != NULL ? m2 : m, one);
        failed = next_m == NULL || PyDict_SetItem(ids, counter_key, next_m) < 0;
        Py_XDECREF(next_m);
        if (failed)
            goto undo_counters;
    }
    if (PyDict_SetItem(vars, name, var) < 0)
        goto undo_counters;
    if (var2 != NULL && PyDict_SetItem(vars, name2, var2) < 0) {
        PyDict_DelItem(vars, name);
        goto undo_counters;
    }
    if (PyList_Append(ops, op) < 0) {
        PyDict_DelItem(vars, name);
        if (var2 != NULL)
            PyDict_DelItem(vars, name2);
        goto undo_counters;
    }
    if (advance_and_run(program_dict, version, var2 != NULL ? 3 : 2, hook, op) < 0)
        goto take_back;
    Py_INCREF(var);
    result = var;
    goto done_spec;
take_back: { /* the hook (a live session running the op) raised: the op, the temporary and
              * its name are taken back, as the Python way's except clauses do */
    if (form == ONE_OUT) {
        PyObject *undo_args[] = {block, op, name, layer_type, generator};
        take_back_raising(take_back_fn, undo_args, 5);
    } else {
        PyObject *undo_args[] = {block, op, name, name2, layer_type, generator, n, m};
        take_back_raising(xshape_take_back_fn, undo_args, 8);
    }
    goto done_spec;
}
undo_counters: { /* (only memory running out gets here) */
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject *key = layer_type == Py_None ? str_tmp : layer_type;
    if (PyObject_Not(n) == 1 ? PyDict_DelItem(ids, key) : PyDict_SetItem(ids, key, n))
        PyErr_Clear();
    if (counter_key != NULL &&
        (PyObject_Not(m) == 1 ? PyDict_DelItem(ids, counter_key)
                              : PyDict_SetItem(ids, counter_key, m)))
        PyErr_Clear();
    PyErr_Restore(type, value, traceback);
    goto done_spec;
}
check_spec:
    if (PyErr_Occurred())
        goto done_spec;
python_way_spec:
    python_way = 1;
done_spec:
    Py_DECREF(spec);
done:
#undef NOT_THIS_PATH
    Py_XDECREF(vars), Py_XDECREF(ops), Py_XDECREF(program);
    Py_XDECREF(hook), Py_XDECREF(desc_version), Py_XDECREF(version), Py_XDECREF(generator);
    Py_XDECREF(ids), Py_XDECREF(prefix), Py_XDECREF(inferred);
    Py_XDECREF(attrs), Py_XDECREF(types), Py_XDECREF(slots_key), Py_XDECREF(n), Py_XDECREF(m);
    Py_XDECREF(counter_key), Py_XDECREF(name), Py_XDECREF(infer_key), Py_XDECREF(var);
    Py_XDECREF(op), Py_XDECREF(outputs), Py_XDECREF(out_names);
    Py_XDECREF(block_dict), Py_XDECREF(program_dict);
    Py_XDECREF(generator_dict), Py_XDECREF(known);
    Py_XDECREF(made_inputs), Py_XDECREF(x_var_name), Py_XDECREF(name2), Py_XDECREF(var2);
    Py_XDECREF(out_names2), Py_XDECREF(m2), Py_XDECREF(first_slot);
    if (python_way)
        return call_fallback(form, args, nargsf, kwnames);
    return result;
}

static PyObject *recorded_append(enum form form, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames);
static void *recorder; /* the REPEATED layer whose Python way runs now (see repeated_call) */

static PyObject *append_one_op(PyObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames) {
    if (recorder != NULL)
        return recorded_append(ONE_OUT, args, nargsf, kwnames);
    return append_record(ONE_OUT, args, nargsf, kwnames);
}

static PyObject *append_with_xshape(PyObject *self, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames) {
    if (recorder != NULL)
        return recorded_append(WITH_XSHAPE, args, nargsf, kwnames);
    return append_record(WITH_XSHAPE, args, nargsf, kwnames);
}

/* --- append_fresh ------------------------------------------------------------------------
 *
 * append_fresh(block, op_type, inputs, outputs, attrs, layer_type, slot_order=None) does what
 * transaction.append_fresh's Python (`_append_fresh`, the fallback) does for the call a live
 * cell repeats: outside any transaction, annotation or op-role guard, each input slot names
 * of the block's own LoD-tensor variables, each output slot one fresh temporary
 * (`outputs`: slot -> [(dtype, stop_gradient)]), an op whose inference is remembered per
 * its first input (the infer_from_x trait, that input alone given) or per every input
 * (infer_from_inputs), and each memo the Python way fills holding this call's answer: the
 * completed attributes, the slot check (spec, *inputs, None, *output slots; a slot of
 * several names is checked by spec.check_slots each time, as the Python way checks it),
 * and
 *
 *   shape inference   spec._inferred_from_x[key], key as OpDef._infer_from_x builds it:
 *                     X's shape, dtype and LoD level (infer_from_x, X one name), or its
 *                     number of names and each one's (shape, dtype, lod_level) (X of
 *                     several: concat's, stack's), or every slot, its number of names and
 *                     each name's fields (infer_from_inputs); the program's version, the
 *                     output slots, the attributes (lists as tuples), a 0 per output (the
 *                     fresh temporaries' LoD levels).
 *
 * The temporaries are named as LayerHelper(layer_type) names them, <prefix><layer_type>_<n>
 * .tmp_<m>, _<m + 1>, ... in `outputs`' order, their fields in the order the Python way
 * writes them (block, name, dtype, stop_gradient when true, shape, lod_level); the op's
 * output slots are in `slot_order` (`outputs`' order by default); the version advances by a
 * step per temporary and one for the op, and the program's append hook runs the op. A hook
 * that raises has the op, the temporaries and their names taken back by
 * transaction._take_back_fresh. Returns slot -> [variable] in `outputs`' order. Any other
 * call, or one a memo has no answer for, goes to the fallback before anything is changed.
 */
static PyObject *fresh_fallback_fn, *fresh_take_back_fn;
static PyObject *str_stop_gradient;

#define MOST_FRESH 8 /* output slots this path makes at most */
#define MOST_FRESH_VARS 16 /* and temporaries (split's pieces) */

static PyObject *fresh_fallback(PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    if (fresh_fallback_fn == NULL)
        return PyErr_Format(PyExc_RuntimeError, "append_fresh: configure_one_op() was not "
                                                "called");
    return PyObject_Vectorcall(fresh_fallback_fn, args, nargsf, kwnames);
}

/* A fresh Variable as new_variable makes it, `stop_gradient` written after its dtype when
 * true (the Python way sets it before inference writes the shape) */
static PyObject *fresh_variable(PyObject *block, PyObject *name, PyObject *fields,
                                int stop_gradient) {
    PyObject *var = PyBaseObject_Type.tp_new(variable_type, empty_tuple, NULL);
    if (var == NULL || PyObject_SetAttr(var, str_block, block) < 0 ||
        PyObject_SetAttr(var, str_name, name) < 0 ||
        PyObject_SetAttr(var, str_dtype, PyTuple_GET_ITEM(fields, 1)) < 0 ||
        (stop_gradient && PyObject_SetAttr(var, str_stop_gradient, Py_True) < 0) ||
        PyObject_SetAttr(var, str_shape, PyTuple_GET_ITEM(fields, 0)) < 0 ||
        PyObject_SetAttr(var, str_lod_level, PyTuple_GET_ITEM(fields, 2)) < 0)
        Py_CLEAR(var);
    return var;
}

static PyObject *append_fresh(PyObject *self, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (recorder != NULL || program_globals == NULL || kwnames != NULL || nargs < 6 ||
        nargs > 7)
        return fresh_fallback(args, nargsf, kwnames);
    int classes = find_classes();
    if (classes <= 0)
        return classes < 0 ? NULL : fresh_fallback(args, nargsf, kwnames);
    PyObject *block = args[0], *op_type = args[1], *inputs = args[2], *outputs = args[3],
             *given = args[4], *layer_type = args[5], *slot_order = nargs == 7 ? args[6]
                                                                               : Py_None;
    if (!Py_IS_TYPE(block, block_type) || !PyUnicode_CheckExact(op_type) ||
        !PyDict_CheckExact(inputs) || !PyDict_CheckExact(outputs) ||
        (given != Py_None && !PyDict_CheckExact(given)) || !PyUnicode_CheckExact(layer_type) ||
        PyUnicode_GET_LENGTH(layer_type) == 0 ||
        (slot_order != Py_None && !PyTuple_CheckExact(slot_order)))
        return fresh_fallback(args, nargsf, kwnames);
    Py_ssize_t n_inputs = PyDict_GET_SIZE(inputs), n_outs = PyDict_GET_SIZE(outputs);
    if (n_inputs < 1 || n_outs < 1 || n_outs > MOST_FRESH ||
        (slot_order != Py_None && PyTuple_GET_SIZE(slot_order) != n_outs))
        return fresh_fallback(args, nargsf, kwnames);
    /* the output slots (borrowed): in `outputs`' order, their numbers of temporaries and
     * at_op[i], slot i's place among the op's output slots; whether each temporary (in
     * `outputs`' order, n_vars in all) stops the gradient */
    PyObject *out_slots[MOST_FRESH];
    int stops[MOST_FRESH_VARS];
    Py_ssize_t at_op[MOST_FRESH], counts[MOST_FRESH], pos = 0, i = 0, n_vars = 0;
    PyObject *slot, *value;
    while (PyDict_Next(outputs, &pos, &slot, &value)) {
        if (!PyUnicode_CheckExact(slot) || !PyList_CheckExact(value) ||
            PyList_GET_SIZE(value) < 1 ||
            n_vars + PyList_GET_SIZE(value) > MOST_FRESH_VARS)
            return fresh_fallback(args, nargsf, kwnames);
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(value); k++) {
            PyObject *spec_item = PyList_GET_ITEM(value, k);
            if (!PyTuple_CheckExact(spec_item) || PyTuple_GET_SIZE(spec_item) != 2 ||
                (PyTuple_GET_ITEM(spec_item, 1) != Py_True &&
                 PyTuple_GET_ITEM(spec_item, 1) != Py_False))
                return fresh_fallback(args, nargsf, kwnames);
            stops[n_vars++] = PyTuple_GET_ITEM(spec_item, 1) == Py_True;
        }
        out_slots[i] = slot, counts[i] = PyList_GET_SIZE(value);
        at_op[i] = slot_order == Py_None ? i : -1;
        i++;
    }
    if (slot_order != Py_None) { /* (a permutation of the slots, or the Python way) */
        for (Py_ssize_t j = 0; j < n_outs; j++) {
            PyObject *named = PyTuple_GET_ITEM(slot_order, j);
            Py_ssize_t found = -1;
            for (Py_ssize_t k = 0; k < n_outs && found < 0; k++) {
                if (!PyUnicode_CheckExact(named))
                    break;
                if (named == out_slots[k] || PyUnicode_Compare(named, out_slots[k]) == 0)
                    found = k;
            }
            if (found < 0 || at_op[found] >= 0)
                return PyErr_Occurred() ? NULL : fresh_fallback(args, nargsf, kwnames);
            at_op[found] = j;
        }
    }
    /* the inputs: each slot a tuple of names (n_names in all; single: one name each) */
    Py_ssize_t n_names = 0;
    for (pos = 0; PyDict_Next(inputs, &pos, &slot, &value);) {
        if (!PyUnicode_CheckExact(slot) || !PyTuple_CheckExact(value) ||
            PyTuple_GET_SIZE(value) == 0)
            return fresh_fallback(args, nargsf, kwnames);
        for (i = 0; i < PyTuple_GET_SIZE(value); i++)
            if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(value, i)))
                return fresh_fallback(args, nargsf, kwnames);
        n_names += PyTuple_GET_SIZE(value);
    }
    /* single: one name each slot; several: an output slot of several temporaries */
    int several = n_vars != n_outs, single = n_names == n_inputs && !several;
    PyObject *vars = NULL, *ops = NULL, *program = NULL, *hook = NULL,
             *desc_version = NULL, *version = NULL, *generator = NULL,
             *ids = NULL, *prefix = NULL, *inferred = NULL, *attrs = NULL, *types = NULL,
             *slots_key = NULL, *n = NULL, *m = NULL, *counter_key = NULL, *infer_key = NULL,
             *op = NULL, *op_outputs = NULL,
             *result = NULL, *block_dict = NULL, *program_dict = NULL, *generator_dict = NULL,
             *spec = NULL, *every = NULL, *first_slot = NULL, *made = NULL, *known = NULL;
    PyObject *names[MOST_FRESH_VARS] = {NULL}, *made_vars[MOST_FRESH_VARS] = {NULL};
    int python_way = 0, counted = 0;
#define FRESH_PYTHON_WAY                                                                       \
    do {                                                                                       \
        python_way = 1;                                                                        \
        goto done;                                                                             \
    } while (0)
#define FRESH_NONE_OR_FAIL                                                                     \
    do {                                                                                       \
        if (!PyErr_Occurred())                                                                 \
            python_way = 1;                                                                    \
        goto done;                                                                             \
    } while (0)
    PyObject *op_defs, *passed;
    int plain = plain_append(&op_defs, &passed);
    if (plain <= 0) {
        if (plain < 0)
            goto done;
        FRESH_PYTHON_WAY;
    }
    if ((spec = PyDict_GetItemWithError(op_defs, op_type)) == NULL)
        FRESH_NONE_OR_FAIL; /* (not loaded yet, or unknown: the Python way decides) */
    Py_INCREF(spec);
    /* the memo: an infer_from_x or infer_from_inputs op's (no formula op's) */
    PyObject *formula_memo = spec_field(spec, INFERRED);
    if (formula_memo == NULL)
        goto done;
    Py_DECREF(formula_memo); /* (compared, not read) */
    if (formula_memo != Py_None)
        FRESH_PYTHON_WAY;
    if ((inferred = spec_field(spec, INFERRED_FROM_X)) == NULL ||
        (every = spec_field(spec, EVERY_INPUT)) == NULL)
        goto done;
    if (!PyDict_CheckExact(inferred) || (every != Py_True && every != Py_False))
        FRESH_PYTHON_WAY;
    if (every == Py_False) { /* (X alone, the op's first slot) */
        if ((first_slot = spec_field(spec, FIRST_INPUT)) == NULL)
            goto done;
        pos = 0;
        PyDict_Next(inputs, &pos, &slot, &value);
        if (n_inputs != 1 || !PyUnicode_CheckExact(first_slot) ||
            (slot != first_slot && PyUnicode_Compare(slot, first_slot) != 0))
            FRESH_PYTHON_WAY;
    }
    AppendState state;
    int usable = read_append_state(block, &state);
    if (usable <= 0) {
        if (usable < 0)
            goto done;
        FRESH_PYTHON_WAY;
    }
    block_dict = state.block_dict, vars = state.vars, ops = state.ops, program = state.program;
    program_dict = state.program_dict, hook = state.hook, desc_version = state.desc_version;
    version = state.version, generator = state.generator, generator_dict = state.generator_dict;
    ids = state.ids, prefix = state.prefix;
    int completed = completed_attrs(spec, given, &attrs, &types);
    if (completed <= 0) {
        if (completed < 0)
            goto done;
        FRESH_PYTHON_WAY;
    }
    /* the op's output slots, in its order */
    if ((op_outputs = PyDict_New()) == NULL)
        goto done;
    /* the op's slots and their numbers of temporaries; a slot's first temporary, in
     * `outputs`' order (first[i]) and in the op's (op_first[i]) */
    PyObject *op_slots[MOST_FRESH];
    Py_ssize_t op_counts[MOST_FRESH], first[MOST_FRESH], op_first[MOST_FRESH];
    for (i = 0; i < n_outs; i++)
        op_slots[at_op[i]] = out_slots[i], op_counts[at_op[i]] = counts[i];
    for (i = 0; i < n_outs; i++) {
        first[i] = i ? first[i - 1] + counts[i - 1] : 0;
        op_first[i] = i ? op_first[i - 1] + op_counts[i - 1] : 0;
    }
    if (single) { /* (the slot check's memo; slots of several names are checked each time) */
        if ((slots_key = PyTuple_New(n_inputs + 2 + n_outs)) == NULL)
            goto done;
        PyTuple_SET_ITEM(slots_key, 0, Py_NewRef(spec));
        put_items(slots_key, 1, inputs, 0);
        PyTuple_SET_ITEM(slots_key, n_inputs + 1, Py_NewRef(Py_None));
        for (i = 0; i < n_outs; i++)
            PyTuple_SET_ITEM(slots_key, n_inputs + 2 + i, Py_NewRef(op_slots[i]));
        int slots_passed = slots_passed_before(passed, spec, slots_key);
        if (slots_passed <= 0) {
            if (slots_passed < 0)
                goto done;
            FRESH_PYTHON_WAY;
        }
    }
    /* the temporaries' names, the counters not advanced yet */
    if ((n = counter(ids, layer_type)) == NULL)
        FRESH_NONE_OR_FAIL;
    if ((counter_key = numbered(prefix, layer_type, n, ".tmp")) == NULL)
        goto done;
    if ((m = counter(ids, counter_key)) == NULL)
        FRESH_NONE_OR_FAIL;
    for (i = 0; i < n_vars; i++) {
        PyObject *offset = PyLong_FromSsize_t(i), *m_i;
        m_i = offset == NULL ? NULL : PyNumber_Add(m, offset);
        Py_XDECREF(offset);
        if (m_i == NULL)
            goto done;
        names[i] = numbered(prefix, counter_key, m_i, "");
        Py_DECREF(m_i);
        if (names[i] == NULL)
            goto done;
        int taken = PyDict_Contains(vars, names[i]);
        if (taken != 0) { /* (a variable of that name: the Python way reuses it) */
            if (taken < 0)
                goto done;
            FRESH_PYTHON_WAY;
        }
    }
    /* the op's outputs, in its order (each slot its run of fresh names) */
    for (Py_ssize_t j = 0; j < n_outs; j++) {
        for (i = 0; at_op[i] != j; i++)
            ;
        PyObject *slot_names = PyTuple_New(counts[i]);
        if (slot_names == NULL)
            goto done;
        for (Py_ssize_t k = 0; k < counts[i]; k++)
            PyTuple_SET_ITEM(slot_names, k, Py_NewRef(names[first[i] + k]));
        int failed = PyDict_SetItem(op_outputs, op_slots[j], slot_names) < 0;
        Py_DECREF(slot_names);
        if (failed)
            goto done;
    }
    if (!single) { /* (a refusal is the Python way's to raise) */
        PyObject *checked = PyObject_CallMethod(spec, "check_slots", "OO", inputs, op_outputs);
        if (checked == NULL) {
            PyErr_Clear();
            FRESH_PYTHON_WAY;
        }
        Py_DECREF(checked);
    }
    /* shape inference's memo: from X alone, its fields (X of one name) or its number of
     * names and each one's (shape, dtype, lod_level); from every input, the slots, their
     * numbers of names and each name's fields; then the version, the output slots (and
     * their numbers of temporaries when one holds several), the attributes, a 0 for each
     * temporary */
    Py_ssize_t n_attrs = PyDict_GET_SIZE(attrs), one_x = every == Py_False && n_names == 1,
               n_fields = every == Py_True ? 2 * n_inputs + n_names : one_x ? 3 : 1 + n_names,
               at_attrs = n_fields + 1 + n_outs + (several ? n_outs : 0);
    if ((infer_key = PyTuple_New(at_attrs + n_attrs + n_vars)) == NULL)
        goto done;
    Py_ssize_t at = 0, at_var = every == Py_True ? 2 * n_inputs : one_x ? 0 : 1;
    /* (each item set once below; a key left unfilled is only freed) */
    if (every == Py_False && !one_x)
        PyTuple_SET_ITEM(infer_key, 0, PyLong_FromSsize_t(n_names));
    for (pos = 0; PyDict_Next(inputs, &pos, &slot, &value); at++) {
        if (every == Py_True) { /* (*slots, *their counts, *each variable's fields) */
            PyTuple_SET_ITEM(infer_key, at, Py_NewRef(slot));
            PyTuple_SET_ITEM(infer_key, n_inputs + at,
                             PyLong_FromSsize_t(PyTuple_GET_SIZE(value)));
        }
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(value); k++) {
            PyObject *var = PyDict_GetItemWithError(vars, PyTuple_GET_ITEM(value, k));
            if (var == NULL)
                FRESH_NONE_OR_FAIL; /* (a parent block's variable) */
            Py_INCREF(var);
            int dense = holds_lod_tensor(var);
            PyObject *fields[3] = {NULL};
            int failed = dense <= 0 || var_fields(var, fields) < 0;
            Py_DECREF(var);
            if (failed) {
                if (dense == 0 ||
                    (dense > 0 && PyErr_ExceptionMatches(PyExc_AttributeError))) {
                    PyErr_Clear();
                    FRESH_PYTHON_WAY;
                }
                goto done;
            }
            if (one_x) {
                for (int f = 0; f < 3; f++)
                    PyTuple_SET_ITEM(infer_key, f, fields[f]);
                continue;
            }
            PyObject *triple = PyTuple_New(3);
            if (triple == NULL) {
                Py_DECREF(fields[0]), Py_DECREF(fields[1]), Py_DECREF(fields[2]);
                goto done;
            }
            for (int f = 0; f < 3; f++)
                PyTuple_SET_ITEM(triple, f, fields[f]);
            PyTuple_SET_ITEM(infer_key, at_var++, triple);
        }
    }
    for (i = 0; i < n_fields; i++) /* (a count PyLong_FromSsize_t could not make) */
        if (PyTuple_GET_ITEM(infer_key, i) == NULL)
            goto done;
    PyTuple_SET_ITEM(infer_key, n_fields, Py_NewRef(desc_version));
    for (i = 0; i < n_outs; i++) {
        PyTuple_SET_ITEM(infer_key, n_fields + 1 + i, Py_NewRef(op_slots[i]));
        if (several)
            PyTuple_SET_ITEM(infer_key, n_fields + 1 + n_outs + i,
                             PyLong_FromSsize_t(op_counts[i]));
    }
    if (put_items(infer_key, at_attrs, attrs, 1) < 0)
        goto done;
    for (i = 0; i < n_vars; i++)
        PyTuple_SET_ITEM(infer_key, at_attrs + n_attrs + i, PyLong_FromLong(0));
    for (i = n_fields + 1 + n_outs; i < PyTuple_GET_SIZE(infer_key); i++)
        if (PyTuple_GET_ITEM(infer_key, i) == NULL)
            goto done; /* (a number PyLong_From... could not make) */
    known = memo_answer(recent_inferred, inferred, infer_key);
    if (known == NULL) {
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError))
            goto done;
        PyErr_Clear(); /* (no answer, or an unhashable attribute value) */
        FRESH_PYTHON_WAY;
    }
    if (!PyTuple_CheckExact(known) || PyTuple_GET_SIZE(known) != n_vars)
        FRESH_PYTHON_WAY;
    for (i = 0; i < n_vars; i++) {
        PyObject *fields = PyTuple_GET_ITEM(known, i);
        if (!PyTuple_CheckExact(fields) || PyTuple_GET_SIZE(fields) != 3)
            FRESH_PYTHON_WAY;
    }
    /* the record: the temporaries (named in `outputs`' order; their fields in `known` in
     * the op's), the op */
    if ((made = PyTuple_New(n_vars)) == NULL)
        goto done;
    for (i = 0; i < n_outs; i++)
        for (Py_ssize_t k = 0; k < counts[i]; k++) {
            Py_ssize_t v = first[i] + k;
            PyTuple_SET_ITEM(made, v, Py_NewRef(names[v]));
            made_vars[v] = fresh_variable(block, names[v],
                                          PyTuple_GET_ITEM(known, op_first[at_op[i]] + k),
                                          stops[v]);
            if (made_vars[v] == NULL)
                goto done;
        }
    if ((op = new_operator(block, op_type, inputs, op_outputs, attrs, types)) == NULL)
        goto done;
    /* the changes: the counters, the variables, the op, the version */
    {
        PyObject *next_n = PyNumber_Add(n, one), *count = PyLong_FromSsize_t(n_vars);
        PyObject *next_m = count == NULL ? NULL : PyNumber_Add(m, count);
        int failed = next_n == NULL || next_m == NULL ||
                     PyDict_SetItem(ids, layer_type, next_n) < 0;
        if (!failed) {
            counted = 1;
            failed = PyDict_SetItem(ids, counter_key, next_m) < 0;
        }
        Py_XDECREF(next_n), Py_XDECREF(count), Py_XDECREF(next_m);
        if (failed)
            goto undo_counters;
        counted = 2;
    }
    for (i = 0; i < n_vars; i++)
        if (PyDict_SetItem(vars, names[i], made_vars[i]) < 0) {
            while (i-- > 0)
                PyDict_DelItem(vars, names[i]);
            goto undo_counters;
        }
    if (PyList_Append(ops, op) < 0) {
        for (i = 0; i < n_vars; i++)
            PyDict_DelItem(vars, names[i]);
        goto undo_counters;
    }
    if (advance_and_run(program_dict, version, n_vars + 1, hook, op) < 0)
        goto take_back;
    if ((result = PyDict_New()) == NULL)
        goto done; /* (the op stands: only memory running out gets here) */
    for (i = 0; i < n_outs; i++) {
        PyObject *list = PyList_New(counts[i]);
        if (list == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        for (Py_ssize_t k = 0; k < counts[i]; k++)
            PyList_SET_ITEM(list, k, Py_NewRef(made_vars[first[i] + k]));
        int failed = PyDict_SetItem(result, out_slots[i], list);
        Py_DECREF(list);
        if (failed) {
            Py_CLEAR(result);
            goto done;
        }
    }
    goto done;
take_back: { /* the hook (a live session running the op) raised: the op, the temporaries and
              * their names are taken back, as the Python way's except clauses do */
    PyObject *undo_args[] = {block, op, made, layer_type, generator, n, m};
    take_back_raising(fresh_take_back_fn, undo_args, 7);
    goto done;
}
undo_counters: { /* (only memory running out gets here) */
    PyObject *type, *value_raised, *traceback;
    PyErr_Fetch(&type, &value_raised, &traceback);
    if (counted >= 1 &&
        (PyObject_Not(n) == 1 ? PyDict_DelItem(ids, layer_type) : PyDict_SetItem(ids, layer_type, n)))
        PyErr_Clear();
    if (counted >= 2 &&
        (PyObject_Not(m) == 1 ? PyDict_DelItem(ids, counter_key)
                              : PyDict_SetItem(ids, counter_key, m)))
        PyErr_Clear();
    PyErr_Restore(type, value_raised, traceback);
    goto done;
}
done:
#undef FRESH_PYTHON_WAY
#undef FRESH_NONE_OR_FAIL
    for (i = 0; i < n_vars; i++)
        Py_XDECREF(names[i]), Py_XDECREF(made_vars[i]);
    Py_XDECREF(vars), Py_XDECREF(ops), Py_XDECREF(program);
    Py_XDECREF(hook), Py_XDECREF(desc_version), Py_XDECREF(version), Py_XDECREF(generator);
    Py_XDECREF(ids), Py_XDECREF(prefix), Py_XDECREF(inferred);
    Py_XDECREF(attrs), Py_XDECREF(types), Py_XDECREF(slots_key), Py_XDECREF(n), Py_XDECREF(m);
    Py_XDECREF(counter_key), Py_XDECREF(infer_key), Py_XDECREF(op), Py_XDECREF(op_outputs);
    Py_XDECREF(block_dict);
    Py_XDECREF(program_dict), Py_XDECREF(generator_dict), Py_XDECREF(spec), Py_XDECREF(every);
    Py_XDECREF(first_slot), Py_XDECREF(made), Py_XDECREF(known);
    if (python_way)
        return fresh_fallback(args, nargsf, kwnames);
    return result;
}

/* --- one-op calls: a Variable's operators, the one-op layers --------------------------
 *
 * OneOpCall(python_way, form, op_type, layers_globals, allowed=None, reverse=False,
 * scalar=0, out_dtype=None, attrs=None) stands for the Python function python_way (a
 * Variable's operator that math_op_patch defines, an elementwise or activation layer of
 * api/layers/ops.py, or one of nn's checked one-op layers): called as that function is (and bound as a method, as a function
 * is), with its commonest calls appended through append_record without a Python frame.
 * python_way stays the definition: what is taken here are its own first tests, in its
 * order, and every other call is its own. Nothing is taken while layers_globals'
 * append_one_op (a REPEATED layer's append_with_xshape too) is not this module's (a test
 * or a user that swaps it sees every call).
 *
 * OPERATOR (self, other):
 *   two Variables     other's class exactly Variable, of self's dtype, the operator not
 *                     reversed, other not batch-leading (shape[0] == -1) with fewer dims
 *                     than self: op_type on {"X": (self.name,), "Y": (other.name,)}, no
 *                     attributes, its Out of out_dtype (None: self's);
 *   a plain number    (an operator a number turns into a scale; other an int or float, not
 *                     a bool or a subclass) s: `scale` on {"X": (self.name,)} with
 *                     {"scale": a, "bias": b} by `scalar` (math_op_patch._SCALARS):
 *                     PLUS 1, s; MINUS 1, -s; MINUS_FROM -1, s; TIMES s, 0; DIVIDED 1 / s, 0
 *                     (s == 0 raises the Python way's error);
 *   a number, no scale  (x > 0.5, x ** 2, 2 / x; other an int or float) v: a [1]
 *                     fill_constant of self's dtype and value float(v), its gradient
 *                     stopped, then op_type on it and self (math_op_patch._with_scalar:
 *                     with_scalar below), the tensor taken back when the op is refused.
 *   All on self.block.program.current_block(), as append_one_op with self's dtype.
 * ELEMENTWISE (x, y, axis=-1, act=None, name=None): Variables x and y of dtypes in
 *   `allowed`, axis an int, no act, no name: op_type on {"X": (x.name,), "Y": (y.name,)},
 *   attributes None for axis -1, else {"axis": axis}, its Out named for op_type.
 * ACTIVATION (x, name=None, **attrs): a Variable x of a dtype in `allowed`, no name, an op
 *   type already defined: op_type on {"X": (x.name,)} with the other keywords as its
 *   attributes, its Out named for op_type.
 * UNARY (x, ..., name=None, ...), a layer whose argument checks python_way runs (nn's relu,
 *   log, softmax): the same for x alone (name=None by keyword), of Variable's own class, its
 *   attributes a copy of `attrs` (None: none).
 * PAIR (x, y, name=None, ...), such a layer of two inputs (nn's matmul): x and y alone, both
 *   of Variable's own class and of dtypes in `allowed`: op_type on {"X": (x.name,), "Y":
 *   (y.name,)} with a copy of `attrs`, its Out named for op_type.
 *   Both on the default main program's current block, with x's dtype.
 * REPEATED (x, ...), a checked layer whose every call with the same arguments appends the
 *   same one op through append_one_op on one slot naming x alone ({"X": (x.name,)}; slice's
 *   {"Input": (x.name,)}) (nn's reductions, scale, mean,
 *   cast, clip, leaky_relu, ...) or through append_with_xshape on x (the reshape family): a
 *   call of a Variable x of Variable's own class, its other arguments scalars or lists or
 *   tuples of them, replays what its Python way appended for the same arguments and the
 *   same x's (shape, dtype, LoD level, type): the op type, the attributes, the dtype and
 *   layer type it gave append_one_op (append_with_xshape), and its output's stop_gradient
 *   as the layer left it (argmax stops its output's gradient). The
 *   Python way is recorded at a call without an answer: taken when it made exactly that
 *   one call, whose temporary it returned, and the current block gained that op alone
 *   (else the arguments are marked as the Python way's for good). Its checks are a
 *   function of what the key holds, so a replay passes them as the recorded call did; a
 *   call that raised is never recorded.
 * CREATED (...), a checked layer whose every call with the same arguments appends the same
 *   one op of no input through append_one_op (fill_constant, zeros, ones, uniform_random,
 *   gaussian_random): REPEATED's replay for a call of no Variable, every argument a scalar
 *   or a list or tuple of them, keyed by the arguments and by what `state()` returns (the
 *   one thing outside its arguments such a layer reads: fill_constant's force_cpu under
 *   init_on_cpu()); taken when the Python way appended that one op on no input.
 *
 * The frames were a tenth of a live `c + one` and of a live layers.elementwise_add, and a
 * sixth of a live `c * 0.999`.
 */
enum call_form { OPERATOR, ELEMENTWISE, ACTIVATION, UNARY, PAIR, REPEATED, CREATED };
enum scalar_form { NO_SCALAR, PLUS, MINUS, MINUS_FROM, TIMES, DIVIDED };

typedef struct {
    PyObject_HEAD
    PyObject *python_way, *op_type, *out_dtype, *layers_globals, *allowed, *attrs;
    PyObject *replays; /* REPEATED, CREATED: call key -> (op type, attributes, dtype, layer
                        * type), or None for arguments the Python way answers */
    PyObject *state; /* CREATED: what else the key holds, state() (NULL: nothing) */
    int form, reverse, scalar;
    vectorcallfunc vectorcall;
} OneOpCall;

static PyObject *str_append_one_op, *str_append_with_xshape, *str_stop_gradient, *str_scale, *str_bias, *str_blocks,
    *str_current_block_idx, *str_current_block, *str_main_program, *str_axis, *str_act,
    *str_x_argument;

/* program.blocks[program.current_block_idx] of a Program of the exact class (a new
 * reference), or NULL: with an error, or without one for any other program */
static PyObject *indexed_block(PyObject *program) {
    if (!Py_IS_TYPE(program, program_type))
        return NULL;
    PyObject *d, *found = NULL;
    if (read_instance(program, &d, &kept_blocks, blocks_keys, blocks_reads,
                      KEPT_COUNT(blocks_keys)) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    PyObject *blocks = blocks_reads[0], *index = blocks_reads[1];
    if (blocks != NULL && index != NULL && PyList_CheckExact(blocks) &&
        PyLong_CheckExact(index)) {
        Py_ssize_t at = PyLong_AsSsize_t(index);
        if (at >= 0 && at < PyList_GET_SIZE(blocks)) {
            found = PyList_GET_ITEM(blocks, at);
            Py_INCREF(found);
        } else if (at == -1 && PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
        }
    }
    Py_DECREF(d);
    return found;
}

/* var.block.program.current_block() (a new reference), or NULL with an error */
static PyObject *current_block_of(PyObject *var) {
    PyObject *block = PyObject_GetAttr(var, str_block);
    if (block == NULL)
        return NULL;
    PyObject *program = PyObject_GetAttr(block, str_program), *found;
    Py_DECREF(block);
    if (program == NULL)
        return NULL;
    found = indexed_block(program); /* (Program's own method, read) */
    if (found == NULL && !PyErr_Occurred()) /* (a subclass, or anything unusual: the method) */
        found = PyObject_CallMethodNoArgs(program, str_current_block);
    Py_DECREF(program);
    return found;
}

/* {"X": (x.name,)}, with "Y": (y.name,) when y is not NULL (a new reference, or NULL) */
static PyObject *operand_slots(PyObject *x, PyObject *y) {
    PyObject *slots = PyDict_New(), *name = NULL, *names = NULL;
    PyObject *const operands[2] = {x, y}, *const keys[2] = {str_x, str_y};
    for (int i = 0; slots != NULL && i < 2 && operands[i] != NULL; i++) {
        if ((name = PyObject_GetAttr(operands[i], str_name)) == NULL ||
            (names = one_name(name)) == NULL || PyDict_SetItem(slots, keys[i], names) < 0)
            Py_CLEAR(slots);
        Py_CLEAR(name);
        Py_CLEAR(names);
    }
    return slots;
}

/* {slot: (x.name,)} (a new reference, or NULL) */
static PyObject *one_slot(PyObject *slot, PyObject *x) {
    PyObject *name = PyObject_GetAttr(x, str_name), *slots = NULL;
    PyObject *names = name == NULL ? NULL : one_name(name);
    if (names != NULL && (slots = PyDict_New()) != NULL && PyDict_SetItem(slots, slot, names) < 0)
        Py_CLEAR(slots);
    Py_XDECREF(name), Py_XDECREF(names);
    return slots;
}

/* 1 when the Python way aligns `other` with `var`'s batch dim (other.shape[0] == -1 and
 * fewer dims than var), 0 when it does not, -1 with an error or for a shape not a tuple (the
 * Python way decides) */
static int batch_leading(PyObject *var, PyObject *other) {
    PyObject *shape = PyObject_GetAttr(other, str_shape), *own = NULL;
    int leading = -1;
    if (shape == NULL || !PyTuple_CheckExact(shape))
        goto done;
    if (PyTuple_GET_SIZE(shape) == 0) {
        leading = 0;
        goto done;
    }
    PyObject *first = PyTuple_GET_ITEM(shape, 0);
    if (!PyLong_CheckExact(first))
        goto done;
    int overflow;
    if (PyLong_AsLongAndOverflow(first, &overflow) != -1 || overflow) {
        leading = 0;
        goto done;
    }
    if ((own = PyObject_GetAttr(var, str_shape)) != NULL && PyTuple_CheckExact(own))
        leading = PyTuple_GET_SIZE(shape) < PyTuple_GET_SIZE(own);
done:
    Py_XDECREF(shape), Py_XDECREF(own);
    return leading;
}

/* The record an OPERATOR call appends, record[0..4] = (block, op type, inputs, attributes,
 * dtype) as new references: 1, 0 for the Python way, -1 with an error */
static int operator_record(OneOpCall *op, PyObject *var, PyObject *other, PyObject **record) {
    PyObject *dtype = PyObject_GetAttr(var, str_dtype), *other_dtype = NULL;
    int found = -1;
    if (dtype == NULL)
        goto done;
    if (Py_IS_TYPE(other, variable_type)) {
        if (op->reverse) {
            found = 0;
            goto done;
        }
        if ((other_dtype = PyObject_GetAttr(other, str_dtype)) == NULL)
            goto done;
        int same = PyObject_RichCompareBool(other_dtype, dtype, Py_EQ);
        if (same <= 0) {
            found = same;
            goto done;
        }
        int leading = batch_leading(var, other);
        if (leading != 0) {
            found = leading > 0 || !PyErr_Occurred() ? 0 : -1;
            goto done;
        }
        if ((record[2] = operand_slots(var, other)) == NULL)
            goto done;
        record[1] = op->op_type;
        record[3] = Py_None;
        record[4] = op->out_dtype != Py_None ? op->out_dtype : dtype;
        Py_INCREF(record[1]), Py_INCREF(record[3]), Py_INCREF(record[4]);
    } else if (op->scalar != NO_SCALAR &&
               (PyFloat_CheckExact(other) || PyLong_CheckExact(other))) {
        double s = PyFloat_CheckExact(other) ? PyFloat_AS_DOUBLE(other) : PyLong_AsDouble(other);
        if (s == -1.0 && PyErr_Occurred())
            goto done; /* (an int past a double: the Python way's float() raises) */
        double scale = 1.0, bias = 0.0;
        switch (op->scalar) {
        case PLUS: bias = s; break;
        case MINUS: bias = -s; break;
        case MINUS_FROM: scale = -1.0, bias = s; break;
        case TIMES: scale = s; break;
        default: /* DIVIDED */
            if (s == 0.0) { /* (the Python way's ZeroDivisionError) */
                found = 0;
                goto done;
            }
            scale = 1.0 / s;
        }
        PyObject *a = PyFloat_FromDouble(scale), *b = PyFloat_FromDouble(bias);
        PyObject *attrs = a == NULL || b == NULL ? NULL : PyDict_New();
        if (attrs == NULL || PyDict_SetItem(attrs, str_scale, a) < 0 ||
            PyDict_SetItem(attrs, str_bias, b) < 0 ||
            (record[2] = operand_slots(var, NULL)) == NULL) {
            Py_XDECREF(a), Py_XDECREF(b), Py_XDECREF(attrs);
            goto done;
        }
        Py_DECREF(a), Py_DECREF(b);
        record[1] = str_scale, record[3] = attrs, record[4] = dtype;
        Py_INCREF(record[1]), Py_INCREF(record[4]);
    } else {
        found = 0;
        goto done;
    }
    if ((record[0] = current_block_of(var)) != NULL)
        found = 1;
done:
    Py_XDECREF(dtype), Py_XDECREF(other_dtype);
    return found;
}

/* `var <op> value` for a plain number `value` and an op of no scale form (x > 0.5, x ** 2,
 * 2 / x), as math_op_patch._with_scalar appends it: the number in a [1] fill_constant tensor
 * of var's dtype whose gradient stops, then the op on the two, each through append_record;
 * the tensor taken back (transaction._take_back_one_op) when the op is refused. *appended
 * the op's output, 1; 0 for the Python way (nothing appended); -1 with an error. */
static PyObject *str_value, *str_force_cpu, *str_fill_constant;

static int with_scalar(OneOpCall *op, PyObject *var, PyObject *number, PyObject **appended) {
    PyObject *dtype = NULL, *dtype_int = NULL, *value = NULL, *shape = NULL, *attrs = NULL,
             *block = NULL, *no_inputs = NULL, *scalar = NULL, *filled = NULL, *name = NULL,
             *slots = NULL;
    int found = -1;
    *appended = NULL;
    if ((dtype = PyObject_GetAttr(var, str_dtype)) == NULL ||
        (dtype_int = PyNumber_Long(dtype)) == NULL ||
        (value = PyNumber_Float(number)) == NULL || (shape = Py_BuildValue("[i]", 1)) == NULL ||
        (attrs = PyDict_New()) == NULL || PyDict_SetItem(attrs, str_dtype, dtype_int) < 0 ||
        PyDict_SetItem(attrs, str_shape, shape) < 0 ||
        PyDict_SetItem(attrs, str_value, value) < 0 ||
        PyDict_SetItem(attrs, str_force_cpu, Py_True) < 0 ||
        (no_inputs = PyDict_New()) == NULL || (block = current_block_of(var)) == NULL) {
        /* (nothing appended: the Python way reads the same and raises its own error, an
         * int past a double's float() or a dtype of no int) */
        if (!PyErr_Occurred() || (PyErr_ExceptionMatches(PyExc_Exception) &&
                                  !PyErr_ExceptionMatches(PyExc_MemoryError))) {
            PyErr_Clear();
            found = 0;
        }
        goto done;
    }
    PyObject *fill[5] = {block, str_fill_constant, no_inputs, attrs, dtype};
    if ((scalar = append_record(ONE_OUT, fill, 5, NULL)) == NULL ||
        PyObject_SetAttr(scalar, str_stop_gradient, Py_True) < 0)
        goto done;
    PyObject *ops = PyObject_GetAttr(block, str_ops);
    if (ops == NULL)
        goto done;
    filled = PyList_Check(ops) && PyList_GET_SIZE(ops) > 0
             ? Py_NewRef(PyList_GET_ITEM(ops, PyList_GET_SIZE(ops) - 1)) : NULL;
    Py_DECREF(ops);
    if (filled == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Variable operator: the scalar's fill_constant "
                                            "expected last in its block");
        goto done;
    }
    if ((name = PyObject_GetAttr(scalar, str_name)) == NULL ||
        (slots = op->reverse ? operand_slots(scalar, var) : operand_slots(var, scalar)) == NULL)
        goto done;
    PyObject *record[5] = {block, op->op_type, slots, Py_None,
                           op->out_dtype != Py_None ? op->out_dtype : dtype};
    if ((*appended = append_record(ONE_OUT, record, 5, NULL)) != NULL) {
        found = 1;
        goto done;
    }
    PyObject *generator = PyDict_GetItemWithError(unique_name_globals, str_generator);
    if (generator == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "unique_name._generator expected");
        goto done;
    }
    /* (the op took back its own temporary and name: the tensor's name is the last) */
    PyObject *undo_args[] = {block, filled, name, Py_None, generator};
    take_back_raising(take_back_fn, undo_args, 5);
done:
    Py_XDECREF(dtype), Py_XDECREF(dtype_int), Py_XDECREF(value), Py_XDECREF(shape);
    Py_XDECREF(attrs), Py_XDECREF(block), Py_XDECREF(no_inputs), Py_XDECREF(scalar);
    Py_XDECREF(filled), Py_XDECREF(name), Py_XDECREF(slots);
    return found;
}

/* 1 when `var` is a Variable whose dtype is one of `allowed`, 0 when not (the Python way
 * words the refusal), -1 with an error; *dtype its dtype (a new reference) when 1 */
static int allowed_variable(PyObject *var, PyObject *allowed, PyObject **dtype) {
    *dtype = NULL;
    if (!PyObject_TypeCheck(var, variable_type))
        return 0;
    PyObject *found = PyObject_GetAttr(var, str_dtype);
    if (found == NULL)
        return -1;
    int in = PySet_Contains(allowed, found);
    if (in == 1)
        *dtype = found;
    else
        Py_DECREF(found);
    return in;
}

/* The record a layer call appends (ELEMENTWISE, ACTIVATION, UNARY, PAIR), record[0..5] =
 * (block, op type, inputs, attributes, dtype, the layer type) as new references: 1, 0 for
 * the Python way, -1 with an error */
static int layer_record(OneOpCall *op, PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kwnames, PyObject **record) {
    PyObject *x, *y = NULL, *x_dtype = NULL, *y_dtype = NULL, *attrs = NULL, *axis = NULL;
    Py_ssize_t n_keywords = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    int found = 0, in;
    if (op->form == ELEMENTWISE) { /* (x, y, axis=-1, act=None, name=None) */
        PyObject *given[5] = {NULL, NULL, NULL, Py_None, Py_None};
        static PyObject **const names[5] = {NULL, NULL, &str_axis, &str_act, &str_name};
        if (nargs < 2 || nargs > 5)
            return 0;
        for (Py_ssize_t i = 0; i < nargs; i++)
            given[i] = args[i];
        for (Py_ssize_t k = 0; k < n_keywords; k++) {
            PyObject *key = PyTuple_GET_ITEM(kwnames, k);
            int at = 2;
            while (at < 5 && key != *names[at])
                at++;
            if (at == 5 || at < nargs) /* (a name spelt otherwise, or given twice) */
                return 0;
            given[at] = args[nargs + k];
        }
        x = given[0], y = given[1], axis = given[2];
        if (given[3] != Py_None || given[4] != Py_None ||
            (axis != NULL && !PyLong_CheckExact(axis)))
            return 0;
        if ((in = allowed_variable(x, op->allowed, &x_dtype)) != 1 ||
            (in = allowed_variable(y, op->allowed, &y_dtype)) != 1) {
            found = in;
            goto done;
        }
        if (axis != NULL) {
            int overflow;
            long value = PyLong_AsLongAndOverflow(axis, &overflow);
            if (value != -1 || overflow) {
                if ((attrs = PyDict_New()) == NULL || PyDict_SetItem(attrs, str_axis, axis) < 0) {
                    found = -1;
                    goto done;
                }
            }
        }
        if (attrs == NULL) {
            attrs = Py_None;
            Py_INCREF(attrs);
        }
    } else if (op->form == PAIR) { /* (x, y, ..., name=None, ...): x and y alone */
        if (nargs != 2)
            return 0;
        for (Py_ssize_t k = 0; k < n_keywords; k++)
            if (PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, k), str_name) != 0 ||
                args[nargs + k] != Py_None)
                return 0;
        x = args[0], y = args[1];
        if (!Py_IS_TYPE(x, variable_type) || !Py_IS_TYPE(y, variable_type))
            return 0;
        if ((in = allowed_variable(x, op->allowed, &x_dtype)) != 1 ||
            (in = allowed_variable(y, op->allowed, &y_dtype)) != 1) {
            found = in;
            goto done;
        }
        if ((attrs = PyDict_Copy(op->attrs)) == NULL) {
            found = -1;
            goto done;
        }
    } else { /* ACTIVATION: (x, name=None, **attrs); UNARY: (x, ..., name=None, ...) */
        if (nargs < 1 || nargs > (op->form == UNARY ? 1 : 2) ||
            (nargs == 2 && args[1] != Py_None))
            return 0;
        x = args[0];
        if ((attrs = PyDict_New()) == NULL)
            return -1;
        for (Py_ssize_t k = 0; k < n_keywords; k++) {
            PyObject *key = PyTuple_GET_ITEM(kwnames, k), *value = args[nargs + k];
            if (PyUnicode_Compare(key, str_name) == 0) {
                if (nargs == 2 || value != Py_None)
                    goto done;
            } else if (op->form == UNARY || PyUnicode_Compare(key, str_x_argument) == 0) {
                goto done; /* (no attributes taken; x twice) */
            } else if (PyDict_SetItem(attrs, key, value) < 0) {
                found = -1;
                goto done;
            }
        }
        if (op->form == UNARY) { /* (checked: an argument of Variable's own class) */
            if (!Py_IS_TYPE(x, variable_type))
                goto done;
            if (op->attrs == Py_None) {
                Py_SETREF(attrs, Py_None);
                Py_INCREF(attrs);
            } else if (PyDict_Update(attrs, op->attrs) < 0) {
                found = -1;
                goto done;
            }
        }
        if ((in = allowed_variable(x, op->allowed, &x_dtype)) != 1) {
            found = in;
            goto done;
        }
        PyObject *op_defs = PyDict_GetItemWithError(program_globals, str_op_defs);
        if (op_defs == NULL || !PyDict_Check(op_defs)) {
            found = PyErr_Occurred() ? -1 : 0;
            goto done;
        }
        if ((in = PyDict_Contains(op_defs, op->op_type)) != 1) { /* (not loaded: the Python way) */
            found = in;
            goto done;
        }
    }
    PyObject *program = PyDict_GetItemWithError(program_globals, str_main_program);
    if (program == NULL) {
        found = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    if ((record[0] = indexed_block(program)) == NULL) {
        found = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    if ((record[2] = operand_slots(x, y)) == NULL) {
        found = -1;
        goto done;
    }
    record[1] = op->op_type, record[3] = attrs, record[4] = x_dtype, record[5] = op->op_type;
    Py_INCREF(record[1]), Py_INCREF(record[5]);
    Py_XDECREF(y_dtype);
    return 1;
done:
    Py_XDECREF(x_dtype), Py_XDECREF(y_dtype), Py_XDECREF(attrs);
    return found;
}

/* --- REPEATED: a checked layer's call replayed ----------------------------------------- */

/* what the recorder's Python way gave append_one_op or append_with_xshape first: (block,
 * op type, inputs (the Variable x with XShape), attributes (a copy), dtype (None with
 * XShape), layer type, form), what that call returned, and the calls made */
static PyObject *recorded_call, *recorded_result;
static Py_ssize_t recorded_appends;

/* 1 when value is a scalar or a list or tuple of scalars, the kinds of value a replay keys
 * and copies */
static int plain_value(PyObject *value) {
    if (is_scalar(value))
        return 1;
    if (!PyList_CheckExact(value) && !PyTuple_CheckExact(value))
        return 0;
    PyObject **items = PySequence_Fast_ITEMS(value);
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(value); i++)
        if (!is_scalar(items[i]))
            return 0;
    return 1;
}

/* a copy of attributes (None, or a dict of plain values) whose lists are fresh too, as a
 * replay keeps them (a new reference); NULL without an error for other attributes */
static PyObject *attrs_copy(PyObject *attrs) {
    if (attrs == Py_None)
        return Py_NewRef(Py_None);
    if (!PyDict_CheckExact(attrs))
        return NULL;
    PyObject *copy = PyDict_Copy(attrs), *name, *value;
    Py_ssize_t pos = 0;
    while (copy != NULL && PyDict_Next(attrs, &pos, &name, &value)) {
        if (!plain_value(value)) {
            Py_CLEAR(copy);
        } else if (PyList_CheckExact(value)) {
            PyObject *list = PyList_GetSlice(value, 0, PyList_GET_SIZE(value));
            if (list == NULL || PyDict_SetItem(copy, name, list) < 0)
                Py_CLEAR(copy);
            Py_XDECREF(list);
        }
    }
    return copy;
}

/* append_one_op (append_with_xshape) while a REPEATED layer's Python way runs: the first
 * call's arguments kept */
static PyObject *recorded_append(enum form form, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *call = NULL;
    if (recorded_appends++ == 0 && kwnames == NULL &&
        (form == ONE_OUT ? nargs == 5 || nargs == 6 : nargs == 5)) {
        PyObject *attrs = attrs_copy(args[3]), *kind = PyLong_FromLong(form);
        if (attrs != NULL && kind != NULL)
            call = form == ONE_OUT ? PyTuple_Pack(7, args[0], args[1], args[2], attrs, args[4],
                                                  nargs == 6 ? args[5] : Py_None, kind)
                                   : PyTuple_Pack(7, args[0], args[1], args[2], attrs, Py_None,
                                                  args[4], kind);
        Py_XDECREF(attrs), Py_XDECREF(kind);
        if (call == NULL && PyErr_Occurred())
            return NULL;
    }
    PyObject *result = append_record(form, args, nargsf, kwnames);
    if (call != NULL && result != NULL) {
        Py_XSETREF(recorded_call, call);
        Py_XSETREF(recorded_result, Py_NewRef(result));
    } else {
        Py_XDECREF(call);
    }
    return result;
}

/* the key of a call: x's (shape, dtype, lod_level, type), the positional count, the keyword
 * names, and each other argument's class and value (a list's or tuple's as a tuple, with
 * its items' classes: 1, 1.0 and True are equal keys); NULL without an error for a call
 * of other arguments (a new reference). With x NULL (CREATED), `state` and three Nones
 * in x's place, and every argument keyed. */
static PyObject *call_key(PyObject *x, PyObject *state, PyObject *const *args,
                          Py_ssize_t nargs, PyObject *kwnames) {
    Py_ssize_t n_keywords = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    Py_ssize_t first = x == NULL ? 0 : 1, n_values = nargs - first + n_keywords;
    PyObject *key = PyTuple_New(6 + 3 * n_values);
    if (key != NULL && x == NULL) {
        PyTuple_SET_ITEM(key, 0, Py_NewRef(state));
        for (int i = 1; i < 4; i++)
            PyTuple_SET_ITEM(key, i, Py_NewRef(Py_None));
    }
    if (key == NULL ||
        (x != NULL && (var_fields(x, &PyTuple_GET_ITEM(key, 0)) < 0 ||
                       (PyTuple_GET_ITEM(key, 3) = PyObject_GetAttr(x, str_type)) == NULL)) ||
        (PyTuple_GET_ITEM(key, 4) = PyLong_FromSsize_t(nargs)) == NULL ||
        (x != NULL && !PyTuple_CheckExact(PyTuple_GET_ITEM(key, 0)))) {
        /* (a shape set as a list: no key) */
        Py_XDECREF(key);
        return NULL;
    }
    PyTuple_SET_ITEM(key, 5, Py_NewRef(kwnames == NULL ? Py_None : kwnames));
    for (Py_ssize_t i = 0; i < n_values; i++) {
        PyObject *value = args[first + i], *classes = Py_None;
        if (!plain_value(value)) {
            Py_DECREF(key);
            return NULL;
        }
        Py_INCREF(value);
        if (!is_scalar(value)) { /* (a list or tuple: its items and their classes) */
            Py_ssize_t n = PySequence_Fast_GET_SIZE(value);
            PyObject *items = PySequence_Tuple(value);
            Py_SETREF(value, items);
            if (value == NULL || (classes = PyTuple_New(n)) == NULL) {
                Py_XDECREF(value);
                Py_DECREF(key);
                return NULL;
            }
            for (Py_ssize_t j = 0; j < n; j++)
                PyTuple_SET_ITEM(classes, j, Py_NewRef(key_class(PyTuple_GET_ITEM(value, j))));
        } else {
            Py_INCREF(classes);
        }
        PyTuple_SET_ITEM(key, 6 + 3 * i, Py_NewRef(key_class(args[first + i])));
        PyTuple_SET_ITEM(key, 7 + 3 * i, value);
        PyTuple_SET_ITEM(key, 8 + 3 * i, classes);
    }
    return key;
}

/* the block a layer appends to: the default main program's current block (a new
 * reference), or NULL (with an error, or without one for a program of another class) */
static PyObject *layers_block(void) {
    PyObject *program = PyDict_GetItemWithError(program_globals, str_main_program);
    return program == NULL ? NULL : indexed_block(program);
}

static Py_ssize_t ops_count(PyObject *block) {
    PyObject *d = instance_dict(block);
    if (d == NULL)
        return -1;
    PyObject *ops = PyDict_GetItemWithError(d, str_ops);
    Py_ssize_t n = ops != NULL && PyList_CheckExact(ops) ? PyList_GET_SIZE(ops) : -1;
    Py_DECREF(d);
    return n;
}

/* whether inputs is {slot: (x.name,)}, one slot naming x alone (X for most; slice's
 * Input): 1 with *slot that slot (borrowed), 0 or -1 */
static int x_alone(PyObject *inputs, PyObject *x, PyObject **slot) {
    Py_ssize_t pos = 0;
    PyObject *names;
    if (!PyDict_CheckExact(inputs) || PyDict_GET_SIZE(inputs) != 1 ||
        !PyDict_Next(inputs, &pos, slot, &names) || !PyUnicode_CheckExact(*slot) ||
        !PyTuple_CheckExact(names) || PyTuple_GET_SIZE(names) != 1)
        return 0;
    PyObject *name = PyObject_GetAttr(x, str_name);
    if (name == NULL)
        return -1;
    int same = PyUnicode_CheckExact(name) &&
               PyUnicode_Compare(name, PyTuple_GET_ITEM(names, 0)) == 0;
    Py_DECREF(name);
    return same;
}

/* the Python way, recorded: what it appended kept as the replay of `key`, (op type,
 * attributes, dtype, layer type, form, its output's stop_gradient, the slot naming x or
 * None), when it is one append_one_op call on x alone or one append_with_xshape call on x
 * (see the comment
 * above OneOpCall) */
static PyObject *recorded_call_of(OneOpCall *op, PyObject *key, PyObject *const *args,
                                  size_t nargsf, PyObject *kwnames) {
    PyObject *block = layers_block(), *replay = NULL;
    Py_ssize_t before = block == NULL ? -1 : ops_count(block);
    if (before < 0) {
        Py_XDECREF(block);
        if (PyErr_Occurred())
            return NULL;
        return PyObject_Vectorcall(op->python_way, args, nargsf, kwnames);
    }
    recorder = op, recorded_appends = 0;
    PyObject *result = PyObject_Vectorcall(op->python_way, args, nargsf, kwnames);
    recorder = NULL;
    PyObject *call = recorded_call, *returned = recorded_result;
    recorded_call = recorded_result = NULL;
    if (result != NULL) {
        if (recorded_appends != 1 || call == NULL || returned != result) {
            replay = Py_NewRef(Py_None); /* (these arguments: more, or other, than one op) */
        } else {
            PyObject *now = layers_block(), *inputs = PyTuple_GET_ITEM(call, 2),
                     *slot = Py_None;
            int with_xshape = PyLong_AsLong(PyTuple_GET_ITEM(call, 6)) == WITH_XSHAPE;
            int alone = now == NULL ? -1
                        : op->form == CREATED
                        ? !with_xshape && PyDict_CheckExact(inputs) && !PyDict_GET_SIZE(inputs)
                        : with_xshape ? inputs == args[0] : x_alone(inputs, args[0], &slot);
            /* (a layer may mark its output, as argmax's stops its gradient) */
            PyObject *stops = alone == 1 ? PyObject_GetAttr(result, str_stop_gradient) : NULL;
            if (stops != NULL && (stops == Py_True || stops == Py_False) && now == block &&
                PyTuple_GET_ITEM(call, 0) == block && ops_count(block) == before + 1)
                replay = PyTuple_Pack(7, PyTuple_GET_ITEM(call, 1), PyTuple_GET_ITEM(call, 3),
                                      PyTuple_GET_ITEM(call, 4), PyTuple_GET_ITEM(call, 5),
                                      PyTuple_GET_ITEM(call, 6), stops, slot);
            Py_XDECREF(stops), Py_XDECREF(now);
        }
        if (replay != NULL) {
            if (PyDict_GET_SIZE(op->replays) >= 256) /* (ever new arguments: keep a few) */
                PyDict_Clear(op->replays);
            if (PyDict_SetItem(op->replays, key, replay) < 0)
                PyErr_Clear(); /* (the call is made: only its replay is not kept) */
            Py_DECREF(replay);
        }
        if (PyErr_Occurred()) /* (a check that could not read: no replay) */
            PyErr_Clear();
    }
    Py_XDECREF(call), Py_XDECREF(returned), Py_DECREF(block);
    return result;
}

static PyObject *repeated_call(OneOpCall *op, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *key = NULL;
    if (op->form == CREATED && recorder == NULL) {
        PyObject *state = op->state == NULL ? Py_NewRef(Py_None) : PyObject_CallNoArgs(op->state);
        if (state != NULL) {
            key = call_key(NULL, state, args, nargs, kwnames);
            Py_DECREF(state);
        }
    } else if (nargs >= 1 && Py_IS_TYPE(args[0], variable_type) && recorder == NULL) {
        key = call_key(args[0], NULL, args, nargs, kwnames);
    }
    if (key == NULL) {
        if (PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_Exception) ||
                PyErr_ExceptionMatches(PyExc_MemoryError))
                return NULL;
            PyErr_Clear(); /* (the Python way reads the same and raises its own error) */
        }
        return PyObject_Vectorcall(op->python_way, args, nargsf, kwnames);
    }
    PyObject *replay = PyDict_GetItemWithError(op->replays, key);
    if (replay == NULL) {
        PyObject *result = NULL;
        if (!PyErr_Occurred()) {
            result = recorded_call_of(op, key, args, nargsf, kwnames);
        } else if (PyErr_ExceptionMatches(PyExc_TypeError)) { /* (an unhashable field) */
            PyErr_Clear();
            result = PyObject_Vectorcall(op->python_way, args, nargsf, kwnames);
        }
        Py_DECREF(key);
        return result;
    }
    Py_DECREF(key);
    if (replay == Py_None)
        return PyObject_Vectorcall(op->python_way, args, nargsf, kwnames);
    Py_INCREF(replay); /* (held across the append, which runs the op in a live session) */
    PyObject *record[6] = {NULL}, *result = NULL;
    int one_out = PyLong_AsLong(PyTuple_GET_ITEM(replay, 4)) == ONE_OUT;
    /* (the attributes as recorded: append_one_op completes a copy of those it is given, and
     * neither keeps nor changes them; so does append_with_xshape) */
    if ((record[0] = layers_block()) != NULL &&
        (record[2] = op->form == CREATED ? PyDict_New()
                     : one_out ? one_slot(PyTuple_GET_ITEM(replay, 6), args[0])
                     : Py_NewRef(args[0])) != NULL) {
        record[1] = Py_NewRef(PyTuple_GET_ITEM(replay, 0));
        record[3] = Py_NewRef(PyTuple_GET_ITEM(replay, 1));
        if (one_out) {
            record[4] = Py_NewRef(PyTuple_GET_ITEM(replay, 2));
            record[5] = Py_NewRef(PyTuple_GET_ITEM(replay, 3));
            result = append_record(ONE_OUT, record, 6, NULL);
        } else { /* (block, op type, x, attributes, layer type) */
            record[4] = Py_NewRef(PyTuple_GET_ITEM(replay, 3));
            result = append_record(WITH_XSHAPE, record, 5, NULL);
        }
        if (result != NULL && PyTuple_GET_ITEM(replay, 5) == Py_True &&
            PyObject_SetAttr(result, str_stop_gradient, Py_True) < 0)
            Py_CLEAR(result);
    } else if (!PyErr_Occurred()) { /* (a program of another class: its own methods) */
        result = PyObject_Vectorcall(op->python_way, args, nargsf, kwnames);
    }
    for (int i = 0; i < 6; i++)
        Py_XDECREF(record[i]);
    Py_DECREF(replay);
    return result;
}

/* whether the module of globals `layers` appends through this module: 1 when its
 * append_one_op is this module's (with `either`, its append_one_op or append_with_xshape,
 * each it has this module's); 0 when not (a swapped one sees every call); -1 on error */
static int our_appenders(PyObject *layers, int either) {
    PyObject *const names[2] = {str_append_one_op, str_append_with_xshape};
    PyCFunction const ours[2] = {(PyCFunction)(void (*)(void))append_one_op,
                                 (PyCFunction)(void (*)(void))append_with_xshape};
    int found = 0;
    for (int i = 0; i < (either ? 2 : 1); i++) {
        PyObject *appender = PyDict_GetItemWithError(layers, names[i]);
        if (appender == NULL) {
            if (PyErr_Occurred())
                return -1;
            continue;
        }
        if (!PyCFunction_Check(appender) || PyCFunction_GET_FUNCTION(appender) != ours[i])
            return 0;
        found = 1;
    }
    return found;
}

static PyObject *one_op_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames) {
    OneOpCall *op = (OneOpCall *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (program_globals == NULL || (op->form == OPERATOR && (nargs != 2 || kwnames != NULL)))
        return PyObject_Vectorcall(op->python_way, args, nargsf, kwnames);
    int ours = our_appenders(op->layers_globals, op->form == REPEATED);
    int classes = ours > 0 ? find_classes() : ours;
    if (classes < 0)
        return NULL;
    if (op->form == REPEATED || op->form == CREATED)
        return classes ? repeated_call(op, args, nargsf, kwnames)
                       : PyObject_Vectorcall(op->python_way, args, nargsf, kwnames);
    if (classes && op->form == OPERATOR && op->scalar == NO_SCALAR &&
        (PyFloat_CheckExact(args[1]) || PyLong_CheckExact(args[1])) &&
        PyObject_TypeCheck(args[0], variable_type)) { /* (x > 0.5, x ** 2: two ops) */
        PyObject *appended;
        int done = with_scalar(op, args[0], args[1], &appended);
        if (done == 0)
            return PyObject_Vectorcall(op->python_way, args, nargsf, kwnames);
        return done > 0 ? appended : NULL;
    }
    PyObject *record[6] = {NULL};
    int found = !classes ? 0
                : op->form != OPERATOR ? layer_record(op, args, nargs, kwnames, record)
                : PyObject_TypeCheck(args[0], variable_type)
                    ? operator_record(op, args[0], args[1], record) : 0;
    int fields = op->form == OPERATOR ? 5 : 6;
    if (found != 1) {
        for (int i = 0; i < fields; i++)
            Py_CLEAR(record[i]);
        if (found < 0 && PyErr_ExceptionMatches(PyExc_Exception) &&
            !PyErr_ExceptionMatches(PyExc_MemoryError)) {
            PyErr_Clear(); /* (the Python way reads the same and raises its own error) */
            found = 0;
        }
        if (found < 0)
            return NULL;
        return PyObject_Vectorcall(op->python_way, args, nargsf, kwnames);
    }
    PyObject *result = append_record(ONE_OUT, record, fields, NULL);
    for (int i = 0; i < fields; i++)
        Py_DECREF(record[i]);
    return result;
}

static PyObject *one_op_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"python_way", "form", "op_type", "layers_globals", "allowed",
                               "reverse", "scalar", "out_dtype", "attrs", "state", NULL};
    PyObject *python_way, *op_type, *layers_globals, *allowed = Py_None, *out_dtype = Py_None,
             *attrs = Py_None, *state = Py_None;
    int form, reverse = 0, scalar = NO_SCALAR;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OiUO!|OpiOOO:OneOpCall", keywords,
                                     &python_way, &form, &op_type, &PyDict_Type,
                                     &layers_globals, &allowed, &reverse, &scalar, &out_dtype,
                                     &attrs, &state))
        return NULL;
    int replayed = form == REPEATED || form == CREATED;
    if (!PyCallable_Check(python_way) || form < OPERATOR || form > CREATED ||
        scalar < NO_SCALAR || scalar > DIVIDED ||
        (form != OPERATOR && !replayed && !PyAnySet_Check(allowed)) ||
        (attrs != Py_None && !PyDict_CheckExact(attrs)) || (form == PAIR && attrs == Py_None) ||
        (state != Py_None && (form != CREATED || !PyCallable_Check(state))))
        return PyErr_Format(PyExc_ValueError, "OneOpCall expected a callable, a form in "
                            "[%d, %d], a scalar form in [%d, %d], a layer's allowed dtypes "
                            "as a set, its attributes as a dict (a PAIR's given) and a "
                            "CREATED's state as a callable, got %R, %d, %d, %R, %R and %R",
                            OPERATOR, CREATED, NO_SCALAR, DIVIDED, python_way, form, scalar,
                            allowed, attrs, state);
    OneOpCall *self = (OneOpCall *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    if (replayed && (self->replays = PyDict_New()) == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    if (state != Py_None)
        self->state = Py_NewRef(state);
    Py_INCREF(python_way), Py_INCREF(op_type), Py_INCREF(out_dtype), Py_INCREF(layers_globals);
    Py_INCREF(allowed), Py_INCREF(attrs);
    self->python_way = python_way, self->op_type = op_type, self->out_dtype = out_dtype;
    self->layers_globals = layers_globals, self->allowed = allowed, self->attrs = attrs;
    self->form = form, self->reverse = reverse, self->scalar = scalar;
    self->vectorcall = one_op_call;
    return (PyObject *)self;
}

/* an attribute of python_way's, as the function it stands for answers (__name__, ...) */
static PyObject *one_op_forwarded(OneOpCall *self, void *name) {
    return PyObject_GetAttrString(self->python_way, (const char *)name);
}

/* its own attributes, else python_way's (the marks a module's wrapping reads, its code) */
static PyObject *one_op_getattro(PyObject *self, PyObject *name) {
    PyObject *found = PyObject_GenericGetAttr(self, name);
    if (found != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return found;
    PyErr_Clear();
    return PyObject_GetAttr(((OneOpCall *)self)->python_way, name);
}

/* an attribute set on it is set on python_way (a mark a module's wrapping leaves) */
static int one_op_setattro(PyObject *self, PyObject *name, PyObject *value) {
    return PyObject_SetAttr(((OneOpCall *)self)->python_way, name, value);
}

static PyObject *one_op_get(PyObject *self, PyObject *instance, PyObject *owner) {
    if (instance == NULL || instance == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, instance);
}

static PyObject *one_op_repr(OneOpCall *self) {
    return PyUnicode_FromFormat("<one-op call %R: %U>", self->python_way, self->op_type);
}

static int one_op_traverse(OneOpCall *self, visitproc visit, void *arg) {
    Py_VISIT(self->python_way);
    Py_VISIT(self->op_type);
    Py_VISIT(self->out_dtype);
    Py_VISIT(self->layers_globals);
    Py_VISIT(self->allowed);
    Py_VISIT(self->attrs);
    Py_VISIT(self->replays);
    Py_VISIT(self->state);
    return 0;
}

static int one_op_clear(OneOpCall *self) {
    Py_CLEAR(self->python_way);
    Py_CLEAR(self->op_type);
    Py_CLEAR(self->out_dtype);
    Py_CLEAR(self->layers_globals);
    Py_CLEAR(self->allowed);
    Py_CLEAR(self->attrs);
    Py_CLEAR(self->replays);
    Py_CLEAR(self->state);
    return 0;
}

static void one_op_dealloc(OneOpCall *self) {
    PyObject_GC_UnTrack(self);
    one_op_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* pickled as the function it stands for is: by its module and qualified name */
static PyObject *one_op_reduce(OneOpCall *self, PyObject *unused) {
    return PyObject_GetAttrString(self->python_way, "__qualname__");
}

static PyMethodDef one_op_methods[] = {
    {"__reduce__", (PyCFunction)one_op_reduce, METH_NOARGS,
     "pickled by reference, as a function is"},
    {NULL}};

static PyMemberDef one_op_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(OneOpCall, python_way), READONLY,
     "the Python way, which defines the call"},
    {"op_type", T_OBJECT, offsetof(OneOpCall, op_type), READONLY, "the op it appends"},
    {NULL}};

static PyGetSetDef one_op_getset[] = {
    {"__name__", (getter)one_op_forwarded, NULL, NULL, "__name__"},
    {"__qualname__", (getter)one_op_forwarded, NULL, NULL, "__qualname__"},
    {"__doc__", (getter)one_op_forwarded, NULL, NULL, "__doc__"},
    {"__module__", (getter)one_op_forwarded, NULL, NULL, "__module__"},
    {NULL}};

static PyTypeObject OneOpCallType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fluid_nb.framework._op_record.OneOpCall",
    .tp_basicsize = sizeof(OneOpCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_new = one_op_new,
    .tp_traverse = (traverseproc)one_op_traverse,
    .tp_clear = (inquiry)one_op_clear,
    .tp_dealloc = (destructor)one_op_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(OneOpCall, vectorcall),
    .tp_descr_get = one_op_get,
    .tp_getattro = one_op_getattro,
    .tp_setattro = one_op_setattro,
    .tp_repr = (reprfunc)one_op_repr,
    .tp_methods = one_op_methods,
    .tp_members = one_op_members,
    .tp_getset = one_op_getset,
};

static PyObject *configure_one_op(PyObject *self, PyObject *args) {
    PyObject *fallback, *take_back, *xshape_fallback, *xshape_take_back, *fresh_fallback,
        *fresh_take_back, *program, *transaction, *unique_name, *annotations;
    if (!PyArg_ParseTuple(args, "OOOOOOO!O!O!O!:configure_one_op", &fallback, &take_back,
                          &xshape_fallback, &xshape_take_back, &fresh_fallback,
                          &fresh_take_back, &PyModule_Type, &program,
                          &PyModule_Type, &transaction, &PyModule_Type, &unique_name,
                          &PyModule_Type, &annotations))
        return NULL;
    if (!PyCallable_Check(fallback) || !PyCallable_Check(take_back) ||
        !PyCallable_Check(xshape_fallback) || !PyCallable_Check(xshape_take_back) ||
        !PyCallable_Check(fresh_fallback) || !PyCallable_Check(fresh_take_back))
        return PyErr_Format(PyExc_TypeError, "configure_one_op expected callables");
    PyObject *dicts[4] = {PyModule_GetDict(program), PyModule_GetDict(transaction),
                          PyModule_GetDict(unique_name), PyModule_GetDict(annotations)};
    Py_INCREF(fallback), Py_INCREF(take_back), Py_INCREF(xshape_fallback);
    Py_INCREF(xshape_take_back), Py_INCREF(fresh_fallback), Py_INCREF(fresh_take_back);
    Py_XSETREF(fresh_fallback_fn, fresh_fallback);
    Py_XSETREF(fresh_take_back_fn, fresh_take_back);
    for (int i = 0; i < 4; i++)
        Py_INCREF(dicts[i]);
    Py_XSETREF(fallback_fn, fallback);
    Py_XSETREF(take_back_fn, take_back);
    Py_XSETREF(xshape_fallback_fn, xshape_fallback);
    Py_XSETREF(xshape_take_back_fn, xshape_take_back);
    Py_XSETREF(program_globals, dicts[0]);
    Py_XSETREF(transaction_globals, dicts[1]);
    Py_XSETREF(unique_name_globals, dicts[2]);
    Py_XSETREF(annotations_globals, dicts[3]);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"walk_block_only", walk_block_only, METH_O,
     "walk_block_only(Operator): the cyclic collector's walk of an op visits its block and "
     "class alone (its other fields hold nothing that refers back to it)"},
    {"untrack_arguments", (PyCFunction)(void (*)(void))untrack_arguments, METH_FASTCALL,
     "untrack_arguments(*slots): untrack each dict of slot -> name or tuple of names (str), "
     "and its tuples: they hold no container for the cyclic collector to walk"},
    {"capture", (PyCFunction)(void (*)(void))capture, METH_FASTCALL,
     "capture(skip=1, max_frames=32): (code, offset, ...) of the calling stack, innermost "
     "first, from frame `skip` (1: the calling function), ending after the first "
     "module-level frame"},
    {"append_one_op", (PyCFunction)(void (*)(void))append_one_op,
     METH_FASTCALL | METH_KEYWORDS,
     "append_one_op(block, op_type, inputs, attrs, dtype, layer_type=None): append op_type "
     "with its Out a fresh temporary of dtype, and return the temporary (see "
     "framework.transaction.append_one_op; its common case is C)"},
    {"append_with_xshape", (PyCFunction)(void (*)(void))append_with_xshape,
     METH_FASTCALL | METH_KEYWORDS,
     "append_with_xshape(block, op_type, x, attrs, layer_type): append op_type on x with its "
     "Out and XShape fresh temporaries, and return Out (see "
     "framework.transaction.append_with_xshape; its common case is C)"},
    {"append_fresh", (PyCFunction)(void (*)(void))append_fresh,
     METH_FASTCALL | METH_KEYWORDS,
     "append_fresh(block, op_type, inputs, outputs, attrs, layer_type, slot_order=None): "
     "append op_type with its outputs fresh temporaries, and return slot -> [variable] (see "
     "framework.transaction.append_fresh; its common case is C)"},
    {"op_arguments", (PyCFunction)(void (*)(void))op_arguments, METH_FASTCALL,
     "op_arguments(inputs, outputs, Variable): (inputs, outputs, every slot one name) as "
     "an op keeps them, slot -> tuple of names, or None where the Python way must name "
     "them (see Block.append_op)"},
    {"attr_values", attr_values, METH_O,
     "attr_values(attrs): the attributes' values in order, each list as a tuple, as the "
     "inference memos key them"},
    {"completed", (PyCFunction)(void (*)(void))completed, METH_FASTCALL,
     "completed(opdef, attrs): OpDef.complete_attrs(attrs) from its memo, (attributes, their "
     "types), or None when the memo has no answer"},
    {"configure_one_op", configure_one_op, METH_VARARGS,
     "configure_one_op(fallback, take_back, xshape_fallback, xshape_take_back, "
     "fresh_fallback, fresh_take_back, program, transaction, unique_name, annotations): the "
     "Python ways of append_one_op, append_with_xshape and append_fresh, their take-backs of "
     "a failed hook, and the modules whose globals they read"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_op_record",
                                    "The parts of an appended op's record made in C.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__op_record(void) {
    static struct { PyObject **name; const char *text; } const names[] = {
        {&module_name, "<module>"}, {&str_vars, "vars"}, {&str_ops, "ops"},
        {&str_program, "program"}, {&str_version_counter, "_version"},
        {&str_append_hook, "_append_hook"}, {&str_current_role, "_current_role"},
        {&str_version, "version"}, {&str_ids, "ids"}, {&str_prefix, "prefix"},
        {&str_undo, "undo"}, {&str_inferred, "_inferred"}, {&str_completed, "_completed"},
        {&str_default_attrs, "_default_attrs"}, {&str_list_defaults, "_list_defaults"},
        {&str_shape, "shape"}, {&str_dtype, "dtype"}, {&str_lod_level, "lod_level"},
        {&str_block, "block"}, {&str_name, "name"}, {&str_op_defs, "_op_defs"},
        {&str_slots_passed, "_single_slots_passed"}, {&str_depth, "_depth"},
        {&str_journal, "journal"}, {&str_generator, "_generator"}, {&str_current, "current"},
        {&str_value, "value"}, {&str_force_cpu, "force_cpu"},
        {&str_fill_constant, "fill_constant"},
        {&str_x, "X"}, {&str_y, "Y"}, {&str_out, "Out"}, {&str_tmp, "tmp"},
        {&str_variable, "Variable"}, {&str_operator, "Operator"}, {&str_block_class, "Block"},
        {&str_generator_class, "UniqueNameGenerator"}, {&str_type, "type"},
        {&str_program_class, "Program"}, {&str_xshape, "XShape"},
        {&str_inferred_from_x, "_inferred_from_x"}, {&str_append_one_op, "append_one_op"},
        {&str_append_with_xshape, "append_with_xshape"}, {&str_stop_gradient, "stop_gradient"},
        {&str_scale, "scale"}, {&str_bias, "bias"}, {&str_blocks, "blocks"},
        {&str_current_block_idx, "current_block_idx"}, {&str_current_block, "current_block"},
        {&str_main_program, "_main_program"}, {&str_axis, "axis"}, {&str_act, "act"},
        {&str_x_argument, "x"}, {&str_negative_zero, "-0.0"},
        {&str_first_input, "_first_input"}, {&str_every_input, "_every_input"},
        {&str_registry, "_registry"}, {&str_opdef_class, "OpDef"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i)
        if ((*names[i].name = PyUnicode_InternFromString(names[i].text)) == NULL)
            return NULL;
    if ((empty_tuple = PyTuple_New(0)) == NULL || (one = PyLong_FromLong(1)) == NULL ||
        PyType_Ready(&OneOpCallType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && (PyModule_AddObjectRef(m, "OneOpCall", (PyObject *)&OneOpCallType) < 0 ||
                      PyModule_AddIntConstant(m, "OPERATOR", OPERATOR) < 0 ||
                      PyModule_AddIntConstant(m, "ELEMENTWISE", ELEMENTWISE) < 0 ||
                      PyModule_AddIntConstant(m, "ACTIVATION", ACTIVATION) < 0 ||
                      PyModule_AddIntConstant(m, "UNARY", UNARY) < 0 ||
                      PyModule_AddIntConstant(m, "PAIR", PAIR) < 0 ||
                      PyModule_AddIntConstant(m, "REPEATED", REPEATED) < 0 ||
                      PyModule_AddIntConstant(m, "CREATED", CREATED) < 0))
        Py_CLEAR(m);
    return m;
}
