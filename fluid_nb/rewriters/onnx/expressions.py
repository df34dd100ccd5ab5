"""The ONNX lowering of every op whose record holds a formula (``OpDef.formula``, see
``ops/expr.py``): the ONNX operator the record names when it has one of exactly that
meaning (``Relu``, ``LeakyRelu(alpha)``), else the formula's own nodes. Either way nothing
about the op is written here: defining an activation in its record exports it.

Comparisons give booleans; where arithmetic takes one it is cast to the value type first
(ONNX's Mul takes no bool). A ``choose`` on attributes is decided for the op instance.
"""
from ...ops import expr as ex
from ...ops import registry
from .converters import CONVERTERS, ROW_WISE, _aligned_y, _in, _out

_FUNCTIONS = {"exp": "Exp", "log": "Log", "sqrt": "Sqrt", "abs": "Abs", "tanh": "Tanh",
              "sin": "Sin", "cos": "Cos", "atan": "Atan", "acos": "Acos", "asin": "Asin",
              "floor": "Floor", "ceil": "Ceil", "round": "Round", "sign": "Sign", "erf": "Erf",
              "softplus": "Softplus", "neg": "Neg"}
# ONNX's Max and Min give NaN when an operand is NaN, as NumPy's maximum and minimum
_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "maximum": "Max",
           "minimum": "Min"}
_COMPARE = {"lt": "Less", "le": "LessOrEqual", "gt": "Greater", "ge": "GreaterOrEqual",
            "and": "And"}


class _Renderer:
    def __init__(self, ctx, attrs, names, like):
        self.ctx, self.attrs, self.names, self.like = ctx, attrs, names, like

    def value(self, expr):
        """The tensor of ``expr`` as the value type (a comparison cast to it)."""
        name, boolean = self.render(expr)
        if not boolean:
            return name
        cast = self.ctx.tmp("as_value")
        self.ctx.node("Cast", [name], [cast], to=self.ctx.onnx_type(self.like))
        return cast

    def render(self, expr, out=None):
        """(tensor name, is boolean) of ``expr``; ``out`` names the root's output."""
        ctx, kind, args = self.ctx, expr.kind, expr.args
        if kind == "var":
            name = self.names[args[0]]
            if out is None:
                return name, False
            ctx.node("Identity", [name], [out])
            return out, False
        if kind in ("const", "attr"):
            number = args[0] if kind == "const" else float(self.attrs[args[0]])
            name = ctx.scalar(number, self.like)
            if out is not None:
                ctx.node("Expand", [name, self._shape()], [out])
                return out, False
            return name, False
        if kind == "choose":
            chosen = args[1] if ex.decide(args[0], self.attrs) else args[2]
            return self.render(chosen, out)
        target = out or ctx.tmp(kind)
        if kind == "where":
            cond, _ = self.render(args[0])
            ctx.node("Where", [cond, self.value(args[1]), self.value(args[2])], [target])
            return target, False
        if kind in _COMPARE:
            if kind == "and":
                ins = [self.render(a)[0] for a in args]
            else:
                ins = [self.value(a) for a in args]
            ctx.node(_COMPARE[kind], ins, [target])
            return target, True
        if kind in _BINARY:
            ctx.node(_BINARY[kind], [self.value(a) for a in args], [target])
            return target, False
        if kind == "log1p":
            self._log1p(self.value(args[0]), target)
            return target, False
        ctx.node(_FUNCTIONS[kind], [self.value(args[0])], [target])
        return target, False

    def _log1p(self, x, target):
        """ln(1 + x) to full precision without a Log1p (opset 17 has none): with u = 1 + x
        rounded, ln(u) * x / (u - 1) cancels u's rounding error; x itself where u = 1, and
        ln(u) where u is infinite."""
        ctx, one = self.ctx, self.ctx.scalar(1.0, self.like)
        u, shift, log_u, scaled, ratio, is_one, is_inf, finite = (ctx.tmp(n) for n in (
            "one_plus", "u_minus_one", "log_u", "scaled", "ratio", "u_is_one", "u_is_inf",
            "finite_u"))
        ctx.node("Add", [x, one], [u])
        ctx.node("Sub", [u, one], [shift])
        ctx.node("Log", [u], [log_u])
        ctx.node("Mul", [log_u, x], [scaled])
        ctx.node("Div", [scaled, shift], [ratio])
        ctx.node("IsInf", [u], [is_inf])
        ctx.node("Where", [is_inf, log_u, ratio], [finite])
        ctx.node("Equal", [u, one], [is_one])
        ctx.node("Where", [is_one, x, finite], [target])

    def _shape(self):
        shape = self.ctx.tmp("shape")
        self.ctx.node("Shape", [self.like], [shape])
        return shape


def convert_formula(op, ctx):
    formula = registry.get(op.type).formula
    names = {var: _in(op, slot) for var, slot in formula.inputs.items()}
    out = _out(op, formula.output)
    like = next(iter(names.values()))
    if "y" in names:  # Paddle's axis: Y's dims placed for ONNX's trailing broadcast
        names["y"] = _aligned_y(op, ctx, names["x"], names["y"])
    if formula.onnx is not None:
        onnx_op, attr_names = (formula.onnx, {}) if isinstance(formula.onnx, str) \
            else formula.onnx
        attrs = {onnx_name: float(op.attrs[name]) for onnx_name, name in attr_names.items()}
        ctx.node(onnx_op, list(names.values()), [out], **attrs)
        return None
    _Renderer(ctx, op.attrs, names, like).render(formula.expr, out)
    return None


def register_formulas():
    """Give every forward op whose record holds a formula the formula's converter (an op
    with a converter of its own keeps it); an elementwise map works row by row, so a
    padded sequence stays one."""
    for op_type, opdef in registry.all_ops().items():
        if opdef.formula is not None and opdef.formula.output == "Out" \
                and op_type not in CONVERTERS:
            CONVERTERS[op_type] = convert_formula
            ROW_WISE.add(op_type)


register_formulas()
