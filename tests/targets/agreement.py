"""When a target's value agrees with the interpreter's.

Same dtype and shape; the same LoD where the target keeps one; NaN, +inf and -inf at the
same places; the finite values within the tolerance of their type (float32: 1e-5
relative, float64: 1e-12; absolute: a hundredth of that times the largest finite
magnitude, at least 1); integers and flags equal. A rank table or a tensor array agrees
item by item.

The values of an elementwise op are each a function of one value of each input, with no
sum whose rounding a small value inherits from large ones: each is held to the relative
tolerance on its own, down to the smallest normal number of its type (absolute: the
relative tolerance times it), so a value beside an overflowing one is still checked, and
a tiny result (sigmoid(-80) = 1.8e-35 in float32) may not be flushed to 0. That holds
the code we generate (native C++ and CUDA). onnxruntime's kernels are not ours and round
their intermediates within a few ulps (its float Tanh is 2 ulps off NumPy's), which a
cancelling formula (X - tanh(X) near 0) magnifies: an ONNX value may also differ by four
ulps of its inputs' magnitude at that place (``input_scale``).
"""
import numpy as np

from fluid_nb.tensor.lod_rank_table import LoDRankTable
from fluid_nb.tensor.tensor import LoDTensor, LoDTensorArray

#: relative tolerance by float type (other float types: float32's)
RTOL = {np.dtype("float64"): 1e-12}
_SPECIALS = (("NaN", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf))


def assert_agree(where, want, got, elementwise=False, input_scale=None):
    """Fail with ``where`` and the first differences unless ``got`` agrees with the
    interpreter's ``want`` (arrays, LoDTensors, rank tables or tensor arrays); with
    ``elementwise`` each value is held to the tolerance on its own, ``input_scale`` (the
    magnitude of the inputs at each place) allowing four ulps of it besides."""
    if isinstance(want, LoDRankTable):
        assert isinstance(got, LoDRankTable) and list(got) == list(want) \
            and got.coarse_lod == want.coarse_lod, f"{where}: {got} != {want}"
        return
    if isinstance(want, LoDTensorArray):
        assert isinstance(got, LoDTensorArray) and len(got) == len(want), (
            f"{where}: {len(got)} items, {len(want)} interpreted")
        for k, (w, g) in enumerate(zip(want, got)):
            assert_agree(f"{where}[{k}]", w, g, elementwise, input_scale)
        return
    if isinstance(want, LoDTensor):
        if want.array is None:  # an array's slot nothing wrote
            assert got.array is None, f"{where}: a value the interpreter lacks"
            return
        assert got.lod() == want.lod(), f"{where}: LoD {got.lod()} != {want.lod()}"
    want, got = np.asarray(want), np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (
        f"{where}: {got.dtype}{list(got.shape)}, interpreted {want.dtype}{list(want.shape)}")
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=where)
        return
    for kind, test in _SPECIALS:
        differ = test(got) != test(want)
        if differ.any():
            raise AssertionError(f"{where}: {kind} not where the interpreter has it, at "
                                 f"{int(differ.sum())} of {want.size} places: "
                                 f"{_first(differ, want, got)}")
    finite = np.isfinite(want)
    rtol = RTOL.get(want.dtype, 1e-5)
    if elementwise:
        atol = rtol * float(np.finfo(want.dtype).smallest_normal)
        if input_scale is not None and np.shape(input_scale) == want.shape:
            ulps = 4 * float(np.finfo(want.dtype).eps) * np.asarray(input_scale, "float64")
            atol = np.maximum(atol, np.where(np.isfinite(ulps), ulps, 0.0))
    else:
        atol = rtol * 1e-2 * max(1.0, float(np.abs(want[finite]).max(initial=0.0)))
    close = np.isclose(got, want, rtol=rtol, atol=atol) | ~finite
    if not close.all():
        raise AssertionError(f"{where}: {int((~close).sum())} of {want.size} values differ "
                             f"by more than rtol {rtol:g}, atol {atol:.3g}: "
                             f"{_first(~close, want, got)}")


def _first(places, want, got, count=4):
    """The first ``count`` of ``places`` (a mask): index, target's and interpreter's value."""
    at = [tuple(int(i) for i in index) for index in np.argwhere(places)[:count]]
    return ", ".join(f"{list(i)}: {got[i]!r} (interpreted {want[i]!r})" for i in at)
