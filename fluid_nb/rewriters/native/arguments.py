"""The one check of the arguments the native compiler's public functions take.

``generate``, ``compile``, ``standalone_source`` and ``NativeProgram.run`` call
:func:`check` first, so a wrong argument is refused at the call with a typed error naming
it, before a trace run, a build or a file.
"""
from collections.abc import Mapping

from ...errors import InvalidType, Unimplemented, expected

TARGETS = ("cpp", "cuda")
_NOT_GIVEN = object()


def _names(where, what, values):
    """The names of ``values`` (variables or strings): a list or tuple of them."""
    if not isinstance(values, (list, tuple)):
        raise InvalidType(expected(where, what, "a list of variables or names",
                                   type(values).__name__))
    names = [getattr(value, "name", value) for value in values]
    for value, name in zip(values, names):
        if not isinstance(name, str):
            raise InvalidType(expected(where, f"an item of {what}", "a variable or a name",
                                       type(value).__name__))
    return names


def check(where, program=_NOT_GIVEN, feed=None, fetch=None, scope=None, target=_NOT_GIVEN,
          flags=(), fetch_required=False):
    """Refuse, with an InvalidType (an unknown target name: Unimplemented) naming the
    argument, what cannot be ``program`` (where given: a Program), ``feed`` (None or a
    mapping of names to values), ``fetch`` (a list of variables or names; None only where
    not required), ``scope`` (None or a Scope), ``target`` (where given: one of TARGETS)
    and ``flags`` (``(name, value)`` pairs that must be bools). Returns the fetch names
    (None for no fetch)."""
    from ...exec.scope import Scope
    from ...framework.program import Program
    if program is not _NOT_GIVEN and not isinstance(program, Program):
        raise InvalidType(expected(where, "program", "a Program", type(program).__name__))
    if feed is not None:
        if not isinstance(feed, Mapping):
            raise InvalidType(expected(where, "feed", "a dict of variable names to values",
                                       type(feed).__name__))
        for name in feed:
            if not isinstance(name, str):
                raise InvalidType(expected(where, "a feed's key", "a variable name (str)",
                                           type(name).__name__))
    if scope is not None and not isinstance(scope, Scope):
        raise InvalidType(expected(where, "scope", "a Scope", type(scope).__name__))
    if target is not _NOT_GIVEN and target not in TARGETS:
        # a target named but not built here is a request without an implementation
        error = Unimplemented if isinstance(target, str) else InvalidType
        raise error(expected(where, "target", " or ".join(map(repr, TARGETS)),
                             repr(target)[:80]))
    for name, value in flags:
        if not isinstance(value, bool):
            raise InvalidType(expected(where, name, "True or False", type(value).__name__))
    if fetch is None:
        if fetch_required:
            raise InvalidType(expected(where, "fetch_list", "a list of variables or names",
                                       "None"))
        return None
    return _names(where, "fetch_list", fetch)
