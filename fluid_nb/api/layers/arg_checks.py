"""Argument checks for the layer functions: one place that says what a layer accepts.

A layer declares its rules next to its definition::

    @checks(input=VARIABLES, size=POSITIVE_INT, act=ACTIVATION)
    def fc(input, size, ...):

and a call with a wrong type, range or name is refused before anything is added to the
program, as ``InvalidArgument`` naming the layer and the argument:
``fc: size expected a positive int, but received 2.5 (float)``; an argument of the wrong
type (a string for that size, a list for a Variable) is ``InvalidType``, also a
``TypeError`` as in Fluid. Only the arguments the caller passed are checked (the defaults
are valid by construction).

A rule is a function ``rule(value) -> None`` that raises :class:`Refused` with what it
expected; :func:`checks` adds the layer and argument names.
"""
import functools
import inspect
import math
import numbers

import numpy as np

from ...errors import InvalidArgument, InvalidType, expected
from ...framework.program import Variable
from ...tensor.dtypes import DATA_TYPES, convert_dtype


class Refused(Exception):
    """A rule's verdict: ``want`` is what the argument should have been; ``wrong_type``
    when the value is not even of a type the argument takes (rather than out of range)."""

    def __init__(self, want, wrong_type=False):
        super().__init__(want)
        self.want = want
        self.wrong_type = wrong_type


def _shown(value):
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def check(where, name, value, rule):
    """Apply one rule outside a decorated layer (arguments a layer works out itself)."""
    try:
        rule(value)
    except Refused as refused:
        raise _refusal(where, name, value, refused) from None


def _refusal(where, name, value, refused):
    error = InvalidType if refused.wrong_type else InvalidArgument
    return error(expected(where, name, refused.want, _shown(value)))


def _fits(args, kwargs, count, plain, position, required):
    """Whether a call fits a layer's signature plainly (``plain``: only positional-or-keyword
    parameters, ``count`` of them; ``position``: name -> index; ``required``: (index, name)
    of those without a default): no argument unknown, given twice or missing (else
    Signature.bind says which)."""
    if not plain or len(args) > count:
        return False
    given = len(args)
    for name in kwargs:
        index = position.get(name)
        if index is None or index < given:
            return False
    for index, name in required:
        if index >= given and name not in kwargs:
            return False
    return True


def checks(**rules):
    """Decorate a layer function: check each named argument the caller passes by its rule.
    The layer's ``__check_dtypes__(slots, check)`` gives it dtype rules to check first
    (``dtype_rules``): ``(index, name, allowed dtypes, their names)`` per argument, and
    ``check(where, name, value, allowed, names)``, which refuses a value the quick test (a
    Variable of an allowed dtype) does not pass, or lets it through."""
    def decorate(fn):
        signature = inspect.signature(fn)
        unknown = set(rules) - set(signature.parameters)
        if unknown:
            raise TypeError(f"checks: {fn.__name__} has no arguments {sorted(unknown)}")
        where = fn.__name__
        plan = None  # (parameter count, plain, position, required, ruled): at the first call
        dtyped, dtype_check = (), None

        def planned():
            # a layer of plain parameters (most) matches a call's arguments to them itself:
            # Signature.bind costs a layer call about as much as appending its op (worked
            # out when the layer is first called: most of the 267 never are)
            nonlocal plan
            params = list(signature.parameters.values())
            position = {p.name: i for i, p in enumerate(params)}
            plan = (len(params), all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params),
                    position, [(i, p.name) for i, p in enumerate(params)
                               if p.default is p.empty],
                    sorted((position[name], name, rule) for name, rule in rules.items()))
            return plan

        def check_dtypes(slots, check):
            nonlocal dtyped, dtype_check
            dtyped, dtype_check = tuple(slots), check
            by_count.clear()

        # positional argument count -> the checks of a call of that many arguments and no
        # keywords, when such a call fits the signature (False when it does not): the
        # dtype rules, each with whether the call gives its argument, and the rules of the
        # arguments it gives (the commonest call, checked without matching names)
        by_count = {}

        def positional_plan(given):
            count, plain, position, required, ruled = plan or planned()
            quick = by_count[given] = plain and len(required) <= given <= count and (
                tuple((index, name, allowed, names, index < given)
                      for index, name, allowed, names in dtyped),
                tuple((index, name, rule) for index, name, rule in ruled if index < given))
            return quick

        # (one frame for both kinds of check, each rule called here: a layer's checks cost
        # more than its op's record when each was a call of its own)
        @functools.wraps(fn)
        def layer(*args, **kwargs):
            if not kwargs:
                quick = by_count.get(len(args))
                if quick is None:
                    quick = positional_plan(len(args))
                if quick:
                    for index, name, allowed, names, given in quick[0]:
                        value = args[index] if given else None
                        if value.__class__ is not Variable or value.dtype not in allowed:
                            dtype_check(where, name, value, allowed, names)
                    for index, name, rule in quick[1]:
                        value = args[index]
                        try:
                            rule(value)
                        except Refused as refused:
                            raise _refusal(where, name, value, refused) from None
                    return fn(*args)
            count, plain, position, required, ruled = plan or planned()
            given = len(args)
            for index, name, allowed, names in dtyped:
                value = args[index] if index < given else kwargs.get(name)
                if value.__class__ is not Variable or value.dtype not in allowed:
                    dtype_check(where, name, value, allowed, names)
            if not (plain and not kwargs and len(required) <= given <= count) and \
                    not _fits(args, kwargs, count, plain, position, required):
                try:
                    bound = signature.bind(*args, **kwargs)
                except TypeError as exc:
                    raise InvalidType(expected(where, "arguments", f"the signature "
                                               f"{where}{signature}", str(exc))) from None
                for name, value in bound.arguments.items():
                    rule = rules.get(name)
                    if rule is not None:
                        check(where, name, value, rule)
            else:
                try:
                    for index, name, rule in ruled:
                        if index < given:
                            value = args[index]
                        elif name in kwargs:
                            value = kwargs[name]
                        else:
                            continue
                        rule(value)
                except Refused as refused:
                    raise _refusal(where, name, value, refused) from None
            return fn(*args, **kwargs)
        layer.__check_dtypes__ = check_dtypes
        return layer
    return decorate


# --- rules ---------------------------------------------------------------------------------
_INT_ONLY = frozenset((int,))


def plain_ints(value):
    """Whether ``value`` is a list or tuple of plain ints: the usual dims or axes, told in a
    few C calls rather than a call per item."""
    return value.__class__ in (list, tuple) and _INT_ONLY.issuperset(map(type, value))


def _is_int(value):
    # plain ints first: the ABC check behind numbers.Integral costs more than the rest
    return value.__class__ is int or (
        isinstance(value, (numbers.Integral, np.integer))
        and not isinstance(value, (bool, np.bool_)))


def _is_real(value):
    cls = value.__class__
    return cls is float or cls is int or (
        isinstance(value, (numbers.Real, np.floating, np.integer))
        and not isinstance(value, (bool, np.bool_)))


def optional(rule):
    """``rule``, or None."""
    def allowed(value):
        if value is not None:
            try:
                rule(value)
            except Refused as refused:
                raise Refused(f"None or {refused.want}", refused.wrong_type) from None
    return allowed


def int_in(low=None, high=None, want=None):
    """An int (not a bool) within [low, high]."""
    def rule(value):
        if not _is_int(value):
            # a number that is not an int (2.5) is a wrong value; a string or None a wrong type
            raise Refused(want or _range_text("an int", low, high),
                          wrong_type=not _is_real(value))
        if (low is not None and value < low) or (high is not None and value > high):
            raise Refused(want or _range_text("an int", low, high))
    return rule


def real_in(low=None, high=None, want=None, finite=True):
    """A real number (not a bool, not a string) within [low, high]."""
    def rule(value):
        if not _is_real(value):
            raise Refused(want or _range_text("a finite number", low, high), wrong_type=True)
        if (finite and not math.isfinite(float(value))) or (
                low is not None and value < low) or (high is not None and value > high):
            raise Refused(want or _range_text("a finite number", low, high))
    return rule


def int_typed(rule):
    """``rule`` for an argument Fluid 1.8 type-checks as an int (``check_type(v, int)``):
    a float such as 2.5 is a wrong type there, not a wrong value."""
    def allowed(value):
        try:
            rule(value)
        except Refused as refused:
            raise Refused(refused.want, refused.wrong_type or (
                not isinstance(value, Variable) and not _is_int(value))) from None
    return allowed


def float_typed(rule):
    """``rule`` for an argument Fluid 1.8 type-checks as a float (``isinstance(v, float)``):
    an int such as 2 is a wrong type there."""
    def allowed(value):
        if not isinstance(value, (float, np.floating)):
            raise Refused("a float", wrong_type=True)
        rule(value)
    return allowed


def _range_text(kind, low, high):
    if low is not None and high is not None:
        return f"{kind} in [{low}, {high}]"
    if low is not None:
        return f"{kind} >= {low}"
    if high is not None:
        return f"{kind} <= {high}"
    return kind


def one_of(*choices):
    """One of the given values (strings compared exactly)."""
    def rule(value):
        if not any(isinstance(value, type(c)) and isinstance(value, bool) == isinstance(c, bool)
                   for c in choices):  # (True == 1: a bool is not an int choice, nor back)
            raise Refused("one of " + ", ".join(repr(c) for c in choices), wrong_type=True)
        if value not in choices:
            raise Refused("one of " + ", ".join(repr(c) for c in choices))
    return rule


def ints(length=None, low=None, what="ints"):
    """A list or tuple of ints (``length`` of them when given), each >= ``low``."""
    def rule(value):
        if plain_ints(value):
            mistyped = False
        else:
            mistyped = not isinstance(value, (list, tuple)) or not all(_is_int(v)
                                                                       for v in value)
        if mistyped or (length is not None and len(value) != length) or (
                low is not None and value and min(value) < low):
            count = f"{length} " if length is not None else ""
            bound = f" each >= {low}" if low is not None else ""
            raise Refused(f"a list of {count}{what}{bound}", mistyped)
    return rule


def int_or_ints(length, low=None):
    """An int, or ``length`` ints (any number when None), each >= ``low`` (a filter size,
    a stride, reduction dims)."""
    one, many = int_in(low), ints(length, low)

    def rule(value):
        try:
            (one if not isinstance(value, (list, tuple)) else many)(value)
        except Refused as refused:
            bound = f" >= {low}" if low is not None else ""
            count = f"{length} " if length is not None else ""
            raise Refused(f"an int{bound} or a list of {count}such ints",
                          refused.wrong_type) from None
    return rule


def boolean(value):
    """True or False (a NumPy bool too)."""
    if not isinstance(value, (bool, np.bool_)):
        raise Refused("a bool", wrong_type=True)


def string(value):
    if not isinstance(value, str):
        raise Refused("a str", wrong_type=True)


def variable(value):
    if not isinstance(value, Variable):
        raise Refused("a Variable", wrong_type=True)


def variables(value):
    """A Variable or a non-empty list of Variables."""
    if isinstance(value, Variable):
        return
    if not isinstance(value, (list, tuple)) or not value or not all(
            isinstance(v, Variable) for v in value):
        raise Refused("a Variable or a non-empty list of Variables",
                      wrong_type=not isinstance(value, (list, tuple)) or bool(value))


def variable_list(value):
    """A non-empty list of Variables."""
    if not isinstance(value, (list, tuple)) or not value or not all(
            isinstance(v, Variable) for v in value):
        raise Refused("a non-empty list of Variables",
                      wrong_type=not isinstance(value, (list, tuple)) or bool(value))


def dtype(value):
    """A data type Fluid knows: a name ('float32'), a NumPy dtype or a VarType."""
    try:
        known = value is not None and not isinstance(value, (bool, float)) \
            and convert_dtype(value) in DATA_TYPES
    except InvalidArgument:
        known = False
    if not known:  # a name Fluid does not know is a wrong value; a number a wrong type
        named = isinstance(value, (str, np.dtype, type)) or type(value).__name__ == "VarType"
        raise Refused("a data type such as 'float32' or 'int64'", wrong_type=not named)


def shape(value):
    """A list of dims, each a positive int or -1 (unknown)."""
    if not isinstance(value, (list, tuple)) or not all(
            _is_int(d) and (d > 0 or d == -1) for d in value):
        raise Refused("a list of ints, each positive or -1", wrong_type=not isinstance(
            value, (list, tuple)) or not all(_is_int(d) for d in value))


def known_activations():
    """The op types ``act=`` may name: the ops whose records say so (``api["act"]``), and
    softmax (read from the op registry, so defining one makes it accepted)."""
    from ...ops import registry
    return tuple(registry.ops_with_api("act")) + (
        ("softmax",) if registry.find("softmax") is not None else ())


def activation(value):
    """None, an activation op type, or a dict with 'type' naming one (and its attributes)."""
    if value is None:
        return
    name = value.get("type") if isinstance(value, dict) else value
    if not isinstance(name, str) or name not in known_activations():
        raise Refused("None or an activation name, one of " + ", ".join(known_activations()),
                      wrong_type=not isinstance(name, str))


# the rules layers use most, by what they mean
POSITIVE_INT = int_in(1, want="a positive int")
NON_NEGATIVE_INT = int_in(0, want="an int >= 0")
INT = int_in()
NUMBER = real_in()
PROBABILITY = real_in(0.0, 1.0, want="a number in [0, 1]")
NAME = optional(string)


def or_variable(rule):
    """``rule``, or a Variable holding the value at run time."""
    def allowed(value):
        if not isinstance(value, Variable):
            try:
                rule(value)
            except Refused as refused:
                raise Refused(f"{refused.want} or a Variable", refused.wrong_type) from None
    return allowed


def dims(low):
    """A shape given as a Variable, or a list whose dims are ints >= ``low`` or Variables
    (dims known only at run time)."""
    def rule(value):
        if isinstance(value, Variable) or plain_ints(value) and min(value, default=low) >= low:
            return
        if not isinstance(value, (list, tuple)) or not all(
                isinstance(d, Variable) or (_is_int(d) and d >= low) for d in value):
            raise Refused(f"a list of ints >= {low} (or Variables), or a Variable",
                          wrong_type=not isinstance(value, (list, tuple)) or not all(
                              isinstance(d, Variable) or _is_int(d) for d in value))
    return rule


def sections(value):
    """``split``'s num_or_sections: a count > 1, or a list of section sizes."""
    if _is_int(value) and value > 1:
        return
    if isinstance(value, (list, tuple)) and value and all(
            isinstance(s, Variable) or (_is_int(s) and s >= -1) for s in value):
        return
    raise Refused("an int > 1 or a non-empty list of section sizes (ints >= -1 or Variables)",
                  wrong_type=not (_is_int(value) or isinstance(value, (list, tuple))))


def one_of_lower(*choices):
    """One of ``choices``, in any letter case."""
    def rule(value):
        if not isinstance(value, str) or value.lower() not in choices:
            raise Refused("one of " + ", ".join(repr(c) for c in choices),
                          wrong_type=not isinstance(value, str))
    return rule


def per_conv(rule):
    """One value for every conv of a group, or a list with one value per conv."""
    def allowed(value):
        for item in (value if isinstance(value, (list, tuple)) else [value]):
            try:
                rule(item)
            except Refused as refused:
                raise Refused(f"{refused.want}, or a list of them (one per conv)",
                              refused.wrong_type) from None
    return allowed


def data_shape(value):
    """A data layer's shape: ints >= 1, with -1 or None for a dim known only when fed."""
    if not isinstance(value, (list, tuple)) or not all(
            d is None or (_is_int(d) and (d >= 1 or d == -1 or d == 0)) for d in value):
        raise Refused("a list of dims, each an int >= 0, -1 or None",
                      wrong_type=not isinstance(value, (list, tuple)) or not all(
                          d is None or _is_int(d) for d in value))
