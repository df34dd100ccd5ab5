"""Where ops are said to belong: ``name_scope`` and ``device_guard``.

Ops appended inside ``with fluid.name_scope("encoder")`` carry ``op_namescope`` =
``"/encoder/"`` (nested scopes join: ``"/encoder/attention/"``; a name used again at the
same level becomes ``encoder_1``, as in Fluid), and ops inside
``with fluid.device_guard("cpu")`` carry ``op_device`` = ``"cpu"``. Both are attributes
of the op, saved with the program; views and tools read them. Outside any scope nothing
is added, so programs built without them stay as they were.
"""
import contextlib

from ..errors import InvalidArgument, InvalidType, expected

#: attribute -> value that every op appended now gets (empty outside the guards)
current = {}
_scope_path = []  # names of the open scopes, outermost first
_used_names = {}  # scope path (tuple) -> {name: times opened}


@contextlib.contextmanager
def name_scope(prefix=None):
    """Ops appended inside carry ``op_namescope`` naming this scope and its parents."""
    if prefix is not None and not isinstance(prefix, str):
        raise InvalidType(expected("name_scope", "prefix", "a str or None",
                                       f"{prefix!r} ({type(prefix).__name__})"))
    name = prefix or "_"
    siblings = _used_names.setdefault(tuple(_scope_path), {})
    times = siblings.get(name, 0)
    siblings[name] = times + 1
    _scope_path.append(name if times == 0 else f"{name}_{times}")
    old = current.get("op_namescope")
    current["op_namescope"] = "/" + "/".join(_scope_path) + "/"
    try:
        yield
    finally:
        _scope_path.pop()
        _restore("op_namescope", old)


@contextlib.contextmanager
def device_guard(device=None):
    """Ops appended inside carry ``op_device`` = ``device`` ("cpu", "gpu" or "gpu:N");
    None leaves the ops unannotated."""
    if device is not None and (not isinstance(device, str) or not (
            device == "cpu" or device == "gpu" or (device.startswith("gpu:")
                                                  and device[4:].isdigit()))):
        raise InvalidArgument(expected("device_guard", "device",
                                       "None, 'cpu', 'gpu' or 'gpu:N'", repr(device)))
    old = current.get("op_device")
    _restore("op_device", device)
    try:
        yield
    finally:
        _restore("op_device", old)


def _restore(attr, value):
    if value is None:
        current.pop(attr, None)
    else:
        current[attr] = value
