"""``fluid.layers.utils``: nested structures (lists, tuples, namedtuples, dicts of
Variables) as the RNN and decoder layers pass them around, and small argument helpers.

A structure's leaves are visited depth first; a dict's entries in the order of its sorted
keys (so two dicts with the same keys flatten alike whatever order they were built in).
"""
import collections.abc

from ...errors import InvalidArgument, InvalidType, expected

__all__ = ["is_sequence", "flatten", "pack_sequence_as", "map_structure",
           "assert_same_structure", "convert_to_list"]


def is_sequence(value):
    """True for what a structure nests: a dict, or a sequence that is not a string."""
    if isinstance(value, dict):
        return True
    return isinstance(value, collections.abc.Sequence) and not isinstance(value, str)


def _children(value):
    if isinstance(value, dict):
        return [value[key] for key in sorted(value)]
    return list(value)


def flatten(structure):
    """The leaves of ``structure`` in order (``[structure]`` for a single leaf)."""
    if not is_sequence(structure):
        return [structure]
    return [leaf for child in _children(structure) for leaf in flatten(child)]


def _rebuild(like, children):
    if isinstance(like, dict):
        return type(like)((key, child) for key, child in zip(sorted(like), children))
    if hasattr(like, "_fields"):  # a namedtuple takes its fields positionally
        return type(like)(*children)
    return type(like)(children)


def pack_sequence_as(structure, flat_sequence):
    """``flat_sequence``'s items put back into the shape of ``structure``."""
    leaves = list(flat_sequence)
    count = len(flatten(structure))
    if len(leaves) != count:
        raise InvalidArgument(expected("pack_sequence_as", "flat_sequence",
                                       f"{count} items (the structure's leaves)", len(leaves)))
    position = iter(leaves)

    def pack(item):
        if not is_sequence(item):
            return next(position)
        return _rebuild(item, [pack(child) for child in _children(item)])
    return pack(structure)


def map_structure(func, *structures):
    """``func`` applied leaf by leaf across ``structures`` (of one shape), packed like the
    first."""
    for other in structures[1:]:
        assert_same_structure(structures[0], other, check_types=False)
    return pack_sequence_as(structures[0],
                            [func(*leaves) for leaves in zip(*map(flatten, structures))])


def assert_same_structure(nest1, nest2, check_types=True):
    """InvalidArgument unless the two nest alike (and, with ``check_types``, with the same
    sequence types at each level)."""
    def walk(a, b, path):
        if is_sequence(a) != is_sequence(b):
            raise InvalidArgument(expected("assert_same_structure", f"nest2{path}",
                                           "a sequence" if is_sequence(a) else "a leaf",
                                           type(b).__name__))
        if not is_sequence(a):
            return
        if check_types and type(a) is not type(b):
            raise InvalidType(expected("assert_same_structure", f"nest2{path}",
                                       type(a).__name__, type(b).__name__))
        left, right = _children(a), _children(b)
        if len(left) != len(right):
            raise InvalidArgument(expected("assert_same_structure", f"nest2{path}",
                                           f"{len(left)} items", len(right)))
        for index, (x, y) in enumerate(zip(left, right)):
            walk(x, y, f"{path}[{index}]")
    walk(nest1, nest2, "")


def convert_to_list(value, n, name, dtype=int):
    """``value`` as a list of ``n`` values of ``dtype``: one value repeated, or a sequence of
    exactly ``n``."""
    if isinstance(value, dtype):
        return [value] * n
    try:
        values = list(value)
    except TypeError:
        raise InvalidType(expected("convert_to_list", name, f"a {dtype.__name__} or "
                                   f"{n} of them", type(value).__name__)) from None
    if len(values) != n or not all(isinstance(v, dtype) for v in values):
        raise InvalidArgument(expected("convert_to_list", name,
                                       f"{n} values of type {dtype.__name__}", values))
    return values
