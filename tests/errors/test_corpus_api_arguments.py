"""Bad-input corpus, optimizer, backward and executor arguments: wrong types and ranges
refused at construction or at the call, with a typed error naming the argument, leaving the
program and scope as they were; a kernel running out of memory is ResourceExhausted."""
import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.autodiff.backward import append_backward, gradients

from .corpus import Case, check, state_of

OPT = fluid.optimizer
BAD_NUMBER = ["x", None, [0.1], float("nan"), -1.0]
BAD_COMMON = {
    "learning_rate": ["x", None, [0.1], float("nan"), -0.5, True],
    "regularization": ["l2", 5, 0.1],
    "grad_clip": [5, "norm", 1.0],
    "parameter_list": [5, "w", [5]],
    "name": [5],
}
OPTIMIZERS = {
    "SGD": (lambda **k: OPT.SGD(**{"learning_rate": 0.1, **k}), {}),
    "Momentum": (lambda **k: OPT.Momentum(**{"learning_rate": 0.1, "momentum": 0.9, **k}),
                 {"momentum": BAD_NUMBER, "use_nesterov": ["yes", None]}),
    "Adam": (lambda **k: OPT.Adam(**{"learning_rate": 0.1, **k}),
             {"beta1": BAD_NUMBER + [1.5], "beta2": BAD_NUMBER, "epsilon": BAD_NUMBER,
              "lazy_mode": ["yes"]}),
    "Adamax": (lambda **k: OPT.Adamax(**{"learning_rate": 0.1, **k}),
               {"beta1": BAD_NUMBER, "epsilon": BAD_NUMBER}),
    "Adagrad": (lambda **k: OPT.Adagrad(**{"learning_rate": 0.1, **k}),
                {"epsilon": BAD_NUMBER, "initial_accumulator_value": BAD_NUMBER}),
    "DecayedAdagrad": (lambda **k: OPT.DecayedAdagrad(**{"learning_rate": 0.1, **k}),
                       {"decay": BAD_NUMBER + [2.0]}),
    "RMSProp": (lambda **k: OPT.RMSProp(**{"learning_rate": 0.1, **k}),
                {"rho": BAD_NUMBER, "momentum": BAD_NUMBER, "centered": ["yes"]}),
    "Adadelta": (lambda **k: OPT.Adadelta(**{"learning_rate": 0.1, **k}),
                 {"rho": BAD_NUMBER, "epsilon": BAD_NUMBER}),
    "Lamb": (lambda **k: OPT.Lamb(**{"learning_rate": 0.1, **k}),
             {"lamb_weight_decay": BAD_NUMBER, "exclude_from_weight_decay_fn": [5]}),
}


def _optimizer_cases():
    for name, (make, own) in OPTIMIZERS.items():
        yield Case("api_args", f"{name}:valid", make, None, False)
        for arg, values in {**BAD_COMMON, **own}.items():
            for value in values:
                yield Case("api_args", f"{name}:{arg}={value!r}",
                           lambda make=make, arg=arg, value=value: make(**{arg: value}),
                           None, True, (name, arg))
    for cls, arg, values in [
            (fluid.regularizer.L2Decay, "regularization_coeff", ["a", None, -1.0]),
            (fluid.regularizer.L1Decay, "regularization_coeff", ["a", None, -1.0]),
            (fluid.clip.GradientClipByValue, "max", ["a", None]),
            (fluid.clip.GradientClipByNorm, "clip_norm", ["a", None, -1.0]),
            (fluid.clip.GradientClipByGlobalNorm, "clip_norm", ["a", None, -1.0])]:
        for value in values:
            yield Case("api_args", f"{cls.__name__}:{arg}={value!r}",
                       lambda cls=cls, arg=arg, value=value: cls(**{arg: value}), None, True,
                       (arg,))


def _net():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        y = fluid.layers.fc(x, size=1)
        loss = fluid.layers.mean(y)
    return main, startup, x, y, loss


def _backward_cases():
    main, startup, x, y, loss = _net()
    state = state_of(main, startup)
    bad = {
        "loss": [5, "loss", None, np.ones(1)],
        "no_grad_set": [5, "x", [5], {1.5}],
        "parameter_list": [5, "fc_0.w_0", [5], ["no_such_param"]],
        "callbacks": [5, [5]],
    }
    for arg, values in bad.items():
        for value in values:
            kwargs = {"loss": loss, arg: value}
            yield Case("api_args", f"append_backward:{arg}={value!r}",
                       lambda kwargs=kwargs: append_backward(**kwargs), state, True, (arg,))
    for arg, values in {"targets": [5, None, []], "inputs": [5, "x", []],
                        "target_gradients": [5, [5]], "no_grad_set": [5]}.items():
        for value in values:
            kwargs = {"targets": loss, "inputs": x, arg: value}
            yield Case("api_args", f"gradients:{arg}={value!r}",
                       lambda kwargs=kwargs: gradients(**kwargs), state, True, (arg,))
    main2, startup2, x2, y2, loss2 = _net()
    yield Case("api_args", "append_backward:valid", lambda: append_backward(loss2), None, False)


def _executor_cases():
    main, startup, x, y, loss = _net()
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    good_feed = {"x": np.ones((2, 3), "float32")}
    exe.run(main, feed=good_feed, fetch_list=[loss], scope=scope)
    state = state_of(main, scope=scope)
    bad = {
        "program": [5, "main", main.global_block()],
        "feed": [[1], "x", 5, {5: 1}, {None: 1}],
        "fetch_list": [[5], [None], 5, [1.5], [{"a": 1}]],
        "scope": [123, "scope", {}],
        "feed_var_name": [5, ""],
        "fetch_var_name": [None, 5],
    }
    for arg, values in bad.items():
        for value in values:
            kwargs = {"program": main, "feed": good_feed, "fetch_list": [loss], "scope": scope,
                      arg: value}
            # (named by type where the repr holds an address: ids must be the same in
            # every process that collects them)
            shown = f"<{type(value).__name__}>" if " at 0x" in repr(value) else repr(value)
            yield Case("api_args", f"Executor.run:{arg}={shown}",
                       lambda kwargs=kwargs: exe.run(**kwargs), state, True, ("Executor.run",))
    yield Case("api_args", "Executor.run:unknown_feed_name",
               lambda: exe.run(main, feed={"nope": np.ones((2, 3))}, scope=scope), state, True,
               ("nope",))
    yield Case("api_args", "Executor.run:valid",
               lambda: exe.run(main, feed=good_feed, fetch_list=[loss], scope=scope), state,
               False)


CASES = list(_optimizer_cases()) + list(_backward_cases()) + list(_executor_cases())


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_api_argument_corpus(case):
    check(case)


def test_out_of_memory_in_a_kernel_is_resource_exhausted_with_a_usage_summary():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        big = fluid.layers.fill_constant(shape=[1 << 22, 1 << 20], dtype="float32", value=1.0)
    with pytest.raises(fluid.errors.ResourceExhausted) as err:
        fluid.Executor(fluid.CPUPlace()).run(main, fetch_list=[big], scope=fluid.Scope())
    message = str(err.value)
    for part in ("fill_constant", "17592186044416 bytes", "16.0 TiB", "[4194304, 1048576]",
                 "float32", "expected"):
        assert part in message, message
