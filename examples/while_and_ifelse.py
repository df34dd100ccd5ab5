"""Control flow in Fluid 1.x: While, IfElse, Switch, cond and while_loop, checked against NumPy.

In Fluid, control flow is part of the program: a loop or a branch is an operator (``while``,
``conditional_block``) that holds a nested block of operators and runs it in a child scope.
This tour builds one small program per construct, runs it, and compares with NumPy:

1. ``While`` with a step counter and a tensor array: the partial sums of the exponential
   series, ``S_k(x) = sum_{j<=k} x^j / j!`` for k = 0..N-1, each step appending ``S_k`` to an
   array. The listing of the program shows the ``while`` op and its sub-block.
2. Backward through the loop: ``append_backward`` adds a ``while_grad`` op that runs the
   body's gradient ops step by step in reverse; ``dS_{N-1}/dx = S_{N-2}(x)``.
3. ``IfElse``: a per-row branch. Rows with ``x < 0`` take ``0.1 * x``, the others ``x * x``;
   the rows are split into the two branches and merged back in order.
4. ``Switch``: a piecewise-constant learning rate of the global step (1.0 below step 10,
   0.5 below 20, 0.1 after): the first case whose condition holds assigns the value.
5. ``cond`` and ``while_loop`` (the functional forms): ``x * 2 if x > 5 else x - 1``, and
   Newton's square root, ``y <- (y + a / y) / 2`` until ``|y * y - a| <= 1e-9``: a loop
   whose number of steps depends on the data.

    python examples/while_and_ifelse.py
"""
import math
import os
import sys

import numpy as np

try:
    import fluid_nb as fluid
except ImportError:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import fluid_nb as fluid

layers = fluid.layers

X_SERIES = np.array([[-1.0, 0.5, 1.0, 2.0]], dtype="float64")
N_TERMS = 8
X_ROWS = np.array([[-2.0], [3.0], [-0.5], [0.0], [1.5]], dtype="float32")
SWITCH_STEPS = [0, 5, 10, 15, 19, 20, 40]
BOUNDARIES, LR_VALUES = [10, 20], [1.0, 0.5, 0.1]
COND_INPUTS = [3.0, 7.0]
NEWTON_INPUTS = [2.0, 10.0, 1e4]
NEWTON_TOL = 1e-9


def run(program, startup, feed, fetch_list, return_numpy=True):
    """Run ``startup`` then ``program`` once, in a fresh scope."""
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return exe.run(program, feed=feed, fetch_list=fetch_list, scope=scope,
                   return_numpy=return_numpy)


# --- 1 and 2: While, a tensor array, and its gradient ------------------------------------------
def build_exp_series(n_terms):
    """S_k = S_{k-1} + x^k / k!, one step per k; each S_k is written to an array."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = layers.data(name="x", shape=[1, 4], dtype="float64", append_batch_size=False,
                        stop_gradient=False)
        i = layers.fill_constant(shape=[1], dtype="int64", value=0)
        n = layers.fill_constant(shape=[1], dtype="int64", value=n_terms)
        term = layers.fill_constant(shape=[1, 4], dtype="float64", value=1.0)  # x^0 / 0!
        total = layers.fill_constant(shape=[1, 4], dtype="float64", value=1.0)
        # fill_constant makes constants (stop_gradient); the loop overwrites these two with
        # values that depend on x, so the gradient must be allowed through them
        term.stop_gradient = total.stop_gradient = False
        partial_sums = layers.create_array("float64")
        layers.array_write(total, i, array=partial_sums)
        layers.increment(i, value=1.0, in_place=True)
        cond = layers.less_than(i, n)
        loop = layers.While(cond)
        with loop.block():
            k = layers.cast(i, "float64")
            # term_k = term_{k-1} * x / k: the loop carries the term, not a power of x
            new_term = layers.elementwise_div(layers.elementwise_mul(term, x), k)
            new_total = layers.elementwise_add(total, new_term)
            layers.array_write(new_total, i, array=partial_sums)
            # a variable of the parent block updated in the body is what the next step reads
            layers.assign(new_term, term)
            layers.assign(new_total, total)
            layers.increment(i, value=1.0, in_place=True)
            layers.less_than(i, n, cond=cond)
        loss = layers.reduce_sum(total)
    return main, startup, partial_sums, total, loss


def exp_partial_sums(x, n_terms):
    """NumPy: the partial sums S_0..S_{n-1} of exp(x), row k = S_k."""
    terms = [x ** j / math.factorial(j) for j in range(n_terms)]
    return np.cumsum(np.stack(terms), axis=0)


def while_loop_demo(x=X_SERIES, n_terms=N_TERMS):
    main, startup, partial_sums, total, loss = build_exp_series(n_terms)
    # The gradient of sum(S_{N-1}) with respect to x, through the loop.
    with fluid.program_guard(main, startup):
        fluid.backward.append_backward(loss)
    fluid.verify(main)
    array, last, grad = run(main, startup, {"x": x},
                            [partial_sums, total, "x@GRAD"], return_numpy=False)
    steps = np.stack([np.asarray(a).reshape(4) for a in array])
    return {
        "program": main,
        "listing": str(main),
        "while_block": while_block(main),
        "partial_sums": steps,
        "partial_sums_numpy": exp_partial_sums(x.reshape(4), n_terms),
        "sum": np.asarray(last).reshape(4),
        "grad": np.asarray(grad).reshape(4),
        # d/dx sum_{j<N} x^j / j! = sum_{j<N-1} x^j / j!
        "grad_numpy": exp_partial_sums(x.reshape(4), n_terms - 1)[-1],
        "exp": np.exp(x.reshape(4)),
    }


def while_block(program):
    """The listing of the sub-block the first ``while`` op runs."""
    op = next(op for op in program.global_block().ops if op.type == "while")
    return str(op.block_attr("sub_block"))


# --- 3: IfElse, per row -----------------------------------------------------------------------
def ifelse_demo(x=X_ROWS):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        data = layers.data(name="x", shape=[1], dtype="float32")
        zero = layers.fill_constant(shape=[1], dtype="float32", value=0.0)
        is_negative = layers.less_than(data, zero)  # bool [N, 1]: one condition per row
        ie = layers.IfElse(is_negative)
        with ie.true_block():
            rows = ie.input(data)  # only the rows where the condition holds
            ie.output(layers.scale(rows, scale=0.1))
        with ie.false_block():
            rows = ie.input(data)
            ie.output(layers.elementwise_mul(rows, rows))
        out, = ie()  # both branches' rows, merged back in the input order
    fluid.verify(main)
    got, = run(main, startup, {"x": x}, [out])
    return {"out": np.asarray(got), "numpy": np.where(x < 0, 0.1 * x, x * x)}


# --- 4: Switch, a piecewise learning rate -----------------------------------------------------
def build_piecewise_lr(boundaries=BOUNDARIES, values=LR_VALUES):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        step = layers.data(name="step", shape=[1], dtype="float32", append_batch_size=False)
        lr = layers.create_global_var(shape=[1], value=0.0, dtype="float32",
                                      persistable=True, name="learning_rate")
        with layers.Switch() as switch:
            for boundary, value in zip(boundaries, values):
                below = layers.less_than(
                    step, layers.fill_constant(shape=[1], dtype="float32", value=boundary))
                with switch.case(below):
                    layers.assign(layers.fill_constant([1], "float32", value), output=lr)
            with switch.default():
                layers.assign(layers.fill_constant([1], "float32", values[-1]), output=lr)
    return main, startup, lr


def switch_demo(steps=SWITCH_STEPS):
    main, startup, lr = build_piecewise_lr()
    fluid.verify(main)
    got = [float(np.asarray(run(main, startup, {"step": np.array([s], "float32")}, [lr])[0])
                 .reshape(-1)[0]) for s in steps]
    want = [LR_VALUES[int(np.searchsorted(BOUNDARIES, s, side="right"))] for s in steps]
    return {"steps": list(steps), "lr": got, "numpy": want}


# --- 5: cond and while_loop -------------------------------------------------------------------
def cond_demo(inputs=COND_INPUTS):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = layers.data(name="x", shape=[1], dtype="float32", append_batch_size=False)
        five = layers.fill_constant(shape=[1], dtype="float32", value=5.0)
        out = layers.cond(layers.greater_than(x, five),
                          lambda: layers.scale(x, scale=2.0),
                          lambda: layers.scale(x, bias=-1.0))
    fluid.verify(main)
    got = [float(np.asarray(run(main, startup, {"x": np.array([v], "float32")}, [out])[0])
                 .reshape(-1)[0]) for v in inputs]
    return {"inputs": list(inputs), "out": got, "numpy": [v * 2 if v > 5 else v - 1
                                                          for v in inputs]}


def newton_sqrt_numpy(a, tol=NEWTON_TOL):
    """Python: the same iteration, and how many steps it took."""
    y, steps = a, 0
    while abs(y * y - a) > tol:
        y, steps = (y + a / y) / 2.0, steps + 1
    return y, steps


def newton_demo(inputs=NEWTON_INPUTS):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        a = layers.data(name="a", shape=[1], dtype="float64", append_batch_size=False)
        tol = layers.fill_constant(shape=[1], dtype="float64", value=NEWTON_TOL)
        y = layers.assign(a)  # the first guess
        steps = layers.fill_constant(shape=[1], dtype="int64", value=0)

        def not_converged(y, steps):
            return layers.greater_than(layers.abs(layers.elementwise_sub(y * y, a)), tol)

        def newton_step(y, steps):  # y <- (y + a / y) / 2
            better = layers.scale(layers.elementwise_add(y, layers.elementwise_div(a, y)),
                                  scale=0.5)
            return [better, layers.increment(steps, value=1.0, in_place=False)]

        root, count = layers.while_loop(not_converged, newton_step, [y, steps])
    fluid.verify(main)
    got = [run(main, startup, {"a": np.array([v], "float64")}, [root, count])
           for v in inputs]
    return {"inputs": list(inputs),
            "sqrt": [float(np.asarray(r).reshape(-1)[0]) for r, _ in got],
            "steps": [int(np.asarray(c).reshape(-1)[0]) for _, c in got],
            "numpy": [newton_sqrt_numpy(v) for v in inputs]}


def main(verbose=True):
    """Run every demo; returns {name: result dict}, each with the NumPy reference."""
    log = print if verbose else (lambda *args, **kwargs: None)
    results = {"while": while_loop_demo(), "ifelse": ifelse_demo(), "switch": switch_demo(),
               "cond": cond_demo(), "newton": newton_demo()}

    w = results["while"]
    log("1. While: the sub-block of the while op (the loop body):")
    log(w["while_block"])
    log(f"   x                   {X_SERIES.reshape(4)}")
    for k, (got, want) in enumerate(zip(w["partial_sums"], w["partial_sums_numpy"])):
        log(f"   S_{k} (array[{k}])     {got}   NumPy {want}")
    log(f"   exp(x)              {w['exp']}")
    log("2. Backward through the While (x@GRAD of sum(S_7) = S_6):")
    log(f"   x@GRAD              {w['grad']}   NumPy {w['grad_numpy']}")
    r = results["ifelse"]
    log("3. IfElse per row (x < 0 -> 0.1 x, else x * x):")
    log(f"   x {X_ROWS.reshape(-1)} -> {r['out'].reshape(-1)}   NumPy {r['numpy'].reshape(-1)}")
    r = results["switch"]
    log("4. Switch, piecewise learning rate by step:")
    for step, got, want in zip(r["steps"], r["lr"], r["numpy"]):
        log(f"   step {step:3d}: lr {got:.2f}   NumPy {want:.2f}")
    r = results["cond"]
    log("5. cond (x * 2 if x > 5 else x - 1) and while_loop (Newton's square root):")
    for x, got, want in zip(r["inputs"], r["out"], r["numpy"]):
        log(f"   cond x={x}: {got}   NumPy {want}")
    r = results["newton"]
    for a, root, steps, (want, want_steps) in zip(r["inputs"], r["sqrt"], r["steps"],
                                                  r["numpy"]):
        log(f"   sqrt({a:g}) = {root:.12g} after {steps} steps   "
            f"Python {want:.12g} after {want_steps}")
    return results


if __name__ == "__main__":
    main()
