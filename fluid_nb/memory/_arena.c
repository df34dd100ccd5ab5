/* The memory arena's buddy allocator in C, and NumPy's data allocator over it (NEP 49).
 *
 * The same algorithm as fluid_nb/memory/buddy.py (the plain-Python model the tests compare
 * it with): chunks of chunk_size bytes from the system (posix_memalign), blocks of 2^k
 * bytes at least min_block, aligned to their size within their chunk; best fit (the
 * smallest free order, the first chunk, the lowest offset), split into buddies, merge with
 * a wholly free buddy on free; requests larger than a chunk straight to the system.
 *
 * Per chunk, unit u (min_block bytes) has free_order[u] = k when a free block of order k
 * starts there (-1 otherwise) and used_order[u] = k when a handed-out block does. The free
 * blocks of each order form a list ordered by offset (kept sorted on insert so that "lowest
 * offset" is the head, as the Python model picks it). One mutex guards the arena: NumPy may
 * allocate without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#include <numpy/arrayobject.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ORDERS 48

typedef struct {
    char *base;
    int8_t *free_order;   /* per unit: order of the free block starting here, or -1 */
    int8_t *used_order;   /* per unit: order of the handed-out block starting here, or -1 */
    int32_t *next, *prev; /* free lists by order (unit indices, -1 ends) */
    int32_t heads[MAX_ORDERS];
    size_t used_blocks;
} Chunk;

typedef struct Huge {
    char *ptr;
    size_t size;
    struct Huge *next;
} Huge;

typedef struct {
    size_t chunk_size, min_block;
    int min_order, chunk_order, orders; /* orders = chunk_order - min_order + 1 */
    size_t units;
    Chunk *chunks;
    size_t n_chunks, cap_chunks;
    Huge *huge;
    size_t used, peak, limit, system_bytes;
    uint64_t allocs, frees;
    pthread_mutex_t lock;
} Arena;

static int order_of(size_t size) { /* smallest k with 2^k >= size */
    int k = 0;
    while (((size_t)1 << k) < size) k++;
    return k;
}

/* --- free lists (sorted by unit) ------------------------------------------------------ */
static void list_insert(Chunk *c, int level, int32_t unit) {
    int32_t at = c->heads[level], before = -1;
    while (at != -1 && at < unit) { before = at; at = c->next[at]; }
    c->next[unit] = at;
    c->prev[unit] = before;
    if (at != -1) c->prev[at] = unit;
    if (before == -1) c->heads[level] = unit; else c->next[before] = unit;
    c->free_order[unit] = (int8_t)level;
}

static void list_remove(Chunk *c, int level, int32_t unit) {
    int32_t n = c->next[unit], p = c->prev[unit];
    if (p == -1) c->heads[level] = n; else c->next[p] = n;
    if (n != -1) c->prev[n] = p;
    c->free_order[unit] = -1;
}

/* --- the core --------------------------------------------------------------------------- */
static int arena_init(Arena *a, size_t chunk_size, size_t min_block, size_t limit) {
    memset(a, 0, sizeof(*a));
    a->chunk_size = chunk_size;
    a->min_block = min_block;
    a->min_order = order_of(min_block);
    a->chunk_order = order_of(chunk_size);
    a->orders = a->chunk_order - a->min_order + 1;
    a->units = chunk_size / min_block;
    a->limit = limit;
    if (a->orders > MAX_ORDERS) return -1;
    pthread_mutex_init(&a->lock, NULL);
    return 0;
}

static void *system_alloc(Arena *a, size_t size) {
    void *p = NULL;
    if (a->limit && a->system_bytes + size > a->limit) return NULL;
    if (posix_memalign(&p, a->min_block < sizeof(void *) ? sizeof(void *) : a->min_block,
                       size) != 0) return NULL;
    a->system_bytes += size;
    return p;
}

static Chunk *new_chunk(Arena *a) {
    if (a->n_chunks == a->cap_chunks) {
        size_t cap = a->cap_chunks ? 2 * a->cap_chunks : 8;
        Chunk *grown = realloc(a->chunks, cap * sizeof(Chunk));
        if (!grown) return NULL;
        a->chunks = grown;
        a->cap_chunks = cap;
    }
    char *base = system_alloc(a, a->chunk_size);
    if (!base) return NULL;
    Chunk *c = &a->chunks[a->n_chunks];
    c->base = base;
    c->free_order = malloc(a->units);
    c->used_order = malloc(a->units);
    c->next = malloc(a->units * sizeof(int32_t));
    c->prev = malloc(a->units * sizeof(int32_t));
    if (!c->free_order || !c->used_order || !c->next || !c->prev) {
        free(c->free_order); free(c->used_order); free(c->next); free(c->prev);
        free(base);
        a->system_bytes -= a->chunk_size;
        return NULL;
    }
    memset(c->free_order, -1, a->units);
    memset(c->used_order, -1, a->units);
    for (int k = 0; k < MAX_ORDERS; k++) c->heads[k] = -1;
    c->used_blocks = 0;
    list_insert(c, a->orders - 1, 0);
    a->n_chunks++;
    return c;
}

static void *arena_alloc(Arena *a, size_t size) {
    if (size == 0) size = 1;
    if (size > a->chunk_size) {
        Huge *h = malloc(sizeof(Huge));
        if (!h) return NULL;
        h->ptr = system_alloc(a, size);
        if (!h->ptr) { free(h); return NULL; }
        h->size = size;
        h->next = a->huge;
        a->huge = h;
        a->used += size;
        if (a->used > a->peak) a->peak = a->used;
        a->allocs++;
        return h->ptr;
    }
    int want = order_of(size);
    if (want < a->min_order) want = a->min_order;
    int level = want - a->min_order;
    Chunk *c = NULL;
    int have = -1;
    for (int l = level; l < a->orders && !c; l++)
        for (size_t i = 0; i < a->n_chunks; i++)
            if (a->chunks[i].heads[l] != -1) { c = &a->chunks[i]; have = l; break; }
    if (!c) {
        c = new_chunk(a);
        if (!c) return NULL;
        have = a->orders - 1;
    }
    int32_t unit = c->heads[have];
    list_remove(c, have, unit);
    while (have > level) { /* keep the lower half, free the upper buddy */
        have--;
        list_insert(c, have, unit + (int32_t)((size_t)1 << have));
    }
    c->used_order[unit] = (int8_t)level;
    c->used_blocks++;
    a->used += (size_t)1 << want;
    if (a->used > a->peak) a->peak = a->used;
    a->allocs++;
    return c->base + (size_t)unit * a->min_block;
}

/* the chunk holding ptr, or NULL */
static Chunk *chunk_of(Arena *a, const char *ptr) {
    for (size_t i = 0; i < a->n_chunks; i++)
        if (ptr >= a->chunks[i].base && ptr < a->chunks[i].base + a->chunk_size)
            return &a->chunks[i];
    return NULL;
}

/* the size of the block at ptr (0 when it is none of this arena's) */
static size_t block_size(Arena *a, const char *ptr) {
    Chunk *c = chunk_of(a, ptr);
    if (c) {
        size_t offset = (size_t)(ptr - c->base);
        if (offset % a->min_block) return 0;
        int8_t level = c->used_order[offset / a->min_block];
        return level < 0 ? 0 : (size_t)1 << (level + a->min_order);
    }
    for (Huge *h = a->huge; h; h = h->next)
        if (h->ptr == ptr) return h->size;
    return 0;
}

static int arena_free(Arena *a, char *ptr) {
    Chunk *c = chunk_of(a, ptr);
    if (!c) {
        for (Huge **h = &a->huge; *h; h = &(*h)->next)
            if ((*h)->ptr == ptr) {
                Huge *gone = *h;
                *h = gone->next;
                a->used -= gone->size;
                a->system_bytes -= gone->size;
                free(gone->ptr);
                free(gone);
                a->frees++;
                return 0;
            }
        return -1;
    }
    size_t offset = (size_t)(ptr - c->base);
    if (offset % a->min_block) return -1;
    int32_t unit = (int32_t)(offset / a->min_block);
    int level = c->used_order[unit];
    if (level < 0) return -1;
    c->used_order[unit] = -1;
    c->used_blocks--;
    a->used -= (size_t)1 << (level + a->min_order);
    while (level < a->orders - 1) {
        int32_t buddy = unit ^ (int32_t)((size_t)1 << level);
        if (c->free_order[buddy] != level) break;
        list_remove(c, level, buddy);
        if (buddy < unit) unit = buddy;
        level++;
    }
    list_insert(c, level, unit);
    a->frees++;
    return 0;
}

static size_t arena_release(Arena *a) {
    size_t kept = 0, released = 0;
    for (size_t i = 0; i < a->n_chunks; i++) {
        Chunk *c = &a->chunks[i];
        if (c->used_blocks == 0) {
            free(c->base); free(c->free_order); free(c->used_order); free(c->next);
            free(c->prev);
            a->system_bytes -= a->chunk_size;
            released += a->chunk_size;
        } else {
            a->chunks[kept++] = *c;
        }
    }
    a->n_chunks = kept;
    return released;
}

/* --- NumPy's allocator (NEP 49) --------------------------------------------------------------- */
static void *h_malloc(void *ctx, size_t size) {
    Arena *a = ctx;
    pthread_mutex_lock(&a->lock);
    void *p = arena_alloc(a, size);
    pthread_mutex_unlock(&a->lock);
    return p;
}

static void *h_calloc(void *ctx, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    void *p = h_malloc(ctx, n * size);
    if (p) memset(p, 0, n * size);
    return p;
}

static void h_free(void *ctx, void *ptr, size_t size) {
    (void)size; /* the block knows its own size (realloc changes what NumPy asked for) */
    if (!ptr) return;
    Arena *a = ctx;
    pthread_mutex_lock(&a->lock);
    arena_free(a, ptr);
    pthread_mutex_unlock(&a->lock);
}

static void *h_realloc(void *ctx, void *ptr, size_t size) {
    if (!ptr) return h_malloc(ctx, size);
    Arena *a = ctx;
    pthread_mutex_lock(&a->lock);
    size_t old = block_size(a, ptr);
    pthread_mutex_unlock(&a->lock);
    if (old >= (size ? size : 1) && old <= a->chunk_size) return ptr; /* it still fits */
    void *moved = h_malloc(ctx, size);
    if (!moved) return NULL;
    memcpy(moved, ptr, old < size ? old : size);
    h_free(ctx, ptr, old);
    return moved;
}

/* --- the Python type ----------------------------------------------------------------------- */
typedef struct {
    PyObject_HEAD
    Arena arena;
    PyDataMem_Handler handler;
    int ready;
} ArenaObject;

/* A handler capsule keeps its arena alive: NumPy keeps the capsule with every array it
   made through it, so the chunks outlive the last such array, whenever that dies. */
static void capsule_gone(PyObject *capsule) {
    PyObject *owner = PyCapsule_GetContext(capsule);
    Py_XDECREF(owner);
}

static int is_power_of_two(Py_ssize_t v) { return v > 0 && (v & (v - 1)) == 0; }

static int Arena_init(ArenaObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"chunk_size", "min_block", "limit", NULL};
    Py_ssize_t chunk_size = 1 << 20, min_block = 256, limit = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|nnn", kwlist, &chunk_size, &min_block,
                                     &limit))
        return -1;
    if (!is_power_of_two(chunk_size) || !is_power_of_two(min_block) || min_block > chunk_size
        || limit < 0) {
        PyErr_Format(PyExc_ValueError, "Arena: chunk_size and min_block expected powers of "
                     "two with min_block <= chunk_size (and limit >= 0), but received %zd, "
                     "%zd (limit %zd)", chunk_size, min_block, limit);
        return -1;
    }
    if (self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "Arena: already initialised");
        return -1;
    }
    if (arena_init(&self->arena, (size_t)chunk_size, (size_t)min_block, (size_t)limit) != 0) {
        PyErr_SetString(PyExc_ValueError, "Arena: too many block orders in a chunk");
        return -1;
    }
    snprintf(self->handler.name, sizeof(self->handler.name), "fluid_nb_arena");
    self->handler.version = 1;
    self->handler.allocator.ctx = &self->arena;
    self->handler.allocator.malloc = h_malloc;
    self->handler.allocator.calloc = h_calloc;
    self->handler.allocator.realloc = h_realloc;
    self->handler.allocator.free = h_free;
    self->ready = 1;
    return 0;
}

static void Arena_dealloc(ArenaObject *self) {
    /* arrays made through the handler hold the arena through their capsule, so when this
       runs no array lives in it any more */
    if (self->ready) {
        Arena *a = &self->arena;
        for (size_t i = 0; i < a->n_chunks; i++) {
            free(a->chunks[i].base); free(a->chunks[i].free_order);
            free(a->chunks[i].used_order); free(a->chunks[i].next); free(a->chunks[i].prev);
        }
        free(a->chunks);
        for (Huge *h = a->huge; h;) { Huge *n = h->next; free(h->ptr); free(h); h = n; }
        pthread_mutex_destroy(&a->lock);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

#define LOCKED(a, expr) (pthread_mutex_lock(&(a)->lock), (expr))
#define UNLOCK(a) pthread_mutex_unlock(&(a)->lock)

static PyObject *Arena_alloc(ArenaObject *self, PyObject *arg) {
    Py_ssize_t size = PyLong_AsSsize_t(arg);
    if (size == -1 && PyErr_Occurred()) return NULL;
    if (size < 1) {
        PyErr_Format(PyExc_ValueError, "Arena.alloc: size expected an int >= 1, but "
                     "received %zd", size);
        return NULL;
    }
    void *p = LOCKED(&self->arena, arena_alloc(&self->arena, (size_t)size));
    UNLOCK(&self->arena);
    if (!p) {
        PyErr_Format(PyExc_MemoryError, "Arena.alloc: the system allocator refused %zd bytes "
                     "(the arena holds %zu bytes)", size, self->arena.used);
        return NULL;
    }
    return PyLong_FromVoidPtr(p);
}

static PyObject *Arena_free(ArenaObject *self, PyObject *arg) {
    void *p = PyLong_AsVoidPtr(arg);
    if (!p && PyErr_Occurred()) return NULL;
    int status = LOCKED(&self->arena, arena_free(&self->arena, p));
    UNLOCK(&self->arena);
    if (status != 0) {
        PyErr_Format(PyExc_ValueError, "Arena.free: address expected a block of this arena, "
                     "but received %p", p);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *Arena_release(ArenaObject *self, PyObject *unused) {
    size_t released = LOCKED(&self->arena, arena_release(&self->arena));
    UNLOCK(&self->arena);
    return PyLong_FromSize_t(released);
}

static PyObject *Arena_reset_peak(ArenaObject *self, PyObject *unused) {
    pthread_mutex_lock(&self->arena.lock);
    self->arena.peak = self->arena.used;
    pthread_mutex_unlock(&self->arena.lock);
    Py_RETURN_NONE;
}

static PyObject *Arena_chunks(ArenaObject *self, PyObject *unused) {
    Arena *a = &self->arena;
    pthread_mutex_lock(&a->lock);
    PyObject *out = PyList_New((Py_ssize_t)a->n_chunks);
    for (size_t i = 0; out && i < a->n_chunks; i++)
        PyList_SET_ITEM(out, (Py_ssize_t)i, PyLong_FromVoidPtr(a->chunks[i].base));
    pthread_mutex_unlock(&a->lock);
    return out;
}

/* (address, size) of the free (used=0) or handed-out (used=1) blocks, by address */
static PyObject *blocks(ArenaObject *self, int used) {
    Arena *a = &self->arena;
    pthread_mutex_lock(&a->lock);
    PyObject *out = PyList_New(0);
    for (size_t i = 0; out && i < a->n_chunks; i++) {
        Chunk *c = &a->chunks[i];
        for (size_t u = 0; u < a->units; u++) {
            int8_t level = used ? c->used_order[u] : c->free_order[u];
            if (level < 0) continue;
            PyObject *item = Py_BuildValue("(Nn)", PyLong_FromVoidPtr(c->base + u * a->min_block),
                                           (Py_ssize_t)((size_t)1 << (level + a->min_order)));
            if (!item || PyList_Append(out, item) < 0) { Py_XDECREF(item); Py_CLEAR(out); }
            else Py_DECREF(item);
        }
    }
    if (used && out)
        for (Huge *h = a->huge; h; h = h->next) {
            PyObject *item = Py_BuildValue("(Nn)", PyLong_FromVoidPtr(h->ptr),
                                           (Py_ssize_t)h->size);
            if (!item || PyList_Append(out, item) < 0) { Py_XDECREF(item); Py_CLEAR(out); break; }
            Py_DECREF(item);
        }
    pthread_mutex_unlock(&a->lock);
    if (out && PyList_Sort(out) < 0) Py_CLEAR(out);
    return out;
}

static PyObject *Arena_free_blocks(ArenaObject *self, PyObject *u) { return blocks(self, 0); }
static PyObject *Arena_used_blocks(ArenaObject *self, PyObject *u) { return blocks(self, 1); }

static PyObject *Arena_get(ArenaObject *self, void *which) {
    Arena *a = &self->arena;
    switch ((intptr_t)which) {
    case 0: return PyLong_FromSize_t(a->used);
    case 1: return PyLong_FromSize_t(a->peak);
    case 2: return PyLong_FromSize_t(a->chunk_size);
    case 3: return PyLong_FromSize_t(a->min_block);
    case 4: return PyLong_FromSize_t(a->n_chunks);
    case 5: return PyLong_FromUnsignedLongLong(a->allocs);
    case 6: return PyLong_FromUnsignedLongLong(a->frees);
    case 7: {
        PyObject *capsule = PyCapsule_New(&self->handler, "mem_handler", capsule_gone);
        if (!capsule) return NULL;
        if (PyCapsule_SetContext(capsule, self) != 0) { Py_DECREF(capsule); return NULL; }
        Py_INCREF(self);
        return capsule;
    }
    default: return PyLong_FromSize_t(a->system_bytes);
    }
}

static PyGetSetDef Arena_getset[] = {
    {"used", (getter)Arena_get, NULL, "bytes of the blocks handed out", (void *)0},
    {"peak", (getter)Arena_get, NULL, "the largest used since reset_peak", (void *)1},
    {"chunk_size", (getter)Arena_get, NULL, NULL, (void *)2},
    {"min_block", (getter)Arena_get, NULL, NULL, (void *)3},
    {"n_chunks", (getter)Arena_get, NULL, NULL, (void *)4},
    {"allocs", (getter)Arena_get, NULL, "blocks handed out so far", (void *)5},
    {"frees", (getter)Arena_get, NULL, "blocks given back so far", (void *)6},
    {"handler", (getter)Arena_get, NULL, "NumPy's mem_handler capsule over this arena",
     (void *)7},
    {"system_bytes", (getter)Arena_get, NULL, "bytes taken from the system", (void *)8},
    {NULL}};

static PyMethodDef Arena_methods[] = {
    {"alloc", (PyCFunction)Arena_alloc, METH_O, "alloc(size) -> address of a block"},
    {"free", (PyCFunction)Arena_free, METH_O, "free(address): give a block back"},
    {"release", (PyCFunction)Arena_release, METH_NOARGS,
     "give the wholly free chunks back to the system; returns the bytes released"},
    {"reset_peak", (PyCFunction)Arena_reset_peak, METH_NOARGS, NULL},
    {"chunks", (PyCFunction)Arena_chunks, METH_NOARGS, "the chunks' base addresses"},
    {"free_blocks", (PyCFunction)Arena_free_blocks, METH_NOARGS, "[(address, size)] free"},
    {"used_blocks", (PyCFunction)Arena_used_blocks, METH_NOARGS, "[(address, size)] used"},
    {NULL}};

static PyTypeObject ArenaType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "fluid_nb.memory._arena.Arena",
    .tp_basicsize = sizeof(ArenaObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A buddy allocator over system chunks, usable as NumPy's data allocator.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Arena_init,
    .tp_dealloc = (destructor)Arena_dealloc,
    .tp_methods = Arena_methods,
    .tp_getset = Arena_getset,
};

/* set_handler(capsule or None) -> the previous handler's capsule: NumPy's data allocator for
   the current context (None: NumPy's default) */
static PyObject *set_handler(PyObject *module, PyObject *capsule) {
    if (capsule != Py_None && !PyCapsule_IsValid(capsule, "mem_handler")) {
        PyErr_SetString(PyExc_TypeError, "set_handler: capsule expected a 'mem_handler' "
                        "capsule or None");
        return NULL;
    }
    return PyDataMem_SetHandler(capsule == Py_None ? NULL : capsule);
}

static PyMethodDef module_methods[] = {
    {"set_handler", (PyCFunction)set_handler, METH_O,
     "set_handler(capsule or None) -> previous: NumPy's data allocator for this context"},
    {NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_arena",
                                    "The memory arena's buddy allocator in C.", -1,
                                    module_methods};

PyMODINIT_FUNC PyInit__arena(void) {
    import_array();
    if (PyType_Ready(&ArenaType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ArenaType);
    if (PyModule_AddObject(m, "Arena", (PyObject *)&ArenaType) < 0) {
        Py_DECREF(&ArenaType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
