"""Fluid 1.8's optimizers that wrap or follow another one: Lookahead, Recompute,
ExponentialMovingAverage and ModelAverage (the averages are applied to the parameters for
evaluation and restored afterwards); and the two multi-device ones, DGCMomentumOptimizer
and PipelineOptimizer, which refuse with the reason."""
import contextlib

from ..autodiff.backward import OP_ROLE_BACKWARD, OP_ROLE_OPTIMIZE
from ..errors import InvalidArgument, InvalidType, PreconditionNotMet, Unimplemented, expected
from ..framework import unique_name
from ..tensor.dtypes import VarType
from ..framework.program import (Program, default_main_program, default_startup_program,
                                Variable, program_guard)
from ..framework.transaction import atomic
from .layers.arg_checks import POSITIVE_INT, check, real_in
from ..autodiff.recompute import append_backward_with_checkpoints

__all__ = ["LookaheadOptimizer", "RecomputeOptimizer", "ExponentialMovingAverage",
           "ModelAverage", "DGCMomentumOptimizer", "PipelineOptimizer"]


def _state(main, startup, name, shape, dtype, value):
    """A persistable variable of ``main`` filled with ``value`` by ``startup``."""
    var = main.global_block().create_var(name=name, shape=shape, dtype=dtype, persistable=True)
    startup.global_block().create_var(name=name, shape=shape, dtype=dtype, persistable=True)
    startup.global_block().append_op(type="fill_constant", outputs={"Out": [name]},
                                     attrs={"shape": list(shape), "dtype": int(dtype),
                                            "value": float(value)})
    return var


def _op(block, type, inputs, outputs, attrs=None):
    return block.append_op(type=type, inputs=inputs, outputs=outputs,
                           attrs=dict(attrs or {}, op_role=OP_ROLE_OPTIMIZE))


def _inner(where, optimizer):
    from .optimizer import Optimizer
    if not isinstance(optimizer, Optimizer):
        raise InvalidType(expected(where, "inner_optimizer", "a fluid.optimizer optimizer",
                                   type(optimizer).__name__))
    return optimizer


class LookaheadOptimizer:
    """Lookahead (Zhang et al. 2019): the inner optimizer moves the "fast" parameters every
    step; every ``k`` steps the slow copies move ``alpha`` of the way to them and the fast
    parameters restart from there: slow += alpha * (fast - slow); fast = slow."""

    def __init__(self, inner_optimizer, alpha=0.5, k=5):
        self.inner_optimizer = _inner("LookaheadOptimizer", inner_optimizer)
        check("LookaheadOptimizer", "alpha", alpha, real_in(0.0, 1.0))
        check("LookaheadOptimizer", "k", k, POSITIVE_INT)
        self.alpha, self.k = float(alpha), int(k)

    def minimize(self, loss, startup_program=None):
        startup = startup_program or default_startup_program()
        optimize_ops, params_grads = self.inner_optimizer.minimize(
            loss, startup_program=startup)
        main = loss.block.program
        block = main.global_block()
        step = _state(main, startup, unique_name.generate("lookahead_step"), (1,),
                      VarType.FP32, 0.0)
        _op(block, "increment", {"X": [step]}, {"Out": [step]}, {"step": 1.0})
        # sync = 1 on every k-th step, else 0: the update is arithmetic, no branch
        remainder = block.create_var(name=unique_name.generate("lookahead_mod"), shape=(1,),
                                     dtype=VarType.FP32)
        k_var = _state(main, startup, unique_name.generate("lookahead_k"), (1,), VarType.FP32,
                       self.k)
        _op(block, "elementwise_mod", {"X": [step], "Y": [k_var]}, {"Out": [remainder]})
        sync = block.create_var(name=unique_name.generate("lookahead_sync"), shape=(1,),
                                dtype=VarType.FP32)
        is_zero = block.create_var(name=unique_name.generate("lookahead_is_sync"), shape=(1,),
                                   dtype=VarType.BOOL)
        zero = _state(main, startup, unique_name.generate("lookahead_zero"), (1,),
                      VarType.FP32, 0.0)
        _op(block, "equal", {"X": [remainder], "Y": [zero]}, {"Out": [is_zero]})
        _op(block, "cast", {"X": [is_zero]}, {"Out": [sync]},
            {"in_dtype": int(VarType.BOOL), "out_dtype": int(VarType.FP32)})
        for param, _ in params_grads:
            slow = main.global_block().create_var(
                name=unique_name.generate(param.name + "@SLOW"), shape=param.shape,
                dtype=param.dtype, persistable=True)
            startup.global_block().create_var(name=slow.name, shape=param.shape,
                                              dtype=param.dtype, persistable=True)
            startup.global_block().append_op(type="assign", inputs={"X": [param.name]},
                                             outputs={"Out": [slow.name]})
            moved = block.create_var(name=unique_name.generate(param.name + "@LOOKAHEAD"),
                                     shape=param.shape, dtype=param.dtype)
            diff = block.create_var(name=unique_name.generate(param.name + "@DIFF"),
                                    shape=param.shape, dtype=param.dtype)
            # slow' = slow + sync * alpha * (fast - slow); fast' = fast + sync * (slow' - fast)
            _op(block, "elementwise_sub", {"X": [param], "Y": [slow]}, {"Out": [diff]})
            _op(block, "scale", {"X": [diff]}, {"Out": [diff]}, {"scale": self.alpha})
            _op(block, "elementwise_mul", {"X": [diff], "Y": [sync]}, {"Out": [diff]})
            _op(block, "elementwise_add", {"X": [slow], "Y": [diff]}, {"Out": [moved]})
            _op(block, "assign", {"X": [moved]}, {"Out": [slow]})
            _op(block, "elementwise_sub", {"X": [slow], "Y": [param]}, {"Out": [diff]})
            _op(block, "elementwise_mul", {"X": [diff], "Y": [sync]}, {"Out": [diff]})
            _op(block, "elementwise_add", {"X": [param], "Y": [diff]}, {"Out": [param]})
        return optimize_ops, params_grads


class RecomputeOptimizer:
    """Recomputation trades time for memory (Fluid 1.8): the backward pass re-runs the
    forward ops between consecutive ``checkpoints`` just before their grad ops, writing
    renamed copies ``<name>.subprog_<n>`` of the intermediates, so only the checkpoints must
    outlive the forward pass; the part from the last checkpoint to the loss is not
    recomputed. Dropouts get a ``seed`` op so that the recomputed mask is the forward one.
    The gradients, and so the training, are those of the inner optimizer alone. With
    ``_set_checkpoints([])`` the backward pass is the plain one.

    Example::

        opt = fluid.optimizer.RecomputeOptimizer(fluid.optimizer.Adam(0.01))
        opt._set_checkpoints([hidden_1, hidden_2])
        opt.minimize(loss)
    """

    def __init__(self, optimizer):
        self._optimizer = _inner("RecomputeOptimizer", optimizer)
        self._checkpoints = None

    @property
    def _learning_rate(self):
        return self._optimizer._learning_rate

    @property
    def _learning_rate_map(self):
        return self._optimizer._learning_rate_map

    def _set_checkpoints(self, checkpoints):
        if not isinstance(checkpoints, (list, tuple)) or not all(
                isinstance(c, Variable) for c in checkpoints):
            raise InvalidType(expected("RecomputeOptimizer", "checkpoints",
                                       "a list of Variables", repr(checkpoints)[:60]))
        self._checkpoints = list(checkpoints)

    def load(self, stat_dict):
        """Not supported, as in Fluid 1.8."""
        raise Unimplemented("load function is not supported by Recompute Optimizer for now")

    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None,
                 callbacks=None):
        """The backward pass with recomputation between the checkpoints; returns
        ``[(parameter, gradient)]``."""
        if not isinstance(loss, Variable):
            raise InvalidType(expected("RecomputeOptimizer.backward", "loss", "a Variable",
                                       type(loss).__name__))
        if parameter_list is None:
            parameter_list = self._optimizer._parameter_list
        program = loss.block.program
        with program_guard(program, startup_program or default_startup_program()), \
                program.op_role_guard(OP_ROLE_BACKWARD):
            if not self._checkpoints:  # as in Fluid: no checkpoints, the plain pass
                return self._optimizer.backward(loss, startup_program, parameter_list,
                                                no_grad_set, callbacks)
            return append_backward_with_checkpoints(loss, self._checkpoints, parameter_list,
                                                    no_grad_set)

    def apply_gradients(self, params_grads):
        """The inner optimizer's clipping, regularization and update ops."""
        return self._optimizer.apply_gradients(params_grads)

    def apply_optimize(self, loss, startup_program, params_grads):
        return self._optimizer.apply_optimize(loss, startup_program, params_grads)

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        """``backward`` with recomputation, then the inner optimizer's updates; returns
        ``(optimize_ops, params_grads)``."""
        if not isinstance(loss, Variable):
            raise InvalidType(expected("RecomputeOptimizer.minimize", "loss", "a Variable",
                                       type(loss).__name__))
        if self._checkpoints is None:
            raise PreconditionNotMet("RecomputeOptimizer.minimize: checkpoints expected "
                                     "(call _set_checkpoints first), but none were set")
        program = loss.block.program
        startup = startup_program if startup_program is not None else \
            default_startup_program()
        inner = self._optimizer
        accumulators = {k: dict(v) for k, v in inner._accumulators.items()}
        learning_rates = dict(inner._learning_rate_map)
        try:  # one transaction, as the inner minimize
            with atomic(program, startup):
                params_grads = self.backward(loss, startup, parameter_list, no_grad_set)
                optimize_ops = self.apply_optimize(loss, startup, params_grads)
        except BaseException:
            inner._accumulators, inner._learning_rate_map = accumulators, learning_rates
            raise
        return optimize_ops, params_grads


class _Averaged:
    """Shared by the averaging optimizers: apply the averages to the parameters (backing
    them up) and restore them."""

    def _programs(self):
        if self._apply_program is None:
            self._apply_program, self._restore_program = Program(), Program()
            apply_block = self._apply_program.global_block()
            restore_block = self._restore_program.global_block()
            for param in self._params:
                backup = param.name + "@BACKUP"
                for block in (apply_block, restore_block):
                    for name in (param.name, backup):
                        block.create_var(name=name, shape=param.shape, dtype=param.dtype,
                                         persistable=True)
                apply_block.append_op(type="assign", inputs={"X": [param.name]},
                                      outputs={"Out": [backup]})
                self._append_average(apply_block, param)
                restore_block.append_op(type="assign", inputs={"X": [backup]},
                                        outputs={"Out": [param.name]})
        return self._apply_program, self._restore_program

    @contextlib.contextmanager
    def apply(self, executor, need_restore=True):
        """Inside: the parameters hold their averages; afterwards (with ``need_restore``)
        their trained values again."""
        apply_program, _ = self._programs()
        executor.run(apply_program)
        try:
            yield
        finally:
            if need_restore:
                self.restore(executor)

    def restore(self, executor):
        """Put back the parameters' trained values."""
        executor.run(self._programs()[1])


class ExponentialMovingAverage(_Averaged):
    """ema = decay * ema + (1 - decay) * param after every step (``update()`` appends the
    ops); with ``thres_steps`` the decay is min(decay, (1 + t) / (10 + t)). ``apply``
    gives the parameters ema / (1 - product of the decays so far), the bias-corrected
    average, as Fluid does."""

    def __init__(self, decay=0.999, thres_steps=None, name=None):
        check("ExponentialMovingAverage", "decay", decay, real_in(0.0, 1.0))
        self._decay = float(decay)
        self._thres_steps = thres_steps
        self._name = name or ""
        self._params, self._emas = [], {}
        self._apply_program = self._restore_program = None
        self._decay_pow = None

    def update(self):
        """Append the averaging ops for every trainable parameter of the default main
        program (call it after ``minimize``)."""
        main, startup = default_main_program(), default_startup_program()
        block = main.global_block()
        self._params = [p for p in block.all_parameters() if p.trainable]
        decay = _state(main, startup, unique_name.generate(self._name + "ema_decay"), (1,),
                       VarType.FP32, self._decay)
        if self._thres_steps is not None:  # decay = min(decay, (1 + t) / (10 + t))
            t = self._thres_steps
            num = block.create_var(name=unique_name.generate("ema_num"), shape=(1,),
                                   dtype=VarType.FP32)
            den = block.create_var(name=unique_name.generate("ema_den"), shape=(1,),
                                   dtype=VarType.FP32)
            ratio = block.create_var(name=unique_name.generate("ema_ratio"), shape=(1,),
                                     dtype=VarType.FP32)
            cast_t = block.create_var(name=unique_name.generate("ema_t"), shape=(1,),
                                      dtype=VarType.FP32)
            _op(block, "cast", {"X": [t]}, {"Out": [cast_t]},
                {"in_dtype": int(t.dtype), "out_dtype": int(VarType.FP32)})
            _op(block, "scale", {"X": [cast_t]}, {"Out": [num]}, {"scale": 1.0, "bias": 1.0})
            _op(block, "scale", {"X": [cast_t]}, {"Out": [den]}, {"scale": 1.0, "bias": 10.0})
            _op(block, "elementwise_div", {"X": [num], "Y": [den]}, {"Out": [ratio]})
            fixed = _state(main, startup, unique_name.generate("ema_max_decay"), (1,),
                           VarType.FP32, self._decay)
            _op(block, "elementwise_min", {"X": [fixed], "Y": [ratio]}, {"Out": [decay]})
        self._decay_pow = _state(main, startup, unique_name.generate(self._name + "ema_pow"),
                                 (1,), VarType.FP32, 1.0)
        _op(block, "elementwise_mul", {"X": [self._decay_pow], "Y": [decay]},
            {"Out": [self._decay_pow]})
        one_minus = block.create_var(name=unique_name.generate("ema_rest"), shape=(1,),
                                     dtype=VarType.FP32)
        _op(block, "scale", {"X": [decay]}, {"Out": [one_minus]}, {"scale": -1.0, "bias": 1.0})
        for param in self._params:
            ema = _state(main, startup, unique_name.generate(param.name + "_ema"), param.shape,
                         param.dtype, 0.0)
            self._emas[param.name] = ema
            kept = block.create_var(name=unique_name.generate(param.name + "@EMA_KEPT"),
                                    shape=param.shape, dtype=param.dtype)
            added = block.create_var(name=unique_name.generate(param.name + "@EMA_NEW"),
                                     shape=param.shape, dtype=param.dtype)
            _op(block, "elementwise_mul", {"X": [ema], "Y": [decay]}, {"Out": [kept]})
            _op(block, "elementwise_mul", {"X": [param], "Y": [one_minus]}, {"Out": [added]})
            _op(block, "elementwise_add", {"X": [kept], "Y": [added]}, {"Out": [ema]})

    def _append_average(self, block, param):
        ema, pow_name = self._emas[param.name], self._decay_pow.name
        for var in (ema, self._decay_pow):
            block.create_var(name=var.name, shape=var.shape, dtype=var.dtype, persistable=True)
        rest = param.name + "@EMA_CORRECTION"
        block.create_var(name=rest, shape=(1,), dtype=VarType.FP32)
        block.append_op(type="scale", inputs={"X": [pow_name]}, outputs={"Out": [rest]},
                        attrs={"scale": -1.0, "bias": 1.0})
        block.append_op(type="elementwise_div", inputs={"X": [ema.name], "Y": [rest]},
                        outputs={"Out": [param.name]})

    @contextlib.contextmanager
    def apply(self, executor, need_restore=True):
        if self._decay_pow is None:
            raise PreconditionNotMet("ExponentialMovingAverage.apply: update() expected "
                                     "before, but it was not called")
        with super().apply(executor, need_restore):
            yield


class ModelAverage(_Averaged):
    """The average of the parameters over a sliding window of recent steps (op
    ``average_accumulates`` after every update); ``apply`` gives the parameters their
    averages, ``restore`` their trained values."""

    def __init__(self, average_window_rate, min_average_window=10000,
                 max_average_window=10000, regularization=None, name=None):
        check("ModelAverage", "average_window_rate", average_window_rate, real_in(0.0))
        check("ModelAverage", "min_average_window", min_average_window, POSITIVE_INT)
        check("ModelAverage", "max_average_window", max_average_window, POSITIVE_INT)
        if max_average_window < min_average_window:
            raise InvalidArgument(expected("ModelAverage", "max_average_window",
                                           f">= min_average_window ({min_average_window})",
                                           max_average_window))
        self.average_window = float(average_window_rate)
        self.min_average_window, self.max_average_window = min_average_window, max_average_window
        self._apply_program = self._restore_program = None
        main, startup = default_main_program(), default_startup_program()
        block = main.global_block()
        self._params = [p for p in block.all_parameters() if p.trainable]
        self._sums = {}
        for param in self._params:
            state = {}
            for name in ("sum_1", "sum_2", "sum_3"):
                state[name] = _state(main, startup, unique_name.generate(f"{param.name}_{name}"),
                                     param.shape, param.dtype, 0.0)
            for name in ("num_accumulates", "old_num_accumulates", "num_updates"):
                state[name] = _state(main, startup, unique_name.generate(f"{param.name}_{name}"),
                                     (1,), VarType.INT64, 0)
            self._sums[param.name] = state
            _op(block, "average_accumulates",
                {"param": [param], "in_sum_1": [state["sum_1"]], "in_sum_2": [state["sum_2"]],
                 "in_sum_3": [state["sum_3"]], "in_num_accumulates": [state["num_accumulates"]],
                 "in_old_num_accumulates": [state["old_num_accumulates"]],
                 "in_num_updates": [state["num_updates"]]},
                {"out_sum_1": [state["sum_1"]], "out_sum_2": [state["sum_2"]],
                 "out_sum_3": [state["sum_3"]], "out_num_accumulates": [state["num_accumulates"]],
                 "out_old_num_accumulates": [state["old_num_accumulates"]],
                 "out_num_updates": [state["num_updates"]]},
                {"average_window": self.average_window,
                 "min_average_window": int(min_average_window),
                 "max_average_window": int(max_average_window)})

    def _append_average(self, block, param):
        state = self._sums[param.name]
        for var in state.values():
            block.create_var(name=var.name, shape=var.shape, dtype=var.dtype, persistable=True)
        total = param.name + "@AVERAGE_SUM"
        count = param.name + "@AVERAGE_COUNT"
        count_float = param.name + "@AVERAGE_COUNT_F"
        block.create_var(name=total, shape=param.shape, dtype=param.dtype)
        block.create_var(name=count, shape=(1,), dtype=VarType.INT64)
        block.create_var(name=count_float, shape=(1,), dtype=param.dtype)
        block.append_op(type="sum", inputs={"X": [state[k].name for k in
                                                  ("sum_1", "sum_2", "sum_3")]},
                        outputs={"Out": [total]})
        block.append_op(type="elementwise_add",
                        inputs={"X": [state["num_accumulates"].name],
                                "Y": [state["old_num_accumulates"].name]},
                        outputs={"Out": [count]})
        block.append_op(type="cast", inputs={"X": [count]}, outputs={"Out": [count_float]},
                        attrs={"in_dtype": int(VarType.INT64), "out_dtype": int(param.dtype)})
        block.append_op(type="elementwise_div", inputs={"X": [total], "Y": [count_float]},
                        outputs={"Out": [param.name]})


class DGCMomentumOptimizer:
    """Deep gradient compression: each trainer sends only the largest accumulated gradient
    entries to the others (momentum correction, local accumulation, top-k). It exists to cut
    the traffic between trainers, and Fluid runs it only on several CUDA trainers; fluid_nb
    runs one trainer, where the method has nothing to compress, so it refuses and names the
    optimizer to use instead."""

    def __init__(self, learning_rate, momentum, rampup_begin_step, rampup_step=1,
                 sparsity=(0.999,), use_nesterov=False, local_grad_clip_norm=None,
                 num_trainers=None, regularization=None, grad_clip=None, name=None):
        raise Unimplemented(expected(
            "DGCMomentumOptimizer", "the training setup",
            "several trainers exchanging compressed gradients",
            "fluid_nb's one trainer; fluid.optimizer.Momentum gives the same update there"))


class PipelineOptimizer:
    """Pipeline parallelism: a program cut into sections, each on its own device, with
    queues of micro-batches between them (run by Fluid's PipelineTrainer through
    train_from_dataset). fluid_nb runs one place and has no dataset trainers, so it refuses;
    the inner optimizer alone trains the same model."""

    def __init__(self, optimizer, cut_list=None, place_list=None, concurrency_list=None,
                 queue_size=30, sync_steps=1, start_cpu_core_id=0, num_microbatches=1):
        _inner("PipelineOptimizer", optimizer)
        raise Unimplemented(expected(
            "PipelineOptimizer", "the training setup",
            "several devices joined by micro-batch queues (Fluid's PipelineTrainer)",
            "fluid_nb's one place; minimize with the inner optimizer instead"))
