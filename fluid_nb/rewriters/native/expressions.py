"""The native lowering of every op whose record holds a formula (``OpDef.formula``, see
``ops/expr.py``): the formula rendered once as a lambda that the C++ and the CUDA headers'
``map1`` / ``map2`` both take (``runtime/fluid_native_maps.h`` gives the two compilers the
same names), so an activation defined in its record is compiled with no line written here.

Constants and attributes become literals of the element type; a ``choose`` on attributes
is decided for the op instance, so only the chosen branch is compiled.
"""
from ...ops import expr as ex
from ...ops import registry
from .emitter_table import EMITTERS, NoEmitter
from .emitters import _broadcast, _float, _one
from .env import count

#: how each function is spelled in the generated code (both targets: see the maps header)
_CALLS = {"exp": "exp_value", "log": "log", "log1p": "log1p", "sqrt": "sqrt", "abs": "fabs",
          "tanh": "tanh_value", "sin": "sin", "cos": "cos", "atan": "atan", "acos": "acos",
          "asin": "asin", "floor": "floor", "ceil": "ceil", "round": "rint",
          "sign": "sign_value", "erf": "erf", "softplus": "softplus_value"}
_CALLS2 = {"maximum": "max_value", "minimum": "min_value"}
_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "lt": "<", "le": "<=",
              "gt": ">", "ge": ">=", "and": "&&"}


def render(expr, attrs, ctype):
    """``expr`` as a C++ expression over variables of type ``ctype`` (float or double)."""
    kind, args = expr.kind, expr.args
    if kind == "var":
        return args[0]
    if kind == "const":
        return _float(args[0], ctype)
    if kind == "attr":
        value = attrs.get(args[0])
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise NoEmitter(f"attribute {args[0]!r} is {value!r}, a number expected")
        return _float(value, ctype)
    if kind == "neg":
        return f"(-{render(args[0], attrs, ctype)})"
    if kind == "choose":
        return render(args[1] if ex.decide(args[0], attrs) else args[2], attrs, ctype)
    if kind == "where":  # a boolean condition picks; both sides have the element type
        cond, yes, no = (render(a, attrs, ctype) for a in args)
        return f"({cond} ? {ctype}({yes}) : {ctype}({no}))"
    if kind in _CALLS2:
        left, right = (render(a, attrs, ctype) for a in args)
        return f"{_CALLS2[kind]}<{ctype}>({left}, {right})"
    if kind in _OPERATORS:
        left, right = (render(a, attrs, ctype) for a in args)
        return f"({left} {_OPERATORS[kind]} {right})"
    return f"{_CALLS[kind]}({render(args[0], attrs, ctype)})"


def emit_formula(op, env):
    formula = registry.get(op.type).formula
    inputs = [(var, _one(op, slot)) for var, slot in formula.inputs.items()]
    out = _one(op, formula.output, "outputs")
    if any(name is None for _, name in inputs):
        raise NoEmitter("an input of the formula is not given")
    first = inputs[0][1] if inputs else out
    ctype = env.ctype(first)
    if ctype not in ("float", "double"):
        raise NoEmitter(f"{first} is {ctype}: formulas are compiled for float types")
    body = render(formula.expr, op.attrs, ctype)
    size = count(env.shape(first))
    lines = env.resize_like(out, first)
    params = ", ".join(f"{ctype} {var}" for var, _ in inputs)
    pointers = ", ".join(env.ptr(name) for _, name in inputs)
    function = f"FLUID_LAMBDA({params}) -> {ctype} {{ return {body}; }}"
    if formula.inputs == {"x": "X", "y": "Y"} and not env.same_shape(*dict(inputs).values()):
        # Paddle's axis broadcast: X as [pre, n, post], Y as [n]
        pre, n, post = _broadcast(op, env, *dict(inputs).values())
        return lines + [f"broadcast({pointers}, {env.ptr(out)}, {pre}, {n}, {post}, "
                        f"{function});"]
    call = {1: "map1", 2: "map2"}.get(len(inputs))
    if call is None:
        raise NoEmitter(f"a formula of {len(inputs)} inputs (one or two expected)")
    return lines + [f"{call}({pointers}, {env.ptr(out)}, {size}, {function});"]


def register_formulas():
    """Give every op whose record holds a formula the formula's emitter (an op with an
    emitter of its own keeps it)."""
    for op_type, opdef in registry.all_ops().items():
        if opdef.formula is not None and op_type not in EMITTERS:
            EMITTERS[op_type] = emit_formula


register_formulas()
