/* The wire walk's check (fluid_nb/proto/wire.py), in C: is a file one the walk accepts?
 *
 * wire.py walks a program file's bytes field by field, in Python, and refuses what
 * protobuf's parser lets through (strings that are not UTF-8, enum values nobody defined, a
 * field with the wrong wire type, a missing required field), naming the byte offset. Opening
 * a 5,000-op program spent most of its time there, about 150 times protobuf's own parse.
 * This walk makes the same checks over the same bytes and answers only "valid" (1) or "not
 * sure" (0); wire.py walks again in Python whenever the answer is 0, so the Python walk
 * stays the one that words every refusal, and this one must only never say 1 where it
 * would refuse. It says 0 for anything unusual as well: an unknown group, a varint longer
 * than 64 bits.
 *
 * valid(data, tables, root): `tables` is a tuple with one entry per message type,
 * (fields, required): `fields` a dict field number -> (wire type, kind, sub-message table
 * index or -1, enum values (a frozenset) or None, repeated), `required` a tuple of field
 * numbers; `root` is the index of the message `data` holds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { VARINT = 0, I64 = 1, LEN = 2, SGROUP = 3, EGROUP = 4, I32 = 5 };
enum { KIND_MESSAGE = 0, KIND_STRING = 1, KIND_ENUM = 2, KIND_OTHER = 3 };
#define MAX_DEPTH 64     /* as wire.py's _MAX_DEPTH */
#define MAX_NUMBER 256   /* field numbers a table holds (framework.proto's are small) */
#define MAX_REQUIRED 16

typedef struct {
    int known, wire, kind, sub, repeated;
    PyObject *enum_values; /* borrowed from the tables tuple */
} Field;

typedef struct {
    Field by_number[MAX_NUMBER];
    int n_required;
    long required[MAX_REQUIRED];
} Table;

typedef struct {
    const unsigned char *data;
    Table *tables;
    Py_ssize_t n_tables;
} Walk;

/* A varint at *pos (before end): 1 and the value, 0 when truncated or longer than 64 bits. */
static int read_varint(const unsigned char *data, Py_ssize_t *pos, Py_ssize_t end,
                       uint64_t *value) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= end)
            return 0;
        unsigned char byte = data[(*pos)++];
        if (shift == 63 && byte > 1)
            return 0; /* bits past 64: not sure what Python's unbounded int makes of it */
        result |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) {
            *value = result;
            return 1;
        }
    }
    return 0;
}

static int field_of(Table *table, uint64_t number, Field *out) {
    if (number < MAX_NUMBER) {
        *out = table->by_number[number];
        return out->known;
    }
    return 0; /* the tables hold no such numbers (read_tables refuses them) */
}

/* 1: the value at *pos is a valid scalar of wire type `wire` (an enum: a defined value). */
static int scalar(const unsigned char *data, Py_ssize_t *pos, Py_ssize_t end, int wire,
                  Field *field) {
    if (wire == VARINT) {
        uint64_t value;
        if (!read_varint(data, pos, end, &value))
            return 0;
        if (field != NULL && field->kind == KIND_ENUM) {
            PyObject *key = PyLong_FromLongLong((long long)value); /* (as int64, as wire.py) */
            if (key == NULL)
                return -1;
            int found = PySet_Contains(field->enum_values, key);
            Py_DECREF(key);
            return found; /* (-1 on an error) */
        }
        return 1;
    }
    Py_ssize_t size = wire == I64 ? 8 : 4;
    if (end - *pos < size)
        return 0;
    *pos += size;
    return 1;
}

/* 1 when the message of table `t` in [pos, end) is valid, 0 when not sure, -1 on error. */
static int message(Walk *w, Py_ssize_t t, Py_ssize_t pos, Py_ssize_t end, int depth) {
    if (depth > MAX_DEPTH || t < 0 || t >= w->n_tables)
        return 0;
    const unsigned char *data = w->data;
    Table *table = &w->tables[t];
    int seen[MAX_REQUIRED] = {0};
    while (pos < end) {
        uint64_t tag;
        if (!read_varint(data, &pos, end, &tag))
            return 0;
        uint64_t number = tag >> 3;
        int wire = (int)(tag & 7);
        if (number == 0 || wire == 6 || wire == 7 || wire == EGROUP)
            return 0;
        Field field;
        if (!field_of(table, number, &field)) { /* an unknown field: skipped */
            if (wire == VARINT) {
                uint64_t ignored;
                if (!read_varint(data, &pos, end, &ignored))
                    return 0;
            } else if (wire == I64 || wire == I32) {
                if (scalar(data, &pos, end, wire, NULL) != 1)
                    return 0;
            } else if (wire == LEN) {
                uint64_t length;
                if (!read_varint(data, &pos, end, &length) || length > (uint64_t)(end - pos))
                    return 0;
                pos += (Py_ssize_t)length;
            } else {
                return 0; /* a group: left to wire.py */
            }
            continue;
        }
        for (int r = 0; r < table->n_required; r++)
            if ((uint64_t)table->required[r] == number)
                seen[r] = 1;
        if (wire != field.wire) {
            if (!(wire == LEN && field.repeated && field.wire != LEN))
                return 0;
            uint64_t length; /* packed scalars */
            if (!read_varint(data, &pos, end, &length) || length > (uint64_t)(end - pos))
                return 0;
            Py_ssize_t stop = pos + (Py_ssize_t)length;
            while (pos < stop) {
                int ok = scalar(data, &pos, stop, field.wire, &field);
                if (ok != 1)
                    return ok;
            }
            continue;
        }
        if (field.wire == LEN) {
            uint64_t length;
            if (!read_varint(data, &pos, end, &length) || length > (uint64_t)(end - pos))
                return 0;
            Py_ssize_t stop = pos + (Py_ssize_t)length;
            if (field.kind == KIND_MESSAGE) {
                int ok = message(w, field.sub, pos, stop, depth + 1);
                if (ok != 1)
                    return ok;
            } else if (field.kind == KIND_STRING) {
                PyObject *text = PyUnicode_DecodeUTF8((const char *)data + pos, stop - pos,
                                                      NULL);
                if (text == NULL) {
                    if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
                        return -1;
                    PyErr_Clear();
                    return 0;
                }
                Py_DECREF(text);
            }
            pos = stop;
        } else {
            int ok = scalar(data, &pos, end, wire, &field);
            if (ok != 1)
                return ok;
        }
    }
    for (int r = 0; r < table->n_required; r++)
        if (!seen[r])
            return 0;
    return 1;
}

/* The tables tuple read into C: 0, or -1 with an exception set. */
static int read_tables(PyObject *tables, Table *out, Py_ssize_t n) {
    for (Py_ssize_t t = 0; t < n; t++) {
        PyObject *entry = PyTuple_GET_ITEM(tables, t);
        PyObject *fields, *required;
        if (!PyTuple_Check(entry) || !PyArg_ParseTuple(entry, "O!O!", &PyDict_Type, &fields,
                                                       &PyTuple_Type, &required))
            return -1;
        Table *table = &out[t];
        memset(table, 0, sizeof(*table));
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(fields, &pos, &key, &value)) {
            long number = PyLong_AsLong(key);
            if (number == -1 && PyErr_Occurred())
                return -1;
            if (number <= 0 || number >= MAX_NUMBER) {
                PyErr_Format(PyExc_ValueError, "field number %ld outside 1-%d", number,
                             MAX_NUMBER - 1);
                return -1;
            }
            Field *field = &table->by_number[number];
            PyObject *enum_values;
            if (!PyTuple_Check(value) ||
                !PyArg_ParseTuple(value, "iiiOp", &field->wire, &field->kind, &field->sub,
                                  &enum_values, &field->repeated))
                return -1;
            if (field->kind == KIND_ENUM && !PyAnySet_Check(enum_values)) {
                PyErr_SetString(PyExc_TypeError, "an enum field's values must be a set");
                return -1;
            }
            field->enum_values = enum_values;
            field->known = 1;
        }
        Py_ssize_t n_required = PyTuple_GET_SIZE(required);
        if (n_required > MAX_REQUIRED) {
            PyErr_SetString(PyExc_ValueError, "too many required fields");
            return -1;
        }
        table->n_required = (int)n_required;
        for (Py_ssize_t r = 0; r < n_required; r++) {
            table->required[r] = PyLong_AsLong(PyTuple_GET_ITEM(required, r));
            if (table->required[r] == -1 && PyErr_Occurred())
                return -1;
        }
    }
    return 0;
}

static PyObject *valid(PyObject *self, PyObject *args) {
    Py_buffer view;
    PyObject *tables;
    Py_ssize_t root;
    if (!PyArg_ParseTuple(args, "y*O!n", &view, &PyTuple_Type, &tables, &root))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(tables);
    Table *read = PyMem_Calloc(n ? n : 1, sizeof(Table));
    if (read == NULL) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    int ok = read_tables(tables, read, n);
    if (ok == 0) {
        Walk walk = {(const unsigned char *)view.buf, read, n};
        ok = message(&walk, root, 0, view.len, 0);
    }
    PyMem_Free(read);
    PyBuffer_Release(&view);
    if (ok < 0)
        return NULL;
    return PyBool_FromLong(ok);
}

static PyMethodDef methods[] = {
    {"valid", valid, METH_VARARGS,
     "valid(data, tables, root): True when wire.py's walk accepts `data` as message `root` "
     "of `tables`; False when it might not (wire.py then walks it itself)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_wire",
                                    "The wire walk's check, in C.", -1, methods};

PyMODINIT_FUNC PyInit__wire(void) { return PyModule_Create(&module); }
