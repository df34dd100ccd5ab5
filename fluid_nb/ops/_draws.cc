// Dropout's draw in one pass over its input.
//
// dropout_draw(capsule, x, p, upscale, own) -> (out, mask): for each element of the
// C-contiguous float32 or float64 array x, in order, one double r from the bit generator
// behind `capsule` (a NumPy BitGenerator's, numpy/random/bitgen.h), keep = r >= p, and
//
//     mask[i] = keep                 (uint8)
//     out[i]  = x[i] * keep          (over (T)(1 - p) when upscale)
//
// in x's type: the values, and the generator's state after the call, are those of NumPy's
// `random_state.uniform(0, 1, x.shape) >= p`, `x * mask`, `/ (1 - p)` (uniform(0, 1) is
// 0 + 1 * the generator's next double), without the array of doubles and the temporaries.
// The caller holds the generator's lock; the loops run without the GIL.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/random/bitgen.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

namespace {

// MT19937, the generator behind a RandomState, drawn here in bulk on the generator's own
// state: NumPy's mt19937_state is the 624 words and the index of the next one to temper.
// That layout is not NumPy's public API, so `layout_agrees` compares it with what the
// generator says its state is (once per process), and the draw goes through the
// generator's next_double pointer when they disagree.
constexpr int kWords = 624, kShift = 397;

struct MtState {
    uint32_t key[kWords];
    int pos;
};

inline uint32_t twist(uint32_t upper, uint32_t lower, uint32_t far) {
    const uint32_t y = (upper & 0x80000000u) | (lower & 0x7fffffffu);
    return far ^ (y >> 1) ^ ((0u - (y & 1u)) & 0x9908b0dfu);
}

void refill(MtState *state) {
    uint32_t *key = state->key;
    int i = 0;
    for (; i < kWords - kShift; ++i) key[i] = twist(key[i], key[i + 1], key[i + kShift]);
    for (; i < kWords - 1; ++i) key[i] = twist(key[i], key[i + 1], key[i + kShift - kWords]);
    key[kWords - 1] = twist(key[kWords - 1], key[0], key[kShift - 1]);
    state->pos = 0;
}

inline uint32_t temper(uint32_t y) {
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
}

inline uint32_t next_word(MtState *state) {
    if (state->pos == kWords) refill(state);
    return temper(state->key[state->pos++]);
}

// next_double is (high * 2^26 + low) / 2^53 of the top 27 bits of one word and the top 26
// of the next, so r >= p holds exactly when that 53-bit integer is at least
// ceil(p * 2^53): compared as its two halves, the keep decision needs no double at all
struct Threshold {
    uint32_t high, low;
    explicit Threshold(double p) {
        const double scaled = p <= 0.0 ? 0.0 : p >= 1.0 ? 9007199254740992.0
                                                        : ceil(p * 9007199254740992.0);
        high = (uint32_t)(scaled / 67108864.0);
        low = (uint32_t)(scaled - high * 67108864.0);
    }
    int32_t keeps(uint32_t first, uint32_t second) const {
        const uint32_t h = first >> 5, l = second >> 6;
        return (int32_t)(h > high) | ((int32_t)(h == high) & (int32_t)(l >= low));
    }
};

template <typename T>
inline void apply(const int32_t *keep, const T *__restrict__ x, T *__restrict__ out,
                  npy_uint8 *__restrict__ mask, npy_intp n, T divisor) {
    for (npy_intp i = 0; i < n; ++i) mask[i] = (npy_uint8)keep[i];
    for (npy_intp i = 0; i < n; ++i) out[i] = x[i] * (T)keep[i] / divisor;
}

// the generator's own words: the pairs left before a refill a block at a time, each step
// a loop that vectorises (a word pair straddling a refill alone)
template <typename T>
void draw_own(MtState *state, double p, const T *x, T *out, npy_uint8 *mask, npy_intp count,
              T divisor) {
    const Threshold threshold(p);
    int32_t keep[kWords / 2];
    npy_intp i = 0;
    while (i < count) {
        const int left = kWords - state->pos;
        if (left < 2) {
            const uint32_t first = next_word(state);
            keep[0] = threshold.keeps(first, next_word(state));
            apply(keep, x + i, out + i, mask + i, 1, divisor);
            ++i;
            continue;
        }
        const npy_intp pairs = left / 2 < count - i ? left / 2 : count - i;
        const uint32_t *__restrict__ words = state->key + state->pos;
        for (npy_intp j = 0; j < pairs; ++j)
            keep[j] = threshold.keeps(temper(words[2 * j]), temper(words[2 * j + 1]));
        apply(keep, x + i, out + i, mask + i, pairs, divisor);
        state->pos += 2 * (int)pairs;
        i += pairs;
    }
}

// any bit generator: its doubles through its pointer, compared as doubles
template <typename T>
void draw_through(bitgen_t *bitgen, double p, const T *x, T *out, npy_uint8 *mask,
                  npy_intp count, T divisor) {
    constexpr npy_intp kBlock = 512;
    int32_t keep[kBlock];
    for (npy_intp start = 0; start < count; start += kBlock) {
        const npy_intp n = count - start < kBlock ? count - start : kBlock;
        for (npy_intp i = 0; i < n; ++i) keep[i] = bitgen->next_double(bitgen->state) >= p;
        apply(keep, x + start, out + start, mask + start, n, divisor);
    }
}

template <typename T>
void draw(bitgen_t *bitgen, bool own, double p, bool upscale, PyArrayObject *x,
          PyObject *out, PyObject *mask) {
    const T *in = (const T *)PyArray_DATA(x);
    T *to = (T *)PyArray_DATA((PyArrayObject *)out);
    npy_uint8 *mask_of = (npy_uint8 *)PyArray_DATA((PyArrayObject *)mask);
    const T divisor = upscale ? (T)(1.0 - p) : (T)1;  // (x / 1 is x, to the bit)
    const npy_intp count = PyArray_SIZE(x);
    if (own)
        draw_own((MtState *)bitgen->state, p, in, to, mask_of, count, divisor);
    else
        draw_through(bitgen, p, in, to, mask_of, count, divisor);
}

// layout_agrees(capsule, key, pos) -> bool: whether the MT19937 state behind `capsule` is
// laid out as MtState, given the generator's own account of it (its 624 words as a
// uint32 array, and the index)
PyObject *layout_agrees(PyObject *, PyObject *args) {
    PyObject *capsule;
    PyArrayObject *key;
    int pos;
    if (!PyArg_ParseTuple(args, "OO!i", &capsule, &PyArray_Type, &key, &pos)) return NULL;
    bitgen_t *bitgen = (bitgen_t *)PyCapsule_GetPointer(capsule, "BitGenerator");
    if (bitgen == NULL) return NULL;
    if (PyArray_TYPE(key) != NPY_UINT32 || PyArray_SIZE(key) != kWords ||
        !PyArray_IS_C_CONTIGUOUS(key))
        Py_RETURN_FALSE;
    const MtState *state = (const MtState *)bitgen->state;
    if (memcmp(state->key, PyArray_DATA(key), sizeof(state->key)) != 0 || state->pos != pos)
        Py_RETURN_FALSE;
    Py_RETURN_TRUE;
}

PyObject *dropout_draw(PyObject *, PyObject *args) {
    PyObject *capsule;
    PyArrayObject *x;
    double p;
    int upscale, own;
    if (!PyArg_ParseTuple(args, "OO!dpp", &capsule, &PyArray_Type, &x, &p, &upscale, &own))
        return NULL;
    bitgen_t *bitgen = (bitgen_t *)PyCapsule_GetPointer(capsule, "BitGenerator");
    if (bitgen == NULL) return NULL;
    const int type = PyArray_TYPE(x);
    if ((type != NPY_FLOAT32 && type != NPY_FLOAT64) || !PyArray_IS_C_CONTIGUOUS(x)) {
        PyErr_Format(PyExc_TypeError,
                     "dropout_draw: x expected a C-contiguous float32 or float64 array, "
                     "but received %s", PyArray_DESCR(x)->typeobj->tp_name);
        return NULL;
    }
    PyObject *out = PyArray_SimpleNew(PyArray_NDIM(x), PyArray_DIMS(x), type);
    PyObject *mask = out == NULL ? NULL
                                 : PyArray_SimpleNew(PyArray_NDIM(x), PyArray_DIMS(x),
                                                     NPY_UINT8);
    if (mask == NULL) {
        Py_XDECREF(out);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    if (type == NPY_FLOAT32)
        draw<float>(bitgen, own, p, upscale, x, out, mask);
    else
        draw<double>(bitgen, own, p, upscale, x, out, mask);
    Py_END_ALLOW_THREADS
    return Py_BuildValue("(NN)", out, mask);
}

PyMethodDef methods[] = {
    {"dropout_draw", dropout_draw, METH_VARARGS,
     "dropout_draw(capsule, x, p, upscale, own) -> (out, mask): dropout's keep mask drawn "
     "from a NumPy bit generator (as uniform(0, 1, x.shape) >= p) and applied to x in one "
     "pass; own: an MT19937 whose state layout_agrees, drawn here from its words"},
    {"layout_agrees", layout_agrees, METH_VARARGS,
     "layout_agrees(capsule, key, pos) -> bool: whether an MT19937's state is laid out as "
     "this module draws from it"},
    {NULL, NULL, 0, NULL}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_draws",
                      "Random draws of ops in one pass (dropout's mask).", -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__draws(void) {
    import_array();
    return PyModule_Create(&module);
}
