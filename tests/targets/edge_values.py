"""Edge-value variants of an elementwise op's table case: the same op and attributes on
inputs made of the values where implementations part ways.

Each variant rewrites the case's float inputs (integer inputs are left as they are):

- ``nan_inf``: NaN, +inf and -inf put among the values (each input gets them at other
  places, so a NaN meets an inf and an inf meets a finite value);
- ``overflow``: every value near or past where exp and products overflow the float type
  (float32: exp overflows past 88.72; float64: past 709.78);
- ``subnormal``: every value a subnormal, the largest subnormal or the smallest normal of
  the float type;
- ``empty``: a leading dimension of size 0 (only where every input has the same rank and
  leading dimension: a broadcast Y cannot be cut along it);
- ``size1``: every dimension 1 (each input's first value).

A variant whose inputs cannot be formed from the case (no float input for the value
variants; a LoD, unequal ranks or leading dimensions for ``empty``) is not made. The interpreter
is the reference: the variants have no NumPy reference, only the interpreter's values.
"""
import dataclasses

import numpy as np

from fluid_nb.ops import registry

from tests.ops.op_test import EachLoD, _output_counts


def _subnormals(dtype):
    """Subnormals of ``dtype`` (one in the middle of the range, the smallest) with their
    neighbours, and the smallest normal with the largest subnormal below it; both signs."""
    dtype = np.dtype(dtype)
    info, zero, one = np.finfo(dtype), dtype.type(0), dtype.type(1)
    middle = dtype.type(1e-40 if dtype == np.float32 else 1e-310)
    values = []
    for x in (middle, info.smallest_subnormal, info.smallest_normal):
        for v in (np.nextafter(x, zero), x, np.nextafter(x, one)):
            if v != 0:
                values += [v, -v]
    return values


#: the values each value variant is made of, by float type: for ``nan_inf`` placed among
#: the case's values, for the others cycled through the whole input
VALUES = {
    "nan_inf": {np.dtype("float32"): [np.nan, np.inf, -np.inf],
                np.dtype("float64"): [np.nan, np.inf, -np.inf]},
    "overflow": {np.dtype("float32"): [88.0, -88.0, 90.0, -90.0, 95.0, -95.0, 1e4, -1e4,
                                       1e19, -1e19, 1e30, -1e30, 3e38, -3e38],
                 np.dtype("float64"): [709.0, -709.0, 710.0, -710.0, 745.0, -745.0, 1e4,
                                       -1e4, 1e154, -1e154, 1e300, -1e300, 1.7e308,
                                       -1.7e308]},
    "subnormal": {np.dtype(t): _subnormals(t) for t in ("float32", "float64")},
}

VARIANTS = ("nan_inf", "overflow", "subnormal", "empty", "size1")


def is_elementwise(op_type):
    return "elementwise" in registry.get(op_type).traits


def _arrays(value):
    return value if isinstance(value, list) else [value]


def _map_inputs(inputs, fn):
    """``inputs`` with ``fn(array, k)`` applied to each array (k: its place among all)."""
    out, k = {}, 0
    for slot, value in inputs.items():
        new = []
        for array in _arrays(value):
            new.append(fn(np.asarray(array), k))
            k += 1
        out[slot] = new if isinstance(value, list) else new[0]
    return out


def _is_float(array):
    return array.dtype in VALUES["nan_inf"]


def _placed(array, k):
    """``array`` with NaN, +inf and -inf at its first places (in an order turned by k, so
    two inputs meet other specials) and one more at its last place."""
    if not _is_float(array) or array.size == 0:
        return array
    specials = VALUES["nan_inf"][array.dtype]
    flat = array.copy().reshape(-1)
    for i in range(min(flat.size, len(specials))):
        flat[i] = specials[(i + k) % len(specials)]
    if flat.size > len(specials) + 1:
        flat[-1] = specials[k % len(specials)]
    return flat.reshape(array.shape)


def _filled(variant):
    """``fill(array, k)``: ``array`` made of the variant's values, cycled from the k-th."""
    def fill(array, k):
        if not _is_float(array) or array.size == 0:
            return array
        values = np.array(VALUES[variant][array.dtype], array.dtype)
        # a turn of the cycle per input (by an odd step, so X's value meets Y's others)
        index = (np.arange(array.size) + 3 * k) % values.size
        return values[index].reshape(array.shape)
    return fill


def _first_values(array, k):
    """``array``'s first value, in an array of its rank whose every dimension is 1."""
    return array.reshape(-1)[:1].reshape((1,) * array.ndim)


def _cut(array, k):
    return array[:0]


def _formable(case, variant):
    arrays = [np.asarray(a) for v in case.inputs.values() for a in _arrays(v)]
    if variant in ("nan_inf", "overflow", "subnormal"):
        return any(_is_float(a) and a.size for a in arrays)
    if variant == "size1":
        return all(a.size for a in arrays) and not any(isinstance(lod, EachLoD)
                                                       for lod in case.lod.values())
    # empty: every input has the same rank and leading dimension (a Y of lower rank is
    # broadcast from another axis), and no LoD fixes the sizes
    return (not case.lod and len({a.ndim for a in arrays}) == 1 and arrays[0].ndim >= 1
            and len({a.shape[0] for a in arrays}) == 1 and arrays[0].shape[0] > 0)


_MAKE = {"nan_inf": _placed, "overflow": _filled("overflow"),
         "subnormal": _filled("subnormal"), "empty": _cut, "size1": _first_values}


def variant(case, name):
    """The ``name`` variant of ``case`` (an OpCase named ``<case>-<name>``), or None where
    its inputs cannot be formed. Its outputs are the case's (the reference's slots)."""
    if not _formable(case, name):
        return None
    expected = case.ref(dict(case.inputs), dict(case.attrs)) if case.ref is not None else None
    lod = case.lod
    if name == "size1":  # one sequence of the one row at each level
        lod = {slot: [[0, 1] for _ in levels] for slot, levels in case.lod.items()}
    return dataclasses.replace(
        case, inputs=_map_inputs(case.inputs, _MAKE[name]), lod=lod, ref=None, check=None,
        outputs=_output_counts(case, expected),
        name=f"{case.name}-{name}" if case.name else name)


def variants(cases):
    """Every formable edge-value variant of every case of an elementwise op."""
    made = (variant(case, name) for case in cases if is_elementwise(case.op)
            for name in VARIANTS)
    return [v for v in made if v is not None]
