/* Reads from a dict kept while the dict is unchanged (framework/_op_record.c,
 * exec/_steps.c: the state of a block, a program, a session and the modules a live op
 * reads at every call). CPython before 3.12 gives a dict a version tag (PEP 509) when it
 * is made and at each change, a number no state of any dict had before: the dict at the
 * same address with the same tag is the same dict holding the same entries, so a value
 * read from it then is the value a read now gives, and the dict still holds it. Nothing is
 * held: a dict let go and another made at its address has a new tag. Later versions
 * deprecate the field; there nothing is current and every call reads. */
#pragma once
#include <Python.h>
#include <stdint.h>

#if PY_VERSION_HEX < 0x030C0000 && !defined(PYPY_VERSION)
#define DICT_TAGS 1
#define DICT_TAG(d) (((PyDictObject *)(d))->ma_version_tag)
#else
#define DICT_TAGS 0
#define DICT_TAG(d) ((uint64_t)0)
#endif

typedef struct {
    PyObject *dict; /* (its address alone: never read through) */
    uint64_t tag;   /* 0: nothing kept */
} KeptDict;

/* whether what was kept from `d` holds; asked before the caller alone changes `d` (a write
 * that runs no other code), then kept_written after it: the caller puts the value it wrote
 * where it was kept */
static inline int kept_current(const KeptDict *kept, PyObject *d) {
    return kept->tag != 0 && kept->dict == d && kept->tag == DICT_TAG(d);
}

static inline void kept_written(KeptDict *kept, PyObject *d) {
    kept->tag = DICT_TAG(d);
}

#define MOST_KEPT 8 /* reads kept from one dict at most */

/* `values[i]` = `d[*keys[i]]` (borrowed, NULL where missing) for i < n (the keys: the
 * addresses of a file's interned names), kept: read again only when `d` is another dict or
 * has changed since. 0 when kept, 1 when read now, -1 with an error (nothing kept). The
 * tag is taken before the reads, so a change while they run (a key's __eq__) leaves
 * nothing current, and nothing is kept until they are done (a call made while they run
 * reads for itself). */
static inline int read_kept(KeptDict *kept, PyObject *d, PyObject **const *keys,
                            PyObject **values, int n) {
    if (kept_current(kept, d))
        return 0;
    uint64_t tag = DICT_TAG(d);
    PyObject *read[MOST_KEPT];
    kept->tag = 0;
    if (n > MOST_KEPT) {
        PyErr_Format(PyExc_SystemError, "read_kept: at most %d keys, not %d", MOST_KEPT, n);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if ((read[i] = PyDict_GetItemWithError(d, *keys[i])) == NULL && PyErr_Occurred())
            return -1;
    for (int i = 0; i < n; i++)
        values[i] = read[i];
    kept->dict = d, kept->tag = tag;
    return 1;
}


#define KEPT_COUNT(keys) ((int)(sizeof(keys) / sizeof((keys)[0])))
