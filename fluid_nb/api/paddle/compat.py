"""``paddle.compat``: the Python 2/3 text helpers Fluid 1.x scripts import (``import
paddle.compat as cpt``). On Python 3 text is ``str`` and bytes are ``bytes``."""
import math

__all__ = ["long_type", "to_text", "to_bytes", "round", "floor_division",
           "get_exception_message"]

# Python 2's two integer types are one on Python 3 (``cpt.long_type(idx)`` is ``int(idx)``)
int_type = int
long_type = int


def _convert(obj, one, inplace):
    if isinstance(obj, list):
        if inplace:
            obj[:] = [one(item) for item in obj]
            return obj
        return [one(item) for item in obj]
    if isinstance(obj, set):
        converted = {one(item) for item in obj}
        if inplace:
            obj.clear()
            obj.update(converted)
            return obj
        return converted
    if isinstance(obj, dict):
        return {one(k): one(v) for k, v in obj.items()}
    return one(obj)


def to_text(obj, encoding="utf-8", inplace=False):
    """``bytes`` (also inside a list, set or dict) decoded to ``str``; other values as they are."""
    def one(item):
        return item.decode(encoding) if isinstance(item, bytes) else item
    return None if obj is None else _convert(obj, one, inplace)


def to_bytes(obj, encoding="utf-8", inplace=False):
    """``str`` (also inside a list, set or dict) encoded to ``bytes``; other values as they are."""
    def one(item):
        return item.encode(encoding) if isinstance(item, str) else item
    return None if obj is None else _convert(obj, one, inplace)


def round(x, d=0):
    """Round half away from zero: ``round(2.5) == 3.0`` (Python 3's ``round`` gives 2)."""
    p = 10 ** d
    if x > 0.0:
        return float(math.floor(x * p + 0.5)) / p
    if x < 0.0:
        return float(math.ceil(x * p - 0.5)) / p
    return math.copysign(0.0, x)


def floor_division(x, y):
    return x // y


def get_exception_message(exc):
    """The message of ``exc`` (``str(exc)``)."""
    if exc is None:
        raise ValueError("get_exception_message: exc expected an exception, but received None")
    return str(exc)
