/* The memory arena's buddy allocator in C, and NumPy's data allocator over it (NEP 49).
 *
 * The same algorithm as fluid_nb/memory/buddy.py (the plain-Python model the tests compare
 * it with): chunks of chunk_size bytes from the system (posix_memalign), blocks of 2^k
 * bytes at least min_block, aligned to their size within their chunk; best fit (the
 * smallest free order, the first chunk, the lowest offset), split into buddies, merge with
 * a wholly free buddy on free; requests larger than a chunk straight to the system.
 *
 * Per chunk, unit u (min_block bytes) has free_order[u] = k + 1 when a free block of level
 * k starts there (0 otherwise) and used_order[u] = k + 1 when a handed-out block does: 0 for
 * "none" lets both tables come from calloc, whose pages stay untouched (and take no memory)
 * for the units no block has started at; a 256 MiB chunk's tables are 2 MiB. The free
 * blocks of each order form a list ordered by offset (kept sorted on insert so that "lowest
 * offset" is the head, as the Python model picks it). One mutex guards the arena: NumPy may
 * allocate without the GIL.
 *
 * The system allocator is posix_memalign by default. An arena made with ``system=(alloc,
 * free)`` takes its chunks from those Python callables instead (device memory: CuPy's),
 * called with the lock released: the core asks for memory by failing with ``wants`` set,
 * the Python method provides it and retries, and memory to hand back is queued and given
 * to ``free`` after the lock is released. Such an arena is never NumPy's allocator.
 *
 * With recording on, each change is appended to an event log (alloc, free, split, merge, a
 * chunk taken or released, a huge block), stamped with the arena's current tag (the op the
 * executor is running); Python takes the log as packed records (see EVENT_FORMAT in
 * arena.py). Off, recording costs one branch per change.
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
    int8_t *free_order;   /* per unit: 1 + level of the free block starting here, or 0 */
    int8_t *used_order;   /* per unit: 1 + level of the handed-out block starting here, or 0 */
    int32_t *next, *prev; /* free lists by order (unit indices, -1 ends) */
    int32_t heads[MAX_ORDERS];
    size_t used_blocks;
} Chunk;

typedef struct Huge {
    char *ptr;
    size_t size;
    struct Huge *next;
} Huge;

enum { EV_ALLOC, EV_FREE, EV_SPLIT, EV_MERGE, EV_CHUNK, EV_RELEASE, EV_HUGE_ALLOC,
       EV_HUGE_FREE };

typedef struct {      /* 40 bytes, no padding: '<QQQQii' in arena.py */
    uint64_t address;
    uint64_t size;      /* the block's (or chunk's) bytes */
    uint64_t requested; /* what the caller asked for (alloc events), else 0 */
    uint64_t used;      /* the arena's used bytes after the change */
    int32_t kind;
    int32_t tag;
} Event;

typedef struct {
    char *ptr;
    size_t size;
} Span;

typedef struct {
    size_t chunk_size, min_block;
    int min_order, chunk_order, orders; /* orders = chunk_order - min_order + 1 */
    size_t units;
    Chunk *chunks;
    size_t n_chunks, cap_chunks;
    Huge *huge;
    size_t used, peak, limit, system_bytes, huge_bytes;
    uint64_t allocs, frees;
    int recording;
    int32_t tag;
    Event *events;
    size_t n_events, cap_events, event_limit;
    int external;          /* chunks from the Python system allocator */
    size_t wants;          /* external: bytes the core asked the system for and lacked */
    char *provided;        /* external: memory the caller got from the system for it */
    Span *returned;        /* external: memory to hand back once the lock is released */
    size_t n_returned, cap_returned;
    uint64_t dropped; /* events not logged: the log was at event_limit */
    pthread_mutex_t lock;
} Arena;

static void record(Arena *a, int kind, const void *address, size_t size, size_t requested) {
    if (!a->recording) return;
    if (a->n_events >= a->event_limit) { a->dropped++; return; }
    if (a->n_events == a->cap_events) {
        size_t cap = a->cap_events ? 2 * a->cap_events : 1024;
        Event *grown = realloc(a->events, cap * sizeof(Event));
        if (!grown) { a->dropped++; return; } /* the log is an aid: it never fails an alloc */
        a->events = grown;
        a->cap_events = cap;
    }
    Event *e = &a->events[a->n_events++];
    e->address = (uint64_t)(uintptr_t)address;
    e->size = size;
    e->requested = requested;
    e->used = a->used;
    e->kind = kind;
    e->tag = a->tag;
}

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
    c->free_order[unit] = (int8_t)(level + 1);
}

static void list_remove(Chunk *c, int level, int32_t unit) {
    int32_t n = c->next[unit], p = c->prev[unit];
    if (p == -1) c->heads[level] = n; else c->next[p] = n;
    if (n != -1) c->prev[n] = p;
    c->free_order[unit] = 0;
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
    a->event_limit = (size_t)1 << 20;
    if (a->orders > MAX_ORDERS) return -1;
    pthread_mutex_init(&a->lock, NULL);
    return 0;
}

static void *system_alloc(Arena *a, size_t size) {
    void *p = NULL;
    if (a->limit && a->system_bytes + size > a->limit) return NULL;
    if (a->external) {
        if (!a->provided) { a->wants = size; return NULL; }
        p = a->provided;
        a->provided = NULL;
    } else if (posix_memalign(&p, a->min_block < sizeof(void *) ? sizeof(void *)
                              : a->min_block, size) != 0) {
        return NULL;
    }
    a->system_bytes += size;
    return p;
}

/* give memory back to the system (external: queued for after the lock); 0 on success */
static int system_free(Arena *a, char *ptr, size_t size) {
    a->system_bytes -= size;
    if (!a->external) { free(ptr); return 0; }
    if (a->n_returned == a->cap_returned) {
        size_t cap = a->cap_returned ? 2 * a->cap_returned : 8;
        Span *grown = realloc(a->returned, cap * sizeof(Span));
        if (!grown) return -1;
        a->returned = grown;
        a->cap_returned = cap;
    }
    a->returned[a->n_returned].ptr = ptr;
    a->returned[a->n_returned].size = size;
    a->n_returned++;
    return 0;
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
    c->free_order = calloc(a->units, 1);
    c->used_order = calloc(a->units, 1);
    c->next = malloc(a->units * sizeof(int32_t));
    c->prev = malloc(a->units * sizeof(int32_t));
    if (!c->free_order || !c->used_order || !c->next || !c->prev) {
        free(c->free_order); free(c->used_order); free(c->next); free(c->prev);
        system_free(a, base, a->chunk_size);
        return NULL;
    }
    for (int k = 0; k < MAX_ORDERS; k++) c->heads[k] = -1;
    c->used_blocks = 0;
    list_insert(c, a->orders - 1, 0);
    a->n_chunks++;
    record(a, EV_CHUNK, base, a->chunk_size, 0);
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
        a->huge_bytes += size;
        if (a->used > a->peak) a->peak = a->used;
        a->allocs++;
        record(a, EV_HUGE_ALLOC, h->ptr, size, size);
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
        int32_t upper = unit + (int32_t)((size_t)1 << have);
        list_insert(c, have, upper);
        record(a, EV_SPLIT, c->base + (size_t)upper * a->min_block,
               (size_t)1 << (have + a->min_order), 0);
    }
    c->used_order[unit] = (int8_t)(level + 1);
    c->used_blocks++;
    a->used += (size_t)1 << want;
    if (a->used > a->peak) a->peak = a->used;
    a->allocs++;
    char *block = c->base + (size_t)unit * a->min_block;
    record(a, EV_ALLOC, block, (size_t)1 << want, size);
    return block;
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
        int level = c->used_order[offset / a->min_block] - 1;
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
                a->huge_bytes -= gone->size;
                record(a, EV_HUGE_FREE, gone->ptr, gone->size, 0);
                system_free(a, gone->ptr, gone->size);
                free(gone);
                a->frees++;
                return 0;
            }
        return -1;
    }
    size_t offset = (size_t)(ptr - c->base);
    if (offset % a->min_block) return -1;
    int32_t unit = (int32_t)(offset / a->min_block);
    int level = c->used_order[unit] - 1;
    if (level < 0) return -1;
    c->used_order[unit] = 0;
    c->used_blocks--;
    a->used -= (size_t)1 << (level + a->min_order);
    record(a, EV_FREE, ptr, (size_t)1 << (level + a->min_order), 0);
    while (level < a->orders - 1) {
        int32_t buddy = unit ^ (int32_t)((size_t)1 << level);
        if (c->free_order[buddy] != level + 1) break;
        list_remove(c, level, buddy);
        if (buddy < unit) unit = buddy;
        level++;
        record(a, EV_MERGE, c->base + (size_t)unit * a->min_block,
               (size_t)1 << (level + a->min_order), 0);
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
            record(a, EV_RELEASE, c->base, a->chunk_size, 0);
            system_free(a, c->base, a->chunk_size);
            free(c->free_order); free(c->used_order); free(c->next); free(c->prev);
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
    PyObject *sys_alloc, *sys_free; /* the Python system allocator, or NULL */
} ArenaObject;

/* hand the queued memory back through the Python system allocator (lock not held); -1
   with the error set when one call failed (the rest are still handed back) */
static int return_queued(ArenaObject *self) {
    Arena *a = &self->arena;
    int status = 0;
    for (;;) {
        pthread_mutex_lock(&a->lock);
        if (a->n_returned == 0) { pthread_mutex_unlock(&a->lock); return status; }
        Span span = a->returned[--a->n_returned];
        pthread_mutex_unlock(&a->lock);
        PyObject *r = PyObject_CallFunction(self->sys_free, "Nn", PyLong_FromVoidPtr(span.ptr),
                                            (Py_ssize_t)span.size);
        if (r) Py_DECREF(r);
        else if (status == 0) status = -1; /* keep the first error */
        else PyErr_Clear();
    }
}

/* arena_alloc through the Python system allocator: when the core lacks memory, get it with
   the lock released and try again */
static void *external_alloc(ArenaObject *self, size_t size) {
    Arena *a = &self->arena;
    for (int tries = 0; tries < 4; tries++) {
        pthread_mutex_lock(&a->lock);
        void *p = arena_alloc(a, size);
        size_t wants = a->wants;
        a->wants = 0;
        pthread_mutex_unlock(&a->lock);
        if (p || !wants) return p;
        PyObject *r = PyObject_CallFunction(self->sys_alloc, "n", (Py_ssize_t)wants);
        if (!r) return NULL;
        void *base = PyLong_AsVoidPtr(r);
        Py_DECREF(r);
        if (!base) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_MemoryError, "Arena: the system allocator gave 0");
            return NULL;
        }
        pthread_mutex_lock(&a->lock);
        a->provided = base;
        p = arena_alloc(a, size);
        char *unused = a->provided; /* another thread's free made room meanwhile */
        a->provided = NULL;
        a->wants = 0;
        pthread_mutex_unlock(&a->lock);
        if (unused) {
            PyObject *back = PyObject_CallFunction(self->sys_free, "Nn",
                                                   PyLong_FromVoidPtr(unused),
                                                   (Py_ssize_t)wants);
            if (!back) return NULL;
            Py_DECREF(back);
        }
        if (p) return p;
    }
    return NULL;
}

/* A handler capsule keeps its arena alive: NumPy keeps the capsule with every array it
   made through it, so the chunks outlive the last such array, whenever that dies. */
static void capsule_gone(PyObject *capsule) {
    PyObject *owner = PyCapsule_GetContext(capsule);
    Py_XDECREF(owner);
}

static int is_power_of_two(Py_ssize_t v) { return v > 0 && (v & (v - 1)) == 0; }

static int Arena_init(ArenaObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"chunk_size", "min_block", "limit", "system", NULL};
    Py_ssize_t chunk_size = 1 << 20, min_block = 256, limit = 0;
    PyObject *system = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|nnnO", kwlist, &chunk_size, &min_block,
                                     &limit, &system))
        return -1;
    PyObject *sys_alloc = NULL, *sys_free = NULL;
    if (system != Py_None) {
        if (!PyTuple_Check(system) || PyTuple_GET_SIZE(system) != 2
            || !PyCallable_Check(PyTuple_GET_ITEM(system, 0))
            || !PyCallable_Check(PyTuple_GET_ITEM(system, 1))) {
            PyErr_Format(PyExc_TypeError, "Arena: system expected None or a pair (alloc(size) "
                         "-> address, free(address, size)) of callables, but received %s",
                         Py_TYPE(system)->tp_name);
            return -1;
        }
        sys_alloc = PyTuple_GET_ITEM(system, 0);
        sys_free = PyTuple_GET_ITEM(system, 1);
    }
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
    self->arena.external = sys_alloc != NULL;
    Py_XINCREF(sys_alloc);
    Py_XINCREF(sys_free);
    self->sys_alloc = sys_alloc;
    self->sys_free = sys_free;
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
            system_free(a, a->chunks[i].base, a->chunk_size);
            free(a->chunks[i].free_order);
            free(a->chunks[i].used_order); free(a->chunks[i].next); free(a->chunks[i].prev);
        }
        free(a->chunks);
        for (Huge *h = a->huge; h;) {
            Huge *n = h->next;
            system_free(a, h->ptr, h->size);
            free(h);
            h = n;
        }
        if (a->external) {
            PyObject *type, *value, *trace;
            PyErr_Fetch(&type, &value, &trace);
            /* named by the system free that failed, not by self: reporting takes a new
               reference to its object, and this one's count is already 0 (another
               dealloc would follow, freeing the tables twice) */
            if (return_queued(self) < 0) PyErr_WriteUnraisable(self->sys_free);
            PyErr_Restore(type, value, trace);
        }
        free(a->returned);
        free(a->events);
        pthread_mutex_destroy(&a->lock);
    }
    Py_XDECREF(self->sys_alloc);
    Py_XDECREF(self->sys_free);
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
    void *p;
    if (self->arena.external) {
        p = external_alloc(self, (size_t)size);
        if (!p && PyErr_Occurred()) return NULL; /* the system allocator's own error */
    } else {
        p = LOCKED(&self->arena, arena_alloc(&self->arena, (size_t)size));
        UNLOCK(&self->arena);
    }
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
    if (self->arena.external && return_queued(self) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Arena_release(ArenaObject *self, PyObject *unused) {
    size_t released = LOCKED(&self->arena, arena_release(&self->arena));
    UNLOCK(&self->arena);
    if (self->arena.external && return_queued(self) < 0) return NULL;
    return PyLong_FromSize_t(released);
}

static PyObject *Arena_reset_peak(ArenaObject *self, PyObject *unused) {
    pthread_mutex_lock(&self->arena.lock);
    self->arena.peak = self->arena.used;
    pthread_mutex_unlock(&self->arena.lock);
    Py_RETURN_NONE;
}

/* The readers below copy what they need under the lock and make Python objects after it:
   making a list or a tuple may run the cyclic collector, whose frees of arrays come back
   to this arena (NumPy's handler) and would wait on the lock this thread holds. */
static PyObject *Arena_chunks(ArenaObject *self, PyObject *unused) {
    Arena *a = &self->arena;
    pthread_mutex_lock(&a->lock);
    size_t n = a->n_chunks;
    void **bases = malloc((n ? n : 1) * sizeof(void *));
    for (size_t i = 0; bases && i < n; i++) bases[i] = a->chunks[i].base;
    pthread_mutex_unlock(&a->lock);
    if (!bases) return PyErr_NoMemory();
    PyObject *out = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; out && i < n; i++) {
        PyObject *base = PyLong_FromVoidPtr(bases[i]);
        if (!base) { Py_CLEAR(out); break; }
        PyList_SET_ITEM(out, (Py_ssize_t)i, base);
    }
    free(bases);
    return out;
}

/* (address, size) of the free (used=0) or handed-out (used=1) blocks, by address */
typedef struct { char *address; size_t size; } BlockRecord;

static PyObject *blocks(ArenaObject *self, int used) {
    Arena *a = &self->arena;
    pthread_mutex_lock(&a->lock);
    size_t n = 0, capacity = a->n_chunks * a->units;
    if (used)
        for (Huge *h = a->huge; h; h = h->next) capacity++;
    BlockRecord *records = malloc((capacity ? capacity : 1) * sizeof(BlockRecord));
    for (size_t i = 0; records && i < a->n_chunks; i++) {
        Chunk *c = &a->chunks[i];
        for (size_t u = 0; u < a->units; u++) {
            int level = (used ? c->used_order[u] : c->free_order[u]) - 1;
            if (level < 0) continue;
            records[n].address = c->base + u * a->min_block;
            records[n++].size = (size_t)1 << (level + a->min_order);
        }
    }
    if (used && records)
        for (Huge *h = a->huge; h; h = h->next) {
            records[n].address = h->ptr;
            records[n++].size = h->size;
        }
    pthread_mutex_unlock(&a->lock);
    if (!records) return PyErr_NoMemory();
    PyObject *out = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; out && i < n; i++) {
        PyObject *item = Py_BuildValue("(Nn)", PyLong_FromVoidPtr(records[i].address),
                                       (Py_ssize_t)records[i].size);
        if (!item) { Py_CLEAR(out); break; }
        PyList_SET_ITEM(out, (Py_ssize_t)i, item);
    }
    free(records);
    if (out && PyList_Sort(out) < 0) Py_CLEAR(out);
    return out;
}

/* (the log since the last call as packed Event records, the events dropped since then);
   the log starts empty again */
static PyObject *Arena_take_events(ArenaObject *self, PyObject *unused) {
    Arena *a = &self->arena;
    pthread_mutex_lock(&a->lock);
    /* (a bytes object is not one the collector tracks: making it runs no collection) */
    PyObject *raw = PyBytes_FromStringAndSize((const char *)a->events,
                                              (Py_ssize_t)(a->n_events * sizeof(Event)));
    unsigned long long dropped = a->dropped;
    if (raw) { a->n_events = 0; a->dropped = 0; }
    pthread_mutex_unlock(&a->lock);
    return raw ? Py_BuildValue("(NK)", raw, dropped) : NULL;
}

/* (free bytes in chunks, largest free block): from the free lists' heads, without a scan */
static PyObject *Arena_free_space(ArenaObject *self, PyObject *unused) {
    Arena *a = &self->arena;
    pthread_mutex_lock(&a->lock);
    size_t in_chunks = a->n_chunks * a->chunk_size;
    size_t free_bytes = in_chunks - (a->used - a->huge_bytes);
    size_t largest = 0;
    for (int l = a->orders - 1; l >= 0 && !largest; l--)
        for (size_t i = 0; i < a->n_chunks; i++)
            if (a->chunks[i].heads[l] != -1) { largest = (size_t)1 << (l + a->min_order); break; }
    pthread_mutex_unlock(&a->lock);
    return Py_BuildValue("(nn)", (Py_ssize_t)free_bytes, (Py_ssize_t)largest);
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
        if (a->external) {
            PyErr_SetString(PyExc_TypeError, "Arena.handler: an arena over a Python system "
                            "allocator (device memory) cannot be NumPy's allocator");
            return NULL;
        }
        PyObject *capsule = PyCapsule_New(&self->handler, "mem_handler", capsule_gone);
        if (!capsule) return NULL;
        if (PyCapsule_SetContext(capsule, self) != 0) { Py_DECREF(capsule); return NULL; }
        Py_INCREF(self);
        return capsule;
    }
    case 8: return PyLong_FromSize_t(a->system_bytes);
    case 9: return PyBool_FromLong(a->recording);
    case 10: return PyLong_FromLong(a->tag);
    case 12: return PyLong_FromSize_t(a->event_limit);
    case 13: return PyLong_FromUnsignedLongLong(a->dropped);
    default: return PyLong_FromSize_t(a->huge_bytes);
    }
}

static int Arena_set(ArenaObject *self, PyObject *value, void *which) {
    if (!value) {
        PyErr_SetString(PyExc_AttributeError, "Arena: the attribute cannot be deleted");
        return -1;
    }
    if ((intptr_t)which == 9) {
        int on = PyObject_IsTrue(value);
        if (on < 0) return -1;
        pthread_mutex_lock(&self->arena.lock);
        self->arena.recording = on;
        pthread_mutex_unlock(&self->arena.lock);
        return 0;
    }
    if ((intptr_t)which == 12) {
        Py_ssize_t limit = PyLong_AsSsize_t(value);
        if (limit == -1 && PyErr_Occurred()) return -1;
        if (limit < 0) {
            PyErr_Format(PyExc_ValueError, "Arena.event_limit: expected an int >= 0, but "
                         "received %zd", limit);
            return -1;
        }
        pthread_mutex_lock(&self->arena.lock);
        self->arena.event_limit = (size_t)limit;
        pthread_mutex_unlock(&self->arena.lock);
        return 0;
    }
    long tag = PyLong_AsLong(value);
    if (tag == -1 && PyErr_Occurred()) return -1;
    if (tag < INT32_MIN || tag > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "Arena.tag: expected a 32-bit int, but received %ld",
                     tag);
        return -1;
    }
    self->arena.tag = (int32_t)tag; /* one word: read under the lock by record() */
    return 0;
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
    {"recording", (getter)Arena_get, (setter)Arena_set, "whether changes go to the event log",
     (void *)9},
    {"tag", (getter)Arena_get, (setter)Arena_set, "the int stamped on the events recorded",
     (void *)10},
    {"huge_bytes", (getter)Arena_get, NULL, "bytes of the blocks larger than a chunk",
     (void *)11},
    {"event_limit", (getter)Arena_get, (setter)Arena_set, "the most events the log keeps "
     "(later ones are counted in dropped)", (void *)12},
    {"dropped", (getter)Arena_get, NULL, "events not logged since the log was full",
     (void *)13},
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
    {"take_events", (PyCFunction)Arena_take_events, METH_NOARGS,
     "(the event log since the last call as packed records, events dropped)"},
    {"free_space", (PyCFunction)Arena_free_space, METH_NOARGS,
     "(free bytes in the chunks, the largest free block's bytes)"},
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

/* data_address(array) -> the address of the data of the array that owns the memory (a
   view's base, followed to the array that allocated it) */
static PyObject *data_address(PyObject *module, PyObject *array) {
    if (!PyArray_Check(array)) {
        PyErr_Format(PyExc_TypeError, "data_address: an ndarray expected, but received %s",
                     Py_TYPE(array)->tp_name);
        return NULL;
    }
    PyArrayObject *owner = (PyArrayObject *)array;
    while (PyArray_BASE(owner) && PyArray_Check(PyArray_BASE(owner)))
        owner = (PyArrayObject *)PyArray_BASE(owner);
    return PyLong_FromVoidPtr(PyArray_DATA(owner));
}

static PyMethodDef module_methods[] = {
    {"data_address", (PyCFunction)data_address, METH_O,
     "data_address(array) -> address of the data of the array owning its memory"},
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
