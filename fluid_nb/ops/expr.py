"""Elementwise formulas as data: one expression per op, rendered for every target.

An activation's or an elementwise op's meaning is written once, as an expression over its
inputs (``X``, ``Y``, ``OUT``, ``DOUT``), its float attributes (``attr("alpha")``) and
constants::

    relu:    maximum(X, 0)                        grad: DOUT * (OUT > 0)
    sigmoid: exp(minimum(X, 0)) / (1 + exp(-abs(X)))

The expression *is* the op: the interpreter's NumPy/CuPy kernel is Python generated from it
(:func:`numpy_function`), the native code generator renders it as C++ and CUDA, and ONNX
export as nodes (``rewriters/native/expressions.py``, ``rewriters/onnx/expressions.py``).
Each target renders the same tree, so they agree by construction on NaN (``maximum``
keeps a NaN operand, as NumPy's does), on overflow (write the stable form once and every
target gets it) and on the sign rules of comparisons; the differential test
(``tests/targets``) checks that the renderings agree on edge values.

Nodes are plain tuples ``(kind, *args)``; the vocabulary is :data:`FUNCTIONS` (one operand)
and :data:`BINARY` / :data:`COMPARE` (two), plus ``where``, ``const``, ``attr`` and ``var``.
A new function is added to the three renderers and the tables here, nowhere else.
"""
from ..errors import InvalidArgument, expected

#: one-operand functions: name -> NumPy spelling (``None``: a helper given to the kernel)
FUNCTIONS = {
    "neg": None, "exp": "exp", "log": "log", "log1p": "log1p", "sqrt": "sqrt", "abs": "abs",
    "tanh": "tanh", "sin": "sin", "cos": "cos", "atan": "arctan", "acos": "arccos",
    "asin": "arcsin", "floor": "floor", "ceil": "ceil", "round": "round", "sign": "sign",
    "erf": None, "softplus": None,
}
#: two-operand arithmetic: name -> Python operator (or NumPy function for max / min)
BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/", "maximum": "maximum",
          "minimum": "minimum"}
#: comparisons, giving booleans; ``and`` joins two of them
COMPARE = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "and": "&"}


class Expr:
    """A node of an elementwise formula. Arithmetic and comparison operators build nodes
    (``X * 2``, ``OUT > 0``); ``==`` keeps its identity meaning so nodes can be keys."""

    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node

    @property
    def kind(self):
        return self.node[0]

    @property
    def args(self):
        return self.node[1:]

    def __add__(self, other): return _binary("add", self, other)
    def __radd__(self, other): return _binary("add", other, self)
    def __sub__(self, other): return _binary("sub", self, other)
    def __rsub__(self, other): return _binary("sub", other, self)
    def __mul__(self, other): return _binary("mul", self, other)
    def __rmul__(self, other): return _binary("mul", other, self)
    def __truediv__(self, other): return _binary("div", self, other)
    def __rtruediv__(self, other): return _binary("div", other, self)
    def __neg__(self): return Expr(("neg", self))
    def __lt__(self, other): return _binary("lt", self, other)
    def __le__(self, other): return _binary("le", self, other)
    def __gt__(self, other): return _binary("gt", self, other)
    def __ge__(self, other): return _binary("ge", self, other)
    def __and__(self, other): return _binary("and", self, other)

    def __pow__(self, power):
        # small integer powers only, as products: every target computes them the same way
        if not isinstance(power, int) or not 1 <= power <= 4:
            raise InvalidArgument(expected("expression", "power", "an int from 1 to 4",
                                           repr(power)))
        result = self
        for _ in range(power - 1):
            result = result * self
        return result

    def __repr__(self):
        return render_text(self)


def lift(value):
    """``value`` as a node: an Expr as it is, a number as a constant."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgument(expected("expression", "operand", "an Expr or a number",
                                       type(value).__name__))
    return Expr(("const", float(value)))


def _binary(kind, left, right):
    return Expr((kind, lift(left), lift(right)))


def var(name):
    return Expr(("var", name))


def attr(name):
    """The op instance's float attribute ``name`` (a constant of the rendered code)."""
    return Expr(("attr", name))


def where(condition, if_true, if_false):
    return Expr(("where", lift(condition), lift(if_true), lift(if_false)))


def choose(condition, if_true, if_false):
    """``if_true`` or ``if_false`` as ``condition`` holds, a condition on the op's attributes
    alone (gelu's ``approximate``): decided once per op instance, so each target renders the
    chosen branch only."""
    condition = lift(condition)
    if variables(condition):
        raise InvalidArgument(expected("choose", "condition", "one over attributes only",
                                       render_text(condition)))
    return Expr(("choose", condition, lift(if_true), lift(if_false)))


def decide(condition, attrs):
    """The value of an attribute-only ``condition`` for an op instance's ``attrs``."""
    return bool(eval(_python(condition, {}), {"xp": None}, {"a": attrs}))


def maximum(a, b):
    """The larger operand; a NaN operand gives NaN (NumPy's ``maximum``)."""
    return _binary("maximum", a, b)


def minimum(a, b):
    """The smaller operand; a NaN operand gives NaN (NumPy's ``minimum``)."""
    return _binary("minimum", a, b)


def _function(name):
    def apply(value):
        return Expr((name, lift(value)))
    apply.__name__ = name
    return apply


exp, log, log1p, sqrt, abs_, tanh = (_function(n) for n in
                                     ("exp", "log", "log1p", "sqrt", "abs", "tanh"))
sin, cos, atan, acos, asin = (_function(n) for n in ("sin", "cos", "atan", "acos", "asin"))
floor, ceil, round_, sign, erf = (_function(n) for n in
                                  ("floor", "ceil", "round", "sign", "erf"))
#: ln(1 + e^x) computed without overflow (NumPy's logaddexp(0, x))
softplus = _function("softplus")

X, Y, OUT, DOUT = var("x"), var("y"), var("out"), var("dout")


def sigmoid(value):
    """1 / (1 + e^-v) written so that exp only ever sees a non-positive number: no
    overflow for very negative v and full precision for outputs near 0."""
    return exp(minimum(value, 0)) / (1 + exp(-abs_(value)))


def walk(expr):
    """Every node of ``expr``, each once, children before parents."""
    seen, order = set(), []

    def visit(e):
        if id(e) in seen:
            return
        seen.add(id(e))
        for arg in e.args:
            if isinstance(arg, Expr):
                visit(arg)
        order.append(e)
    visit(expr)
    return order


def variables(expr):
    """The names of the variables ``expr`` reads."""
    return {e.args[0] for e in walk(expr) if e.kind == "var"}


def render_text(expr):
    """The formula as a person reads it (an op's documentation)."""
    kind, args = expr.kind, expr.args
    if kind == "var":
        return {"x": "X", "y": "Y", "out": "Out", "dout": "dOut"}.get(args[0], args[0])
    if kind == "const":
        return repr(args[0]).rstrip("0").rstrip(".") if args[0] == int(args[0]) \
            else repr(args[0])
    if kind == "attr":
        return args[0]
    if kind == "neg":
        return f"-{render_text(args[0])}"
    if kind == "choose":
        return (f"({render_text(args[1])} if {render_text(args[0])} else "
                f"{render_text(args[2])})")
    if kind == "where":
        return (f"({render_text(args[1])} where {render_text(args[0])} else "
                f"{render_text(args[2])})")
    if kind in ("maximum", "minimum"):
        return f"{kind[:3]}({render_text(args[0])}, {render_text(args[1])})"
    symbol = {**BINARY, **COMPARE}.get(kind)
    if symbol is not None:
        return f"({render_text(args[0])} {symbol} {render_text(args[1])})"
    return f"{kind}({render_text(args[0])})"


# --- the interpreter's kernel: Python source over xp (NumPy or CuPy) ---------------------------
def _python(expr, names):
    kind, args = expr.kind, expr.args
    if kind == "var":
        return names[args[0]]
    if kind == "const":
        return repr(args[0])
    if kind == "attr":
        return f"a[{args[0]!r}]"
    if kind == "neg":
        return f"(-{_python(args[0], names)})"
    if kind == "where":
        return "xp.where({}, {}, {})".format(*(_python(a, names) for a in args))
    if kind == "choose":  # Python's conditional evaluates only the chosen branch
        return "({1} if {0} else {2})".format(*(_python(a, names) for a in args))
    if kind in ("maximum", "minimum"):
        return f"xp.{kind}({_python(args[0], names)}, {_python(args[1], names)})"
    symbol = {**BINARY, **COMPARE}.get(kind)
    if symbol is not None:
        return f"({_python(args[0], names)} {symbol} {_python(args[1], names)})"
    spelling = FUNCTIONS[kind]
    if spelling is None:  # a helper the kernel is given
        return f"{kind}_(xp, {_python(args[0], names)})"
    return f"xp.{spelling}({_python(args[0], names)})"


#: the NumPy ufuncs that may write into a temporary of their own (``out=``)
_UFUNCS = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide",
           "maximum": "maximum", "minimum": "minimum", "neg": "negative", "exp": "exp",
           "log": "log", "log1p": "log1p", "sqrt": "sqrt", "abs": "absolute", "tanh": "tanh",
           "sin": "sin", "cos": "cos", "atan": "arctan", "acos": "arccos", "asin": "arcsin",
           "floor": "floor", "ceil": "ceil", "sign": "sign"}


class _InPlace:
    """``expr`` as statements that reuse the temporaries they make: a float array a node
    made itself is the ``out=`` of the node that consumes it (dOut * (1 - Out * Out) makes
    one array, not three), as a hand-written kernel would. Only for formulas whose arrays
    all have one shape (an activation and its gradient)."""

    def __init__(self, names):
        self.names, self.lines, self.count = names, [], 0

    def temp(self, text):
        name = f"t{self.count}"
        self.count += 1
        self.lines.append(f"    {name} = {text}")
        return name

    def render(self, expr):
        """(text, kind): ``kind`` is "fresh" when ``text`` names a float array we made,
        "array" for another array (an input, a mask), "scalar" for a number."""
        kind, args = expr.kind, expr.args
        if kind in ("var", "const", "attr"):
            return _python(expr, self.names), "array" if kind == "var" else "scalar"
        operands = [self.render(a) for a in args]
        texts = [t for t, _ in operands]
        scalar = all(k == "scalar" for _, k in operands)
        if kind in _UFUNCS:
            reusable = [t for t, k in operands if k == "fresh"]
            out = f", out={reusable[0]}" if reusable else ""
            call = f"xp.{_UFUNCS[kind]}({', '.join(texts)}{out})"
            if reusable:
                self.lines.append(f"    {call}")
                return reusable[0], "fresh"
            return self.temp(call), "scalar" if scalar else "fresh"
        if kind in COMPARE:
            return self.temp(f"({texts[0]} {COMPARE[kind]} {texts[1]})"), \
                "scalar" if scalar else "array"
        if kind == "where":
            return self.temp("xp.where({}, {}, {})".format(*texts)), "array"
        if FUNCTIONS.get(kind, "") is None:  # a helper: it returns a new array
            return self.temp(f"{kind}_(xp, {texts[0]})"), "scalar" if scalar else "fresh"
        return self.temp(f"xp.{FUNCTIONS[kind]}({texts[0]})"), "scalar" if scalar else "array"


def _has_choice(expr):
    return any(e.kind == "choose" for e in walk(expr))


_special = None  # ops/_special.c, loaded when first needed


def _special_part():
    global _special
    if _special is None:
        from .. import c_parts
        _special = c_parts.load("fluid_nb.ops._special", "the kernels' C parts")
    return _special


def _erf(xp, x):
    """The error function elementwise (NumPy has none: the C library's per element on the
    host, ``ops/_special.c``, as math.erf gives it, which a half-precision or strided array
    takes per element; CuPy's own on the device: cupyx.scipy.special's, which the strict
    device stands in for as its module's ``scipy_special``)."""
    if xp.__name__ == "numpy":
        done = _special_part().erf(x)
        if done is not NotImplemented:
            return done
        import math
        return xp.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x.copy()
    special = getattr(xp, "scipy_special", None)
    if special is None:
        from cupyx.scipy import special
    return special.erf(x)


def _softplus(xp, x):
    return xp.logaddexp(0, x)


_HELPERS = {"erf_": _erf, "softplus_": _softplus}


def numpy_function(expr, params, cast_like, attrs=True, in_place=False):
    """A Python function ``f(xp, *params, a)`` computing ``expr`` on arrays (``a``: the op's
    attributes; ``attrs=False`` leaves it out), its result cast to the dtype of parameter
    ``cast_like`` (a comparison or a float of integers would otherwise change it).
    ``in_place``: the arrays all have one shape, so temporaries are reused (``_InPlace``).
    """
    unknown = variables(expr) - set(params)
    if unknown:
        raise InvalidArgument(expected("expression", "variables", f"among {list(params)}",
                                       sorted(unknown)))
    body = _python(expr, {p: p for p in params})
    signature = ", ".join(["xp", *params, *(["a"] if attrs else [])])
    cast = (f"    if result.dtype != {cast_like}.dtype:\n"
            f"        return result.astype({cast_like}.dtype)\n"
            f"    return result\n")
    statements = None
    if in_place and variables(expr) and not _has_choice(expr) and \
            expr.kind not in ("var", "const", "attr"):
        statements = _InPlace({p: p for p in params})
        final, _ = statements.render(expr)
        if len(statements.lines) < 2:  # one operation: no temporary to reuse
            statements = None
    if not variables(expr):  # a constant: an array of it, shaped as the parameter
        result = f"xp.full({cast_like}.shape, {body}, {cast_like}.dtype)"
        source = f"def kernel({signature}):\n    return {result}\n"
    elif statements is not None:
        # floats with dims only: an integer tensor's exp is a new float array, not its own
        # temporary, and a ufunc of 0-d arrays gives a scalar, which takes no out=
        source = (f"def kernel({signature}):\n"
                  f"    if {cast_like}.dtype.kind != 'f' or not {cast_like}.ndim:\n"
                  f"        result = {body}\n"
                  f"    else:\n" + "\n".join("    " + line for line in statements.lines)
                  + f"\n        result = {final}\n" + cast)
    elif not attrs:  # a binary op's operands share their type (Paddle requires it)
        source = f"def kernel({signature}):\n    return {body}\n"
    else:
        source = f"def kernel({signature}):\n    result = {body}\n" + cast
    namespace = dict(_HELPERS)
    exec(compile(source, f"<expression {render_text(expr)[:60]}>", "exec"), namespace)
    kernel = namespace["kernel"]
    kernel.source = source
    return kernel


def host_kernel(expr, params, kernel, cast_like=None, axis_rule=False):
    """``kernel`` (``kernel(ctx, *arrays)``, the Python one generated from ``expr`` over
    ``params``) run from C when ``expr`` is one NumPy ufunc over the parameters and
    constants (relu's ``maximum(X, 0)``, ``X + Y``): ``ops/_special.c``'s UfuncKernel
    calls the ufunc itself for NumPy arrays, and ``kernel`` for any other call. The same
    formula, so the same result: ``cast_like`` names the parameter whose dtype the result
    is cast to (as :func:`numpy_function`'s), ``axis_rule`` that ``kernel`` first applies
    Paddle's ``axis`` broadcast of X and Y, which the C kernel leaves to ``kernel`` unless
    NumPy's broadcast is the same. Any other formula: ``kernel`` itself."""
    ufunc = _UFUNCS.get(expr.kind)
    if ufunc is None or not all(isinstance(a, Expr) and a.kind in ("var", "const")
                                for a in expr.args):
        return kernel
    operands = tuple(params.index(a.args[0]) if a.kind == "var" else float(a.args[0])
                     for a in expr.args)
    import numpy
    reads_xp = "xp." in _python(expr, {p: p for p in params})
    return _special_part().UfuncKernel(
        getattr(numpy, ufunc), operands, kernel,
        -1 if cast_like is None else params.index(cast_like), axis_rule, reads_xp)


class Formula:
    """An op's elementwise meaning: ``expr`` over the input slots named in ``inputs``
    (expression variable -> slot), written to output slot ``output``. What the targets
    render, kept in the op's record (``OpDef.formula``); ``onnx`` optionally names an ONNX
    operator with exactly this meaning (``("LeakyRelu", {"alpha": "alpha"})``: its
    attributes from the op's), which export prefers to the expression's nodes."""

    __slots__ = ("expr", "inputs", "output", "onnx")

    def __init__(self, expr, inputs, output, onnx=None):
        self.expr, self.inputs, self.output, self.onnx = expr, dict(inputs), output, onnx

    def __repr__(self):
        return f"{self.output} = {render_text(self.expr)}"
