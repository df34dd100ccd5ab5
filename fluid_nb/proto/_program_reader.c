/* A ProgramDesc's records read straight from its wire bytes (fluid_nb/framework/codec.py
 * builds the Program from them).
 *
 * Reading a parsed protobuf message from Python costs a call into the parser's objects for
 * every field asked for: a 5,000-op program spent most of its opening there. This reader
 * walks the bytes once and hands back plain tuples, lists and values. It reads only files
 * the wire check (wire.py) accepted, and answers None for anything it leaves to protobuf's
 * parser: a singular message field given twice (protobuf merges the two), a SCALAR
 * attribute, a group, a wire type other than the field's, bytes it cannot read. The
 * field numbers are framework.proto's.
 *
 *   read_program(data) -> (blocks, version or None, op_version_map pairs or None) | None
 *   read_tensor_desc(data) -> (data_type, dims) | None: a parameter file's tensor header
 *   block: (idx, parent_idx, forward_block_idx or None, vars, ops)
 *   var:   (name, {flag: bool} of the flags written, (kind, modeled, data_type, dims,
 *           lod_level or None, the VarType's bytes unless modeled), [VarDesc.Attr bytes])
 *   op:    (type, [(slot, (argument, ...))] inputs, outputs, [(name, AttrType, value)],
 *           is_target)
 *
 * A var's VarType is `modeled` when it holds its kind's tensor description (lod_tensor,
 * tensor_array or selected_rows) and no other field framework.proto defines.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { VARINT = 0, I64 = 1, LEN = 2, I32 = 5 };

typedef struct {
    const unsigned char *data;
    Py_ssize_t pos, end;
} Span;

/* Each reader returns 1 (read), 0 (leave the file to protobuf's parser; no exception) or
 * -1 (an exception is set). */
#define TRY(call)                                                                          \
    do {                                                                                   \
        int ok_ = (call);                                                                  \
        if (ok_ != 1)                                                                      \
            return ok_;                                                                    \
    } while (0)

static int varint(Span *s, uint64_t *value) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (s->pos >= s->end)
            return 0;
        unsigned char byte = s->data[s->pos++];
        if (shift == 63 && byte > 1)
            return 0;
        result |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) {
            *value = result;
            return 1;
        }
    }
    return 0;
}

/* the next field's number and wire type */
static int tag(Span *s, uint64_t *number, int *wire) {
    uint64_t value;
    TRY(varint(s, &value));
    *number = value >> 3, *wire = (int)(value & 7);
    return *number == 0 ? 0 : 1;
}

/* a length-delimited field's bytes, as a span of their own */
static int sub(Span *s, Span *out) {
    uint64_t length;
    TRY(varint(s, &length));
    if (length > (uint64_t)(s->end - s->pos))
        return 0;
    out->data = s->data, out->pos = s->pos, out->end = s->pos + (Py_ssize_t)length;
    s->pos = out->end;
    return 1;
}

static int skip(Span *s, int wire) {
    uint64_t ignored;
    Span inner;
    switch (wire) {
    case VARINT: return varint(s, &ignored);
    case LEN: return sub(s, &inner);
    case I64:
    case I32: {
        Py_ssize_t size = wire == I64 ? 8 : 4;
        if (s->end - s->pos < size)
            return 0;
        s->pos += size;
        return 1;
    }
    default: return 0; /* a group */
    }
}

static int text(Span *s, PyObject **out) {
    Span inner;
    TRY(sub(s, &inner));
    PyObject *value = PyUnicode_DecodeUTF8((const char *)inner.data + inner.pos,
                                           inner.end - inner.pos, NULL);
    if (value == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    Py_XSETREF(*out, value); /* (a singular field given again: the later one wins) */
    return 1;
}

static int fixed(Span *s, int size, uint64_t *value) {
    if (s->end - s->pos < size)
        return 0;
    uint64_t result = 0;
    for (int i = 0; i < size; i++)
        result |= (uint64_t)s->data[s->pos + i] << (8 * i);
    s->pos += size;
    *value = result;
    return 1;
}

/* --- scalar values by protobuf type -------------------------------------------------- */
enum { T_INT32, T_INT64, T_BOOL, T_FLOAT, T_DOUBLE, T_STRING };

static PyObject *scalar_value(int type, uint64_t raw) {
    switch (type) {
    case T_INT32: return PyLong_FromLong((long)(int32_t)(uint32_t)raw);
    case T_INT64: return PyLong_FromLongLong((long long)raw);
    case T_BOOL: return PyBool_FromLong(raw != 0);
    case T_FLOAT: {
        uint32_t bits = (uint32_t)raw;
        float value;
        memcpy(&value, &bits, sizeof value);
        return PyFloat_FromDouble((double)value);
    }
    default: {
        double value;
        memcpy(&value, &raw, sizeof value);
        return PyFloat_FromDouble(value);
    }
    }
}

static int wire_of(int type) {
    return type == T_FLOAT ? I32 : type == T_DOUBLE ? I64 : type == T_STRING ? LEN : VARINT;
}

/* one scalar of `type` at the span's position (its wire type already checked) */
static int read_scalar(Span *s, int type, PyObject **out) {
    if (type == T_STRING)
        return text(s, out);
    uint64_t raw;
    int wire = wire_of(type);
    TRY(wire == VARINT ? varint(s, &raw) : fixed(s, wire == I64 ? 8 : 4, &raw));
    PyObject *value = scalar_value(type, raw);
    if (value == NULL)
        return -1;
    Py_XSETREF(*out, value);
    return 1;
}

/* a repeated scalar field's values appended to `list`, packed or one at a time */
static int append_scalars(Span *s, int wire, int type, PyObject *list) {
    if (wire == wire_of(type)) {
        PyObject *value = NULL;
        TRY(read_scalar(s, type, &value));
        int failed = PyList_Append(list, value);
        Py_DECREF(value);
        return failed ? -1 : 1;
    }
    if (wire != LEN || type == T_STRING)
        return 0;
    Span packed;
    TRY(sub(s, &packed));
    while (packed.pos < packed.end) {
        PyObject *value = NULL;
        TRY(read_scalar(&packed, type, &value));
        int failed = PyList_Append(list, value);
        Py_DECREF(value);
        if (failed)
            return -1;
    }
    return 1;
}

/* a singular scalar field (the later of two wins) */
static int singular(Span *s, int wire, int type, PyObject **out) {
    return wire == wire_of(type) ? read_scalar(s, type, out) : 0;
}

/* --- OpDesc.Attr ------------------------------------------------------------------------
 * AttrType -> (field number, protobuf type, repeated); SCALAR (16) and SCALARS (17) are
 * left to protobuf's parser. */
static const struct {
    int number, type, repeated;
} ATTR_FIELDS[] = {
    {3, T_INT32, 0},   {4, T_FLOAT, 0},  {5, T_STRING, 0},  {6, T_INT32, 1},
    {7, T_FLOAT, 1},   {8, T_STRING, 1}, {10, T_BOOL, 0},   {11, T_BOOL, 1},
    {12, T_INT32, 0},  {13, T_INT64, 0}, {14, T_INT32, 1},  {15, T_INT64, 1},
    {16, T_DOUBLE, 1}, {17, T_STRING, 0}, {18, T_STRING, 1}, {19, T_DOUBLE, 0},
};
#define N_ATTR_TYPES ((int)(sizeof ATTR_FIELDS / sizeof ATTR_FIELDS[0]))

static PyObject *default_value(int type) {
    switch (type) {
    case T_STRING: return PyUnicode_FromStringAndSize("", 0);
    case T_FLOAT:
    case T_DOUBLE: return PyFloat_FromDouble(0.0);
    case T_BOOL: Py_RETURN_FALSE;
    default: return PyLong_FromLong(0);
    }
}

static int read_attr(Span s, PyObject **out) {
    /* first its name and type, then the one field its type says holds the value */
    PyObject *name = NULL, *type_value = NULL, *value = NULL;
    Span walk = s;
    uint64_t number;
    int wire, result = 0;
    while (walk.pos < walk.end) {
        if ((result = tag(&walk, &number, &wire)) != 1)
            goto done;
        if (number == 1)
            result = wire == LEN ? text(&walk, &name) : 0;
        else if (number == 2)
            result = singular(&walk, wire, T_INT64, &type_value);
        else
            result = skip(&walk, wire);
        if (result != 1)
            goto done;
    }
    result = 0;
    if (name == NULL || type_value == NULL)
        goto done;
    long long attr_type = PyLong_AsLongLong(type_value);
    if (attr_type < 0 || attr_type >= N_ATTR_TYPES)
        goto done; /* (SCALAR, SCALARS, or a value nobody defined) */
    int field = ATTR_FIELDS[attr_type].number, type = ATTR_FIELDS[attr_type].type;
    int repeated = ATTR_FIELDS[attr_type].repeated;
    if (repeated && (value = PyList_New(0)) == NULL) {
        result = -1;
        goto done;
    }
    walk = s;
    while (walk.pos < walk.end) {
        if ((result = tag(&walk, &number, &wire)) != 1)
            goto done;
        if ((int)number != field)
            result = skip(&walk, wire);
        else if (repeated)
            result = append_scalars(&walk, wire, type, value);
        else
            result = singular(&walk, wire, type, &value);
        if (result != 1)
            goto done;
    }
    if (value == NULL && (value = default_value(type)) == NULL) {
        result = -1;
        goto done;
    }
    *out = Py_BuildValue("(OOO)", name, type_value, value);
    result = *out == NULL ? -1 : 1;
done:
    Py_XDECREF(name), Py_XDECREF(type_value), Py_XDECREF(value);
    return result;
}

/* --- OpDesc -------------------------------------------------------------------------- */
/* an OpDesc.Var appended to `slots` as (parameter, (argument, ...)) */
static int read_slot(Span s, PyObject *slots) {
    PyObject *parameter = NULL, *arguments = PyList_New(0), *item = NULL;
    int result = arguments == NULL ? -1 : 1;
    uint64_t number;
    int wire;
    while (result == 1 && s.pos < s.end) {
        if ((result = tag(&s, &number, &wire)) != 1)
            break;
        if (number == 1)
            result = singular(&s, wire, T_STRING, &parameter);
        else if (number == 2)
            result = append_scalars(&s, wire, T_STRING, arguments);
        else
            result = skip(&s, wire);
    }
    if (result == 1 && parameter == NULL)
        result = 0;
    if (result == 1) {
        PyObject *names = PyList_AsTuple(arguments);
        item = names == NULL ? NULL : PyTuple_Pack(2, parameter, names);
        Py_XDECREF(names);
        result = item == NULL || PyList_Append(slots, item) < 0 ? -1 : 1;
    }
    Py_XDECREF(parameter), Py_XDECREF(arguments), Py_XDECREF(item);
    return result;
}

static int append_record(PyObject *list, PyObject *record) {
    if (record == NULL)
        return -1;
    int failed = PyList_Append(list, record);
    Py_DECREF(record);
    return failed ? -1 : 1;
}

static int read_op(Span s, PyObject *ops) {
    PyObject *type = NULL, *inputs = PyList_New(0), *outputs = PyList_New(0),
             *attrs = PyList_New(0), *is_target = NULL;
    int result = inputs && outputs && attrs ? 1 : -1;
    uint64_t number;
    int wire;
    while (result == 1 && s.pos < s.end) {
        if ((result = tag(&s, &number, &wire)) != 1)
            break;
        Span inner;
        if (number == 1 || number == 2 || number == 4) {
            if (wire != LEN) {
                result = 0;
            } else if ((result = sub(&s, &inner)) == 1) {
                if (number == 4) {
                    PyObject *attr = NULL;
                    result = read_attr(inner, &attr);
                    if (result == 1)
                        result = append_record(attrs, attr);
                } else {
                    result = read_slot(inner, number == 1 ? inputs : outputs);
                }
            }
        } else if (number == 3) {
            result = singular(&s, wire, T_STRING, &type);
        } else if (number == 5) {
            result = singular(&s, wire, T_BOOL, &is_target);
        } else {
            result = skip(&s, wire);
        }
    }
    if (result == 1 && type == NULL)
        result = 0;
    if (result == 1)
        result = append_record(ops, Py_BuildValue("(OOOOO)", type, inputs, outputs, attrs,
                                                  is_target ? is_target : Py_False));
    Py_XDECREF(type), Py_XDECREF(inputs), Py_XDECREF(outputs), Py_XDECREF(attrs);
    Py_XDECREF(is_target);
    return result;
}

/* --- VarDesc ------------------------------------------------------------------------- */
/* VarType.TensorDesc: its data type and dims */
static int read_tensor(Span s, PyObject **data_type, PyObject *dims) {
    uint64_t number;
    int wire;
    while (s.pos < s.end) {
        TRY(tag(&s, &number, &wire));
        if (number == 1)
            TRY(singular(&s, wire, T_INT64, data_type));
        else if (number == 2)
            TRY(append_scalars(&s, wire, T_INT64, dims));
        else
            TRY(skip(&s, wire));
    }
    return *data_type == NULL ? 0 : 1;
}

/* the VarType fields framework.proto defines, and the one describing each modeled kind */
static int known_var_type_field(uint64_t number) {
    return number >= 1 && number <= 12 && number != 6;
}

static int kind_field(long long kind) {
    return kind == 7 ? 3 : kind == 13 ? 4 : kind == 8 ? 2 : 0; /* LOD_TENSOR, ARRAY, ROWS */
}

/* (kind, modeled, data_type, dims, lod_level or None, bytes) of a VarType */
static int read_var_type(Span s, PyObject **out) {
    PyObject *kind = NULL, *data_type = NULL, *dims = PyList_New(0), *lod_level = NULL,
             *dims_tuple = NULL;
    if (dims == NULL)
        return -1;
    Span walk = s, description = {NULL, 0, 0};
    uint64_t number;
    int wire, result = 1, others = 0, described = 0;
    /* first the kind, then its description (a field given twice: left to protobuf) */
    while (result == 1 && walk.pos < walk.end) {
        if ((result = tag(&walk, &number, &wire)) != 1)
            break;
        if (number == 1) {
            result = singular(&walk, wire, T_INT64, &kind);
        } else if (number >= 2 && number <= 4) {
            Span inner;
            if (wire != LEN || (result = sub(&walk, &inner)) != 1 || (described & (1 << number))) {
                result = result == -1 ? -1 : 0; /* (given twice: protobuf merges them) */
                break;
            }
            if (described)
                others = 1; /* (two kinds' descriptions: not a variable this module models) */
            described |= 1 << number;
            description = inner;
        } else {
            if (known_var_type_field(number))
                others = 1;
            result = skip(&walk, wire);
        }
    }
    if (result == 1 && kind == NULL)
        result = 0;
    int modeled = 0;
    if (result == 1 && !others && described) {
        long long kind_number = PyLong_AsLongLong(kind);
        modeled = described == (1 << kind_field(kind_number));
    }
    if (result == 1 && modeled) {
        if (described == (1 << 2)) {
            result = read_tensor(description, &data_type, dims);
        } else { /* LoDTensorDesc / LoDTensorArrayDesc: tensor = 1, lod_level = 2 */
            int tensors = 0;
            while (result == 1 && description.pos < description.end) {
                if ((result = tag(&description, &number, &wire)) != 1)
                    break;
                Span inner;
                if (number == 1) {
                    result = wire == LEN ? sub(&description, &inner) : 0;
                    if (result == 1 && tensors++)
                        result = 0; /* (given twice: protobuf merges them) */
                    if (result == 1)
                        result = read_tensor(inner, &data_type, dims);
                } else if (number == 2) {
                    result = singular(&description, wire, T_INT32, &lod_level);
                } else {
                    result = skip(&description, wire);
                }
            }
            if (result == 1 && !tensors)
                result = 0;
        }
    }
    if (result == 1 && (dims_tuple = PyList_AsTuple(dims)) == NULL)
        result = -1;
    if (result == 1) {
        PyObject *raw = Py_None;
        if (modeled)
            Py_INCREF(raw);
        else
            raw = PyBytes_FromStringAndSize((const char *)s.data + s.pos, s.end - s.pos);
        *out = raw == NULL ? NULL : Py_BuildValue("(OOOOON)", kind, modeled ? Py_True : Py_False,
                                                  data_type ? data_type : Py_None, dims_tuple,
                                                  lod_level ? lod_level : Py_None, raw);
        result = *out == NULL ? -1 : 1;
    }
    Py_XDECREF(kind), Py_XDECREF(data_type), Py_XDECREF(dims), Py_XDECREF(lod_level);
    Py_XDECREF(dims_tuple);
    return result;
}

static const char *VAR_FLAGS[] = {"persistable", "need_check_feed", "is_parameter",
                                  "stop_gradient"}; /* fields 3-6 */

static int read_var(Span s, PyObject *vars) {
    PyObject *name = NULL, *var_type = NULL, *flags = PyDict_New(), *attrs = PyList_New(0);
    int result = flags && attrs ? 1 : -1;
    uint64_t number;
    int wire;
    while (result == 1 && s.pos < s.end) {
        if ((result = tag(&s, &number, &wire)) != 1)
            break;
        Span inner;
        if (number == 1) {
            result = singular(&s, wire, T_STRING, &name);
        } else if (number == 2) {
            result = wire == LEN && var_type == NULL ? sub(&s, &inner) : 0;
            if (result == 1)
                result = read_var_type(inner, &var_type);
        } else if (number >= 3 && number <= 6) {
            PyObject *flag = NULL;
            result = singular(&s, wire, T_BOOL, &flag);
            if (result == 1 && PyDict_SetItemString(flags, VAR_FLAGS[number - 3], flag) < 0)
                result = -1;
            Py_XDECREF(flag);
        } else if (number == 7) {
            result = wire == LEN ? sub(&s, &inner) : 0;
            if (result == 1)
                result = append_record(attrs, PyBytes_FromStringAndSize(
                    (const char *)inner.data + inner.pos, inner.end - inner.pos));
        } else {
            result = skip(&s, wire);
        }
    }
    if (result == 1 && (name == NULL || var_type == NULL))
        result = 0;
    if (result == 1)
        result = append_record(vars, PyTuple_Pack(4, name, flags, var_type, attrs));
    Py_XDECREF(name), Py_XDECREF(var_type), Py_XDECREF(flags), Py_XDECREF(attrs);
    return result;
}

/* --- BlockDesc, ProgramDesc ---------------------------------------------------------- */
static int read_block(Span s, PyObject *blocks) {
    PyObject *idx = NULL, *parent = NULL, *forward = NULL, *vars = PyList_New(0),
             *ops = PyList_New(0);
    int result = vars && ops ? 1 : -1;
    uint64_t number;
    int wire;
    while (result == 1 && s.pos < s.end) {
        if ((result = tag(&s, &number, &wire)) != 1)
            break;
        Span inner;
        if (number == 1)
            result = singular(&s, wire, T_INT32, &idx);
        else if (number == 2)
            result = singular(&s, wire, T_INT32, &parent);
        else if (number == 5)
            result = singular(&s, wire, T_INT32, &forward);
        else if (number == 3 || number == 4) {
            result = wire == LEN ? sub(&s, &inner) : 0;
            if (result == 1)
                result = number == 3 ? read_var(inner, vars) : read_op(inner, ops);
        } else
            result = skip(&s, wire);
    }
    if (result == 1 && (idx == NULL || parent == NULL))
        result = 0;
    if (result == 1)
        result = append_record(blocks, Py_BuildValue("(OOOOO)", idx, parent,
                                                     forward ? forward : Py_None, vars, ops));
    Py_XDECREF(idx), Py_XDECREF(parent), Py_XDECREF(forward), Py_XDECREF(vars);
    Py_XDECREF(ops);
    return result;
}

/* a message holding one int `field` (Version: int64 1; OpVersion: int32 1) */
static int read_version(Span s, int type, PyObject **out) {
    uint64_t number;
    int wire;
    while (s.pos < s.end) {
        TRY(tag(&s, &number, &wire));
        TRY(number == 1 ? singular(&s, wire, type, out) : skip(&s, wire));
    }
    if (*out == NULL && (*out = PyLong_FromLong(0)) == NULL)
        return -1;
    return 1;
}

/* OpVersionMap: its pairs (op_name, version) appended to `pairs` */
static int read_op_versions(Span s, PyObject *pairs) {
    uint64_t number;
    int wire;
    while (s.pos < s.end) {
        TRY(tag(&s, &number, &wire));
        if (number != 1) {
            TRY(skip(&s, wire));
            continue;
        }
        Span pair;
        if (wire != LEN)
            return 0;
        TRY(sub(&s, &pair));
        PyObject *name = NULL, *version = NULL;
        int result = 1, versions = 0;
        while (result == 1 && pair.pos < pair.end) {
            if ((result = tag(&pair, &number, &wire)) != 1)
                break;
            Span inner;
            if (number == 1)
                result = singular(&pair, wire, T_STRING, &name);
            else if (number == 2) {
                result = wire == LEN && !versions++ ? sub(&pair, &inner) : 0;
                if (result == 1)
                    result = read_version(inner, T_INT32, &version);
            } else
                result = skip(&pair, wire);
        }
        if (result == 1 && (name == NULL || version == NULL))
            result = 0;
        if (result == 1)
            result = append_record(pairs, PyTuple_Pack(2, name, version));
        Py_XDECREF(name), Py_XDECREF(version);
        if (result != 1)
            return result;
    }
    return 1;
}

static PyObject *read_program(PyObject *module, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Span s = {(const unsigned char *)view.buf, 0, view.len};
    PyObject *blocks = PyList_New(0), *version = NULL, *op_versions = NULL, *out = NULL;
    int result = blocks ? 1 : -1;
    uint64_t number;
    int wire;
    while (result == 1 && s.pos < s.end) {
        if ((result = tag(&s, &number, &wire)) != 1)
            break;
        Span inner;
        if (number == 1 || number == 4 || number == 5) {
            result = wire == LEN ? sub(&s, &inner) : 0;
            if (result != 1)
                break;
            if (number == 1) {
                result = read_block(inner, blocks);
            } else if (number == 4) { /* (given twice: protobuf merges them) */
                result = version == NULL ? read_version(inner, T_INT64, &version) : 0;
            } else if (op_versions == NULL) {
                result = (op_versions = PyList_New(0)) == NULL
                             ? -1 : read_op_versions(inner, op_versions);
            } else {
                result = 0;
            }
        } else {
            result = skip(&s, wire);
        }
    }
    if (result == 1)
        out = Py_BuildValue("(OOO)", blocks, version ? version : Py_None,
                            op_versions ? op_versions : Py_None);
    else if (result == 0) {
        Py_INCREF(Py_None);
        out = Py_None;
    }
    Py_XDECREF(blocks), Py_XDECREF(version), Py_XDECREF(op_versions);
    PyBuffer_Release(&view);
    return out;
}

/* read_tensor_desc(data) -> (data_type, dims) | None: a VarType.TensorDesc alone (the
 * header of each tensor in a parameter file) */
static PyObject *read_tensor_desc(PyObject *module, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Span s = {(const unsigned char *)view.buf, 0, view.len};
    PyObject *data_type = NULL, *dims = PyList_New(0), *out = NULL;
    int result = dims == NULL ? -1 : read_tensor(s, &data_type, dims);
    if (result == 1) {
        PyObject *shape = PyList_AsTuple(dims);
        out = shape == NULL ? NULL : PyTuple_Pack(2, data_type, shape);
        Py_XDECREF(shape);
    } else if (result == 0) {
        Py_INCREF(Py_None);
        out = Py_None;
    }
    Py_XDECREF(data_type), Py_XDECREF(dims);
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"read_tensor_desc", read_tensor_desc, METH_O,
     "read_tensor_desc(data): a TensorDesc's (data_type, dims), or None for bytes left to "
     "protobuf's parser"},
    {"read_program", read_program, METH_O,
     "read_program(data): a ProgramDesc's records read from its bytes, or None for bytes "
     "left to protobuf's parser (see _program_reader.c)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_program_reader",
                                    "A ProgramDesc's records read from its wire bytes.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__program_reader(void) { return PyModule_Create(&module); }
