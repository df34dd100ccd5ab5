/* A ProgramDesc's records read straight from its wire bytes, and written back to them
 * (fluid_nb/framework/codec.py builds the Program from the records, and the records from
 * the Program).
 *
 * Reading or writing a protobuf message from Python costs a call into the parser's objects
 * for every field: a 5,000-op program spent most of its opening and its saving there. These
 * walk the bytes once and take or hand back plain tuples, lists and values.
 *
 * The reader reads only files the wire check (wire.py) accepted, and answers None for
 * anything it leaves to protobuf's parser: a singular message field given twice (protobuf
 * merges the two), a SCALAR attribute, a group, a wire type other than the field's, bytes
 * it cannot read. The writer writes what protobuf's serializer writes for the same message
 * (fields in number order, repeated numbers one by one, as proto2 does), and answers None
 * for a record it leaves to protobuf (a SCALAR attribute, a value not of its field's Python
 * type or out of its range), which then writes it or says what is wrong. The field numbers
 * are framework.proto's.
 *
 *   read_program(data) -> (blocks, version or None, op_version_map pairs or None) | None
 *   read_tensor_desc(data) -> (data_type, dims) | None: a parameter file's tensor header
 *   write_program(records) -> bytes | None
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
#include <float.h>
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

/* Each message is read field by field: `each_field` hands every field to its message's
 * reader, which reads the fields it knows into its record and skips the others. */
typedef int (*FieldReader)(void *record, Span *s, uint64_t number, int wire);

static int each_field(Span s, FieldReader read, void *record) {
    uint64_t number;
    int wire;
    while (s.pos < s.end) {
        TRY(tag(&s, &number, &wire));
        TRY(read(record, &s, number, wire));
    }
    return 1;
}

/* a message field's bytes (anything else where a message is due: left to protobuf) */
static int message_bytes(Span *s, int wire, Span *out) {
    return wire == LEN ? sub(s, out) : 0;
}

static int append_record(PyObject *list, PyObject *record) {
    if (record == NULL)
        return -1;
    int failed = PyList_Append(list, record);
    Py_DECREF(record);
    return failed ? -1 : 1;
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

typedef struct {
    PyObject *name, *type;
} AttrHead;

static int attr_head_field(void *record, Span *s, uint64_t number, int wire) {
    AttrHead *head = record;
    if (number == 1)
        return singular(s, wire, T_STRING, &head->name);
    if (number == 2)
        return singular(s, wire, T_INT64, &head->type);
    return skip(s, wire);
}

typedef struct {
    int number, type, repeated;
    PyObject *value;
} AttrValue;

static int attr_value_field(void *record, Span *s, uint64_t number, int wire) {
    AttrValue *value = record;
    if ((int)number != value->number)
        return skip(s, wire);
    return value->repeated ? append_scalars(s, wire, value->type, value->value)
                           : singular(s, wire, value->type, &value->value);
}

/* (name, AttrType, value) appended to `attrs`: first its name and type, then the one field
 * its type says holds the value (absent: the field's default) */
static int read_attr(Span s, PyObject *attrs) {
    AttrHead head = {NULL, NULL};
    AttrValue value = {0, 0, 0, NULL};
    int result = each_field(s, attr_head_field, &head);
    if (result == 1 && (head.name == NULL || head.type == NULL))
        result = 0;
    if (result == 1) {
        long long attr_type = PyLong_AsLongLong(head.type);
        if (attr_type < 0 || attr_type >= N_ATTR_TYPES) {
            result = 0; /* (SCALAR, SCALARS, or a value nobody defined) */
        } else {
            value.number = ATTR_FIELDS[attr_type].number;
            value.type = ATTR_FIELDS[attr_type].type;
            value.repeated = ATTR_FIELDS[attr_type].repeated;
            if (value.repeated && (value.value = PyList_New(0)) == NULL)
                result = -1;
        }
    }
    if (result == 1)
        result = each_field(s, attr_value_field, &value);
    if (result == 1 && value.value == NULL && (value.value = default_value(value.type)) == NULL)
        result = -1;
    if (result == 1)
        result = append_record(attrs, PyTuple_Pack(3, head.name, head.type, value.value));
    Py_XDECREF(head.name), Py_XDECREF(head.type), Py_XDECREF(value.value);
    return result;
}

/* --- OpDesc -------------------------------------------------------------------------- */
typedef struct {
    PyObject *parameter, *arguments;
} Slot;

static int slot_field(void *record, Span *s, uint64_t number, int wire) {
    Slot *slot = record;
    if (number == 1)
        return singular(s, wire, T_STRING, &slot->parameter);
    if (number == 2)
        return append_scalars(s, wire, T_STRING, slot->arguments);
    return skip(s, wire);
}

/* an OpDesc.Var appended to `slots` as (parameter, (argument, ...)) */
static int read_slot(Span s, PyObject *slots) {
    Slot slot = {NULL, PyList_New(0)};
    int result = slot.arguments == NULL ? -1 : each_field(s, slot_field, &slot);
    if (result == 1 && slot.parameter == NULL)
        result = 0;
    if (result == 1) {
        PyObject *names = PyList_AsTuple(slot.arguments);
        result = names == NULL ? -1 : append_record(slots, PyTuple_Pack(2, slot.parameter, names));
        Py_XDECREF(names);
    }
    Py_XDECREF(slot.parameter), Py_XDECREF(slot.arguments);
    return result;
}

typedef struct {
    PyObject *type, *inputs, *outputs, *attrs, *is_target;
} Op;

static int op_field(void *record, Span *s, uint64_t number, int wire) {
    Op *op = record;
    Span inner;
    switch (number) {
    case 1:
    case 2:
    case 4:
        TRY(message_bytes(s, wire, &inner));
        return number == 4 ? read_attr(inner, op->attrs)
                           : read_slot(inner, number == 1 ? op->inputs : op->outputs);
    case 3: return singular(s, wire, T_STRING, &op->type);
    case 5: return singular(s, wire, T_BOOL, &op->is_target);
    default: return skip(s, wire);
    }
}

static int read_op(Span s, PyObject *ops) {
    Op op = {NULL, PyList_New(0), PyList_New(0), PyList_New(0), NULL};
    int result = op.inputs && op.outputs && op.attrs ? each_field(s, op_field, &op) : -1;
    if (result == 1 && op.type == NULL)
        result = 0;
    if (result == 1)
        result = append_record(ops, Py_BuildValue("(OOOOO)", op.type, op.inputs, op.outputs,
                                                  op.attrs, op.is_target ? op.is_target
                                                                         : Py_False));
    Py_XDECREF(op.type), Py_XDECREF(op.inputs), Py_XDECREF(op.outputs), Py_XDECREF(op.attrs);
    Py_XDECREF(op.is_target);
    return result;
}

/* --- VarDesc ------------------------------------------------------------------------- */
typedef struct {
    PyObject *data_type, *dims;
} Tensor;

static int tensor_field(void *record, Span *s, uint64_t number, int wire) {
    Tensor *tensor = record;
    if (number == 1)
        return singular(s, wire, T_INT64, &tensor->data_type);
    if (number == 2)
        return append_scalars(s, wire, T_INT64, tensor->dims);
    return skip(s, wire);
}

/* VarType.TensorDesc: its data type and dims */
static int read_tensor(Span s, Tensor *tensor) {
    TRY(each_field(s, tensor_field, tensor));
    return tensor->data_type == NULL ? 0 : 1;
}

typedef struct {
    Tensor tensor;
    int tensors;
    PyObject *lod_level;
} LoDTensorDesc; /* (and LoDTensorArrayDesc: the same fields) */

static int lod_tensor_field(void *record, Span *s, uint64_t number, int wire) {
    LoDTensorDesc *desc = record;
    Span inner;
    if (number == 1) {
        TRY(message_bytes(s, wire, &inner));
        return desc->tensors++ ? 0 : read_tensor(inner, &desc->tensor); /* (twice: merged) */
    }
    if (number == 2)
        return singular(s, wire, T_INT32, &desc->lod_level);
    return skip(s, wire);
}

/* the VarType fields framework.proto defines, and the one describing each modeled kind */
static int known_var_type_field(uint64_t number) {
    return number >= 1 && number <= 12 && number != 6;
}

static int kind_field(long long kind) {
    return kind == 7 ? 3 : kind == 13 ? 4 : kind == 8 ? 2 : 0; /* LOD_TENSOR, ARRAY, ROWS */
}

typedef struct {
    PyObject *kind;
    Span description;
    int described, others; /* (described: a bit per description field given) */
} VarTypeHead;

static int var_type_field(void *record, Span *s, uint64_t number, int wire) {
    VarTypeHead *head = record;
    if (number == 1)
        return singular(s, wire, T_INT64, &head->kind);
    if (number >= 2 && number <= 4) {
        Span inner;
        TRY(message_bytes(s, wire, &inner));
        if (head->described & (1 << number))
            return 0; /* (given twice: protobuf merges them) */
        if (head->described)
            head->others = 1; /* (two kinds' descriptions: not a variable this module models) */
        head->described |= 1 << number;
        head->description = inner;
        return 1;
    }
    if (known_var_type_field(number))
        head->others = 1;
    return skip(s, wire);
}

/* (kind, modeled, data_type, dims, lod_level or None, the bytes unless modeled) */
static int read_var_type(Span s, PyObject **out) {
    VarTypeHead head = {NULL, {NULL, 0, 0}, 0, 0};
    LoDTensorDesc desc = {{NULL, PyList_New(0)}, 0, NULL};
    PyObject *dims = NULL, *raw = NULL;
    int modeled = 0;
    int result = desc.tensor.dims == NULL ? -1 : each_field(s, var_type_field, &head);
    if (result == 1 && head.kind == NULL)
        result = 0;
    if (result == 1 && !head.others)
        modeled = head.described == 1 << kind_field(PyLong_AsLongLong(head.kind));
    if (result == 1 && modeled) {
        if (head.described == 1 << 2) { /* selected_rows: a TensorDesc itself */
            result = read_tensor(head.description, &desc.tensor);
        } else {
            result = each_field(head.description, lod_tensor_field, &desc);
            if (result == 1 && !desc.tensors)
                result = 0;
        }
    }
    if (result == 1 && (dims = PyList_AsTuple(desc.tensor.dims)) == NULL)
        result = -1;
    if (result == 1) {
        raw = modeled ? (Py_INCREF(Py_None), Py_None)
                      : PyBytes_FromStringAndSize((const char *)s.data + s.pos, s.end - s.pos);
        *out = raw == NULL ? NULL : Py_BuildValue(
            "(OOOOOO)", head.kind, modeled ? Py_True : Py_False,
            desc.tensor.data_type ? desc.tensor.data_type : Py_None, dims,
            desc.lod_level ? desc.lod_level : Py_None, raw);
        result = *out == NULL ? -1 : 1;
    }
    Py_XDECREF(head.kind), Py_XDECREF(desc.tensor.data_type), Py_XDECREF(desc.tensor.dims);
    Py_XDECREF(desc.lod_level), Py_XDECREF(dims), Py_XDECREF(raw);
    return result;
}

static const char *VAR_FLAGS[] = {"persistable", "need_check_feed", "is_parameter",
                                  "stop_gradient"}; /* fields 3-6 */

typedef struct {
    PyObject *name, *var_type, *flags, *attrs;
} Var;

static int var_field(void *record, Span *s, uint64_t number, int wire) {
    Var *var = record;
    Span inner;
    if (number == 1)
        return singular(s, wire, T_STRING, &var->name);
    if (number == 2) {
        TRY(message_bytes(s, wire, &inner));
        return var->var_type ? 0 : read_var_type(inner, &var->var_type); /* (twice: merged) */
    }
    if (number >= 3 && number <= 6) {
        PyObject *flag = NULL;
        TRY(singular(s, wire, T_BOOL, &flag));
        int failed = PyDict_SetItemString(var->flags, VAR_FLAGS[number - 3], flag);
        Py_DECREF(flag);
        return failed ? -1 : 1;
    }
    if (number == 7) {
        TRY(message_bytes(s, wire, &inner));
        return append_record(var->attrs, PyBytes_FromStringAndSize(
            (const char *)inner.data + inner.pos, inner.end - inner.pos));
    }
    return skip(s, wire);
}

static int read_var(Span s, PyObject *vars) {
    Var var = {NULL, NULL, PyDict_New(), PyList_New(0)};
    int result = var.flags && var.attrs ? each_field(s, var_field, &var) : -1;
    if (result == 1 && (var.name == NULL || var.var_type == NULL))
        result = 0;
    if (result == 1)
        result = append_record(vars, PyTuple_Pack(4, var.name, var.flags, var.var_type,
                                                  var.attrs));
    Py_XDECREF(var.name), Py_XDECREF(var.var_type), Py_XDECREF(var.flags);
    Py_XDECREF(var.attrs);
    return result;
}

/* --- BlockDesc, ProgramDesc ---------------------------------------------------------- */
typedef struct {
    PyObject *idx, *parent, *forward, *vars, *ops;
} Block;

static int block_field(void *record, Span *s, uint64_t number, int wire) {
    Block *block = record;
    Span inner;
    switch (number) {
    case 1: return singular(s, wire, T_INT32, &block->idx);
    case 2: return singular(s, wire, T_INT32, &block->parent);
    case 5: return singular(s, wire, T_INT32, &block->forward);
    case 3:
    case 4:
        TRY(message_bytes(s, wire, &inner));
        return number == 3 ? read_var(inner, block->vars) : read_op(inner, block->ops);
    default: return skip(s, wire);
    }
}

static int read_block(Span s, PyObject *blocks) {
    Block block = {NULL, NULL, NULL, PyList_New(0), PyList_New(0)};
    int result = block.vars && block.ops ? each_field(s, block_field, &block) : -1;
    if (result == 1 && (block.idx == NULL || block.parent == NULL))
        result = 0;
    if (result == 1)
        result = append_record(blocks, Py_BuildValue(
            "(OOOOO)", block.idx, block.parent, block.forward ? block.forward : Py_None,
            block.vars, block.ops));
    Py_XDECREF(block.idx), Py_XDECREF(block.parent), Py_XDECREF(block.forward);
    Py_XDECREF(block.vars), Py_XDECREF(block.ops);
    return result;
}

/* Version (int64 version = 1) and OpVersion (int32 version = 1) */
typedef struct {
    int type;
    PyObject *version;
} Version;

static int version_field(void *record, Span *s, uint64_t number, int wire) {
    Version *version = record;
    return number == 1 ? singular(s, wire, version->type, &version->version) : skip(s, wire);
}

static int read_version(Span s, int type, PyObject **out) {
    Version version = {type, NULL};
    int result = each_field(s, version_field, &version);
    if (result == 1 && version.version == NULL && (version.version = PyLong_FromLong(0)) == NULL)
        result = -1;
    if (result == 1)
        *out = version.version;
    else
        Py_XDECREF(version.version);
    return result;
}

typedef struct {
    PyObject *name, *version;
} OpVersionPair;

static int op_version_pair_field(void *record, Span *s, uint64_t number, int wire) {
    OpVersionPair *pair = record;
    Span inner;
    if (number == 1)
        return singular(s, wire, T_STRING, &pair->name);
    if (number == 2) {
        TRY(message_bytes(s, wire, &inner));
        return pair->version ? 0 : read_version(inner, T_INT32, &pair->version); /* (merged) */
    }
    return skip(s, wire);
}

/* an OpVersionMap's pairs: (op_name, version) appended to the list `record` */
static int op_version_map_field(void *record, Span *s, uint64_t number, int wire) {
    Span inner;
    if (number != 1)
        return skip(s, wire);
    TRY(message_bytes(s, wire, &inner));
    OpVersionPair pair = {NULL, NULL};
    int result = each_field(inner, op_version_pair_field, &pair);
    if (result == 1 && (pair.name == NULL || pair.version == NULL))
        result = 0;
    if (result == 1)
        result = append_record(record, PyTuple_Pack(2, pair.name, pair.version));
    Py_XDECREF(pair.name), Py_XDECREF(pair.version);
    return result;
}

typedef struct {
    PyObject *blocks, *version, *op_versions;
} ProgramRecord;

static int program_field(void *record, Span *s, uint64_t number, int wire) {
    ProgramRecord *program = record;
    Span inner;
    if (number != 1 && number != 4 && number != 5)
        return skip(s, wire);
    TRY(message_bytes(s, wire, &inner));
    if (number == 1)
        return read_block(inner, program->blocks);
    if (number == 4) /* (given twice: protobuf merges them) */
        return program->version ? 0 : read_version(inner, T_INT64, &program->version);
    if (program->op_versions)
        return 0;
    if ((program->op_versions = PyList_New(0)) == NULL)
        return -1;
    return each_field(inner, op_version_map_field, program->op_versions);
}

static PyObject *read_program(PyObject *module, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Span s = {(const unsigned char *)view.buf, 0, view.len};
    ProgramRecord program = {PyList_New(0), NULL, NULL};
    PyObject *out = NULL;
    int result = program.blocks ? each_field(s, program_field, &program) : -1;
    if (result == 1) {
        out = Py_BuildValue("(OOO)", program.blocks, program.version ? program.version : Py_None,
                            program.op_versions ? program.op_versions : Py_None);
    } else if (result == 0) {
        Py_INCREF(Py_None);
        out = Py_None;
    }
    Py_XDECREF(program.blocks), Py_XDECREF(program.version), Py_XDECREF(program.op_versions);
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
    Tensor tensor = {NULL, PyList_New(0)};
    PyObject *out = NULL;
    int result = tensor.dims == NULL ? -1 : read_tensor(s, &tensor);
    if (result == 1) {
        PyObject *dims = PyList_AsTuple(tensor.dims);
        out = dims == NULL ? NULL : PyTuple_Pack(2, tensor.data_type, dims);
        Py_XDECREF(dims);
    } else if (result == 0) {
        Py_INCREF(Py_None);
        out = Py_None;
    }
    Py_XDECREF(tensor.data_type), Py_XDECREF(tensor.dims);
    PyBuffer_Release(&view);
    return out;
}


/* --- writing ------------------------------------------------------------------------- */
typedef struct {
    char *data;
    Py_ssize_t size, capacity;
} Buffer;

static int grow(Buffer *b, Py_ssize_t more) {
    if (b->size + more <= b->capacity)
        return 1;
    Py_ssize_t capacity = b->capacity ? b->capacity : 4096;
    while (capacity < b->size + more)
        capacity *= 2;
    char *data = PyMem_Realloc(b->data, capacity);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data, b->capacity = capacity;
    return 1;
}

static int put(Buffer *b, const void *bytes, Py_ssize_t size) {
    TRY(grow(b, size));
    memcpy(b->data + b->size, bytes, size);
    b->size += size;
    return 1;
}

static int put_varint(Buffer *b, uint64_t value) {
    unsigned char bytes[10];
    int n = 0;
    do {
        bytes[n] = value & 0x7F;
        value >>= 7;
        bytes[n++] |= value ? 0x80 : 0;
    } while (value);
    return put(b, bytes, n);
}

static int put_tag(Buffer *b, int number, int wire) {
    return put_varint(b, (uint64_t)number << 3 | wire);
}

/* a message field: begin_message writes its tag and makes room for a one-byte length;
 * end_message writes the length, moving the body when it needs more bytes */
static int begin_message(Buffer *b, int number, Py_ssize_t *body) {
    TRY(put_tag(b, number, LEN));
    TRY(grow(b, 1));
    *body = ++b->size;
    return 1;
}

static int end_message(Buffer *b, Py_ssize_t body) {
    uint64_t length = (uint64_t)(b->size - body);
    int extra = 0;
    for (uint64_t rest = length >> 7; rest; rest >>= 7)
        extra++;
    if (extra) {
        TRY(grow(b, extra));
        memmove(b->data + body + extra, b->data + body, (size_t)length);
        b->size += extra;
    }
    Py_ssize_t at = body - 1;
    do {
        unsigned char byte = length & 0x7F;
        length >>= 7;
        b->data[at++] = (char)(byte | (length ? 0x80 : 0));
    } while (length);
    return 1;
}

static int put_text(Buffer *b, int number, PyObject *text) {
    Py_ssize_t size;
    const char *utf8 = PyUnicode_CheckExact(text) ? PyUnicode_AsUTF8AndSize(text, &size) : NULL;
    if (utf8 == NULL) {
        PyErr_Clear(); /* (not a str, or one with lone surrogates: protobuf says which) */
        return 0;
    }
    TRY(put_tag(b, number, LEN));
    TRY(put_varint(b, (uint64_t)size));
    return put(b, utf8, size);
}

/* one value of protobuf type `type` as field `number`; 0 for a value protobuf should judge */
static int put_scalar(Buffer *b, int number, int type, PyObject *value) {
    if (type == T_STRING)
        return put_text(b, number, value);
    if (type == T_BOOL) {
        if (value != Py_True && value != Py_False)
            return 0;
        TRY(put_tag(b, number, VARINT));
        return put_varint(b, value == Py_True);
    }
    if (type == T_FLOAT || type == T_DOUBLE) {
        if (!PyFloat_CheckExact(value))
            return 0;
        double real = PyFloat_AS_DOUBLE(value);
        uint64_t bits = 0;
        if (type == T_FLOAT) {
            if (real == real && (real > FLT_MAX || real < -FLT_MAX) && real - real == 0)
                return 0; /* (a finite double past float's range) */
            float single = (float)real;
            uint32_t word;
            memcpy(&word, &single, sizeof word);
            bits = word;
        } else {
            memcpy(&bits, &real, sizeof bits);
        }
        TRY(put_tag(b, number, type == T_FLOAT ? I32 : I64));
        unsigned char bytes[8];
        for (int i = 0; i < 8; i++)
            bytes[i] = (unsigned char)(bits >> (8 * i));
        return put(b, bytes, type == T_FLOAT ? 4 : 8);
    }
    if (!PyLong_Check(value))
        return 0;
    int overflow;
    long long integer = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (integer == -1 && PyErr_Occurred())
        return -1;
    if (overflow || (type == T_INT32 && (integer < INT32_MIN || integer > INT32_MAX)))
        return 0;
    TRY(put_tag(b, number, VARINT));
    return put_varint(b, (uint64_t)integer);
}

/* each item of a list or tuple as field `number` (proto2: one field per value) */
static int put_each(Buffer *b, int number, int type, PyObject *values) {
    if (!PyList_CheckExact(values) && !PyTuple_CheckExact(values))
        return 0;
    PyObject *items = PySequence_Fast(values, "");
    if (items == NULL)
        return -1;
    int result = 1;
    for (Py_ssize_t i = 0; result == 1 && i < PySequence_Fast_GET_SIZE(items); i++)
        result = put_scalar(b, number, type, PySequence_Fast_ITEMS(items)[i]);
    Py_DECREF(items);
    return result;
}

/* `record` as a tuple of `size` items into `items` (0 for another shape) */
static int unpack(PyObject *record, Py_ssize_t size, PyObject ***items) {
    if (!PyTuple_CheckExact(record) || PyTuple_GET_SIZE(record) != size)
        return 0;
    *items = &PyTuple_GET_ITEM(record, 0);
    return 1;
}

static int put_list(Buffer *b, int number, PyObject *records,
                    int (*put_record)(Buffer *, PyObject *)) {
    if (!PyList_CheckExact(records))
        return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(records); i++) {
        Py_ssize_t body;
        TRY(begin_message(b, number, &body));
        TRY(put_record(b, PyList_GET_ITEM(records, i)));
        TRY(end_message(b, body));
    }
    return 1;
}

static int put_attr(Buffer *b, PyObject *record) {
    PyObject **item;
    TRY(unpack(record, 3, &item)); /* (name, AttrType, value) */
    TRY(put_text(b, 1, item[0]));
    if (!PyLong_CheckExact(item[1]))
        return 0;
    long attr_type = PyLong_AsLong(item[1]);
    if (attr_type < 0 || attr_type >= N_ATTR_TYPES) {
        PyErr_Clear();
        return 0; /* (SCALAR, SCALARS: left to protobuf) */
    }
    TRY(put_tag(b, 2, VARINT));
    TRY(put_varint(b, (uint64_t)attr_type));
    int number = ATTR_FIELDS[attr_type].number, type = ATTR_FIELDS[attr_type].type;
    return ATTR_FIELDS[attr_type].repeated ? put_each(b, number, type, item[2])
                                           : put_scalar(b, number, type, item[2]);
}

static int put_slot(Buffer *b, PyObject *record) {
    PyObject **item;
    TRY(unpack(record, 2, &item)); /* (parameter, arguments) */
    TRY(put_text(b, 1, item[0]));
    return put_each(b, 2, T_STRING, item[1]);
}

static int put_op(Buffer *b, PyObject *record) {
    PyObject **item;
    TRY(unpack(record, 5, &item)); /* (type, inputs, outputs, attrs, is_target) */
    TRY(put_list(b, 1, item[1], put_slot));
    TRY(put_list(b, 2, item[2], put_slot));
    TRY(put_text(b, 3, item[0]));
    TRY(put_list(b, 4, item[3], put_attr));
    if (item[4] == Py_True)
        TRY(put_scalar(b, 5, T_BOOL, item[4]));
    else if (item[4] != Py_False)
        return 0;
    return 1;
}

static int put_raw(Buffer *b, int number, PyObject *raw) {
    if (!PyBytes_CheckExact(raw))
        return 0;
    TRY(put_tag(b, number, LEN));
    TRY(put_varint(b, (uint64_t)PyBytes_GET_SIZE(raw)));
    return put(b, PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw));
}

/* TensorDesc: data_type = 1, dims = 2 */
static int put_tensor(Buffer *b, PyObject *data_type, PyObject *dims) {
    TRY(put_scalar(b, 1, T_INT64, data_type));
    return put_each(b, 2, T_INT64, dims);
}

static int put_var_type(Buffer *b, PyObject *record) {
    PyObject **item;
    Py_ssize_t body, inner;
    TRY(unpack(record, 6, &item)); /* (kind, modeled, data_type, dims, lod_level, bytes) */
    if (item[5] != Py_None)
        return put_raw(b, 2, item[5]);
    TRY(begin_message(b, 2, &body));
    TRY(put_scalar(b, 1, T_INT64, item[0]));
    if (item[1] == Py_True) {
        int field = kind_field(PyLong_AsLongLong(item[0]));
        if (field == 0)
            return PyErr_Occurred() ? -1 : 0;
        TRY(begin_message(b, field, &inner));
        if (field == 2) {
            TRY(put_tensor(b, item[2], item[3]));
        } else { /* LoDTensorDesc: tensor = 1, lod_level = 2 */
            Py_ssize_t tensor;
            TRY(begin_message(b, 1, &tensor));
            TRY(put_tensor(b, item[2], item[3]));
            TRY(end_message(b, tensor));
            if (item[4] != Py_None)
                TRY(put_scalar(b, 2, T_INT32, item[4]));
        }
        TRY(end_message(b, inner));
    } else if (item[1] != Py_False) {
        return 0;
    }
    return end_message(b, body);
}

static int put_var(Buffer *b, PyObject *record) {
    PyObject **item;
    TRY(unpack(record, 4, &item)); /* (name, flags, var_type, attrs) */
    TRY(put_text(b, 1, item[0]));
    TRY(put_var_type(b, item[2]));
    if (!PyDict_CheckExact(item[1]) || !PyList_CheckExact(item[3]))
        return 0;
    for (int number = 3; number <= 6; number++) {
        PyObject *flag = PyDict_GetItemString(item[1], VAR_FLAGS[number - 3]);
        if (flag != NULL)
            TRY(put_scalar(b, number, T_BOOL, flag));
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(item[3]); i++)
        TRY(put_raw(b, 7, PyList_GET_ITEM(item[3], i)));
    return 1;
}

static int put_block(Buffer *b, PyObject *record) {
    PyObject **item;
    TRY(unpack(record, 5, &item)); /* (idx, parent_idx, forward_block_idx, vars, ops) */
    TRY(put_scalar(b, 1, T_INT32, item[0]));
    TRY(put_scalar(b, 2, T_INT32, item[1]));
    TRY(put_list(b, 3, item[3], put_var));
    TRY(put_list(b, 4, item[4], put_op));
    return item[2] == Py_None ? 1 : put_scalar(b, 5, T_INT32, item[2]);
}

static int put_op_version(Buffer *b, PyObject *record) {
    PyObject **item;
    Py_ssize_t body;
    TRY(unpack(record, 2, &item)); /* (op_name, version) */
    TRY(put_text(b, 1, item[0]));
    TRY(begin_message(b, 2, &body));
    TRY(put_scalar(b, 1, T_INT32, item[1]));
    return end_message(b, body);
}

static int put_program(Buffer *b, PyObject *record) {
    PyObject **item;
    Py_ssize_t body;
    TRY(unpack(record, 3, &item)); /* (blocks, version, op_version_map pairs) */
    TRY(put_list(b, 1, item[0], put_block));
    if (item[1] != Py_None) {
        TRY(begin_message(b, 4, &body));
        TRY(put_scalar(b, 1, T_INT64, item[1]));
        TRY(end_message(b, body));
    }
    if (item[2] != Py_None) {
        TRY(begin_message(b, 5, &body));
        TRY(put_list(b, 1, item[2], put_op_version));
        TRY(end_message(b, body));
    }
    return 1;
}

static PyObject *write_program(PyObject *module, PyObject *records) {
    Buffer b = {NULL, 0, 0};
    PyObject *out = NULL;
    int result = put_program(&b, records);
    if (result == 1) {
        out = PyBytes_FromStringAndSize(b.data, b.size);
    } else if (result == 0) {
        Py_INCREF(Py_None);
        out = Py_None;
    }
    PyMem_Free(b.data);
    return out;
}

static PyMethodDef methods[] = {
    {"read_tensor_desc", read_tensor_desc, METH_O,
     "read_tensor_desc(data): a TensorDesc's (data_type, dims), or None for bytes left to "
     "protobuf's parser"},
    {"write_program", write_program, METH_O,
     "write_program(records): a ProgramDesc's bytes written from its records, or None for "
     "records left to protobuf (see _program_records.c)"},
    {"read_program", read_program, METH_O,
     "read_program(data): a ProgramDesc's records read from its bytes, or None for bytes "
     "left to protobuf's parser (see _program_records.c)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_program_records",
                                    "A ProgramDesc's records read from and written to its "
                                    "wire bytes.", -1, methods};

PyMODINIT_FUNC PyInit__program_records(void) { return PyModule_Create(&module); }
