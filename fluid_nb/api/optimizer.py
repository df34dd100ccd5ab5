"""Optimizers as Fluid builds them: backward ops, then one update op per parameter.

``minimize(loss)`` = ``append_backward`` + gradient clipping + regularization + update ops.
State lives in persistable variables named as Paddle names them (``<param>_moment1_0``,
``<param>_beta1_pow_acc_0``, ``learning_rate_0``), created in the main program and
initialised by ``fill_constant`` ops in the startup program, so a program saved here trains
on in Paddle and the other way round.
"""
from ..framework import unique_name as _un
from ..autodiff.backward import (OP_ROLE_BACKWARD, OP_ROLE_LR_SCHED, OP_ROLE_OPTIMIZE,
                                 append_backward)
from ..errors import InvalidArgument, InvalidType
from ..tensor.dtypes import VarType
from ..framework.program import (Variable, default_main_program, default_startup_program,
                                program_guard)
from .clip import GradientClipBase
from ..framework.transaction import atomic
from .layers.arg_checks import (NAME, PROBABILITY, Refused, boolean, check, optional,
                                or_variable, real_in)
from .regularizer import WeightDecayRegularizer, append_regularization_ops


def _is(cls, want):
    """An arg_checks rule: an instance of ``cls``."""
    def rule(value):
        if not isinstance(value, cls):
            raise Refused(want, wrong_type=True)
    return rule


def parameters(value):
    """An arg_checks rule: a list of Parameters or parameter names."""
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(p, (str, Variable)) for p in value):
        raise Refused("a list of Parameters or parameter names", wrong_type=True)


_NON_NEGATIVE = real_in(0.0)


def _function(value):
    if not callable(value):
        raise Refused("a function", wrong_type=True)
_BETA = real_in(0.0, 1.0, want="a number in [0, 1)")

__all__ = ["SGD", "SGDOptimizer", "Momentum", "MomentumOptimizer", "Adam", "AdamOptimizer",
           "Adamax", "AdamaxOptimizer", "Adagrad", "AdagradOptimizer", "RMSProp",
           "RMSPropOptimizer", "Adadelta", "AdadeltaOptimizer", "DecayedAdagrad",
           "DecayedAdagradOptimizer", "Lamb", "LambOptimizer", "Optimizer", "Ftrl",
           "FtrlOptimizer", "LarsMomentum", "LarsMomentumOptimizer", "Dpsgd",
           "DpsgdOptimizer", "LookaheadOptimizer", "RecomputeOptimizer",
           "ExponentialMovingAverage", "ModelAverage", "DGCMomentumOptimizer",
           "PipelineOptimizer"]


def create_persistable(main_program, startup_program, name, shape, dtype, value,
                       stop_gradient=True):
    """A persistable variable in ``main_program`` initialised to ``value`` by a
    ``fill_constant`` op in ``startup_program``."""
    var = main_program.global_block().create_var(name=name, shape=shape, dtype=dtype,
                                                 persistable=True, stop_gradient=stop_gradient)
    startup_block = startup_program.global_block()
    startup_block.create_var(name=name, shape=shape, dtype=dtype, persistable=True)
    startup_block.append_op(type="fill_constant", outputs={"Out": [name]},
                            attrs={"shape": list(shape), "value": float(value),
                                   "dtype": int(dtype), "force_cpu": False,
                                   "str_value": repr(float(value))})
    return var


def _start(value, default):
    """A hyper-parameter's number, or ``default`` where a Variable gives it at run time."""
    return default if isinstance(value, Variable) else float(value)


class Optimizer:
    """Base of every optimizer: learning rate, accumulators, the update pass.

    ``learning_rate`` is a float or a Variable (a schedule from ``fluid.layers``); a
    parameter's ``optimize_attr['learning_rate']`` scales it for that parameter.
    """

    type = None

    def __init__(self, learning_rate, parameter_list=None, regularization=None,
                 grad_clip=None, name=None):
        if not isinstance(learning_rate, (float, int, Variable)) or isinstance(learning_rate, bool):
            raise InvalidType(f"{type(self).__name__}: learning_rate expected float or "
                              f"Variable, but received {type(learning_rate).__name__}")
        self._check_arguments(learning_rate=(learning_rate, or_variable(real_in(0.0))),
                              parameter_list=(parameter_list, optional(parameters)),
                              regularization=(regularization, optional(_is(
                                  WeightDecayRegularizer, "a regularizer such as "
                                  "fluid.regularizer.L2Decay(1e-4)"))),
                              grad_clip=(grad_clip, optional(_is(
                                  GradientClipBase, "a clip such as "
                                  "fluid.clip.GradientClipByGlobalNorm(5.0)"))),
                              name=(name, NAME))
        self._learning_rate = learning_rate
        self._parameter_list = parameter_list
        self.regularization = regularization
        self._grad_clip = grad_clip
        self._name = name
        self._accumulators = {}  # accumulator name -> param name -> Variable
        self._learning_rate_map = {}  # program -> lr Variable
        self.helper = None

    def _check_arguments(self, **values_and_rules):
        """Refuse a constructor argument that breaks its rule (``layers.arg_checks``), naming
        the optimizer and the argument, before anything is built."""
        for name, (value, rule) in values_and_rules.items():
            check(type(self).__name__, name, value, rule)

    # --- learning rate ----------------------------------------------------------------
    def _global_learning_rate(self, program=None):
        program = default_main_program() if program is None else program
        return self._learning_rate_map.get(program)

    def _create_global_learning_rate(self, main_program, startup_program):
        if main_program in self._learning_rate_map:
            return
        if isinstance(self._learning_rate, Variable):
            self._learning_rate_map[main_program] = self._learning_rate
            return
        name = _un.generate("learning_rate")
        # [1]: a Fluid 1.x scalar (1.x had no 0-D tensors)
        self._learning_rate_map[main_program] = create_persistable(
            main_program, startup_program, name, (1,), VarType.FP32, float(self._learning_rate))

    def _param_learning_rate(self, param, block):
        lr = self._global_learning_rate(block.program)
        scale = param.optimize_attr.get("learning_rate", 1.0) if param.optimize_attr else 1.0
        if scale == 1.0:
            return lr
        scaled = block.create_var(name=_un.generate(f"{param.name}.lr"), shape=lr.shape,
                                  dtype=lr.dtype)
        # Fluid's role for it: a schedule op in the middle of the updates (LRSched|Optimize)
        block.append_op(type="scale", inputs={"X": [lr]}, outputs={"Out": [scaled]},
                        attrs={"scale": float(scale),
                               "op_role": OP_ROLE_LR_SCHED | OP_ROLE_OPTIMIZE})
        return scaled

    # --- accumulators -----------------------------------------------------------------
    def _add_accumulator(self, name, param, fill_value=0.0, shape=None, dtype=None):
        per_param = self._accumulators.setdefault(name, {})
        if param.name in per_param:
            raise InvalidArgument(f"{type(self).__name__}: accumulator '{name}' for parameter "
                                  f"'{param.name}' expected once, but it was added twice")
        var_name = _un.generate(f"{param.name}_{name}")
        var = create_persistable(self._main_program, self._startup_program, var_name,
                                 param.shape if shape is None else shape,
                                 param.dtype if dtype is None else dtype, fill_value)
        per_param[param.name] = var
        return var

    def _get_accumulator(self, name, param):
        return self._accumulators[name][param.name]

    def _create_accumulators(self, block, parameters):
        """Subclasses add their state variables here."""

    def _append_optimize_op(self, block, param_and_grad):
        raise NotImplementedError

    def _finish_update(self, block, parameters_and_grads):
        """Ops after all updates (e.g. Adamax's beta1 power)."""
        return []

    # --- the passes -------------------------------------------------------------------
    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None,
                 callbacks=None):
        parameter_list = parameter_list if parameter_list is not None else self._parameter_list
        return append_backward(loss, parameter_list, no_grad_set, callbacks)

    def apply_gradients(self, params_grads):
        """Clip, regularize and update; returns the update ops."""
        params_grads = sorted(params_grads, key=lambda pg: pg[0].name)
        if not params_grads:
            return []
        program = params_grads[0][0].block.program
        with program.op_role_guard(OP_ROLE_BACKWARD):
            if self._grad_clip is not None:
                params_grads = self._grad_clip(params_grads)
            else:
                from .clip import append_gradient_clip_ops
                params_grads = append_gradient_clip_ops(params_grads)
            params_grads = append_regularization_ops(params_grads, self.regularization)
        with program.op_role_guard(OP_ROLE_OPTIMIZE):
            return self._create_optimization_pass(params_grads)

    def apply_optimize(self, loss, startup_program, params_grads):
        program = loss.block.program
        with program_guard(program, startup_program or default_startup_program()):
            return self.apply_gradients(params_grads)

    def _create_optimization_pass(self, params_grads):
        if not params_grads:
            return []
        # the updates go where the gradients are: the global block, or the block a loss
        # computed inside a sub-block had its backward written to
        grads = [g for _, g in params_grads if g is not None]
        block = grads[0].block if grads else params_grads[0][0].block.program.global_block()
        start = len(block.ops)  # what the pass appends is what it returns, as in Fluid
        self._main_program = block.program
        self._startup_program = default_startup_program()
        self._create_global_learning_rate(self._main_program, self._startup_program)
        trainable = [pg for pg in params_grads if pg[0].trainable and pg[1] is not None]
        self._create_accumulators(block, [p for p, _ in trainable])
        for param_and_grad in trainable:
            op = self._append_optimize_op(block, param_and_grad)
            op.attrs["op_role"] = OP_ROLE_OPTIMIZE
            op.attrs["op_role_var"] = [param_and_grad[0].name, param_and_grad[1].name]
        for op in self._finish_update(block, trainable):
            op.attrs["op_role"] = OP_ROLE_OPTIMIZE
        block.program._changed()
        # the updates with the per-parameter learning-rate scales and finishing ops
        return block.ops[start:]

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        """Append backward and update ops for ``loss``; returns (optimize_ops, params_grads)."""
        program = loss.block.program
        startup = startup_program if startup_program is not None else default_startup_program()
        # one transaction: a failure leaves no gradient or update op, no accumulator
        accumulators = {k: dict(v) for k, v in self._accumulators.items()}
        learning_rates = dict(self._learning_rate_map)
        try:
            with atomic(program, startup), program_guard(program, startup):
                with program.op_role_guard(OP_ROLE_BACKWARD):
                    params_grads = self.backward(loss, startup, parameter_list, no_grad_set)
                optimize_ops = self.apply_gradients(params_grads)
        except BaseException:
            self._accumulators, self._learning_rate_map = accumulators, learning_rates
            raise
        return optimize_ops, params_grads


class SGD(Optimizer):
    """``param -= lr * grad``."""
    type = "sgd"

    def __init__(self, learning_rate, parameter_list=None, regularization=None, grad_clip=None,
                 name=None):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        return block.append_op(type="sgd", inputs={"Param": [param], "Grad": [grad],
                                                   "LearningRate": [self._param_learning_rate(param, block)]},
                               outputs={"ParamOut": [param]})


class Momentum(Optimizer):
    """``v = mu * v + grad``; ``param -= lr * v`` (Nesterov: ``lr * (grad + mu * v)``)."""
    type = "momentum"
    #: accumulator names (Fluid's attributes, which subclasses read)
    _velocity_acc_str = "velocity"

    def __init__(self, learning_rate, momentum, parameter_list=None, use_nesterov=False,
                 regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self._check_arguments(momentum=(momentum, _NON_NEGATIVE),
                              use_nesterov=(use_nesterov, boolean))
        self._momentum = momentum
        self._use_nesterov = bool(use_nesterov)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._velocity_acc_str, p)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        velocity = self._get_accumulator(self._velocity_acc_str, param)
        return block.append_op(
            type="momentum",
            inputs={"Param": [param], "Grad": [grad], "Velocity": [velocity],
                    "LearningRate": [self._param_learning_rate(param, block)]},
            outputs={"ParamOut": [param], "VelocityOut": [velocity]},
            attrs={"mu": float(self._momentum), "use_nesterov": self._use_nesterov})


class Adam(Optimizer):
    """Adam with Paddle's bias correction folded into the step size."""
    type = "adam"
    #: accumulator names (Fluid's attributes, which subclasses read)
    _moment1_acc_str = "moment1"
    _moment2_acc_str = "moment2"
    _beta1_pow_acc_str = "beta1_pow_acc"
    _beta2_pow_acc_str = "beta2_pow_acc"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 parameter_list=None, regularization=None, grad_clip=None, name=None,
                 lazy_mode=False):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self._check_arguments(beta1=(beta1, or_variable(_BETA)), beta2=(beta2, or_variable(_BETA)),
                              epsilon=(epsilon, _NON_NEGATIVE), lazy_mode=(lazy_mode, boolean))
        self._beta1, self._beta2, self._epsilon = beta1, beta2, epsilon
        self._lazy_mode = lazy_mode

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._moment1_acc_str, p)
            self._add_accumulator(self._moment2_acc_str, p)
            # a beta given as a Variable is known only at run time: its power starts from
            # Paddle's default, as in Fluid
            self._add_accumulator(self._beta1_pow_acc_str, p, fill_value=_start(self._beta1, 0.9),
                                  shape=(1,), dtype=VarType.FP32)
            self._add_accumulator(self._beta2_pow_acc_str, p, fill_value=_start(self._beta2, 0.999),
                                  shape=(1,), dtype=VarType.FP32)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        acc = {k: self._get_accumulator(k, param)
               for k in (self._moment1_acc_str, self._moment2_acc_str, self._beta1_pow_acc_str,
                         self._beta2_pow_acc_str)}
        return block.append_op(
            type=self.type,
            inputs=dict({"Param": [param], "Grad": [grad],
                         "LearningRate": [self._param_learning_rate(param, block)],
                         "Moment1": [acc["moment1"]], "Moment2": [acc["moment2"]],
                         "Beta1Pow": [acc["beta1_pow_acc"]],
                         "Beta2Pow": [acc["beta2_pow_acc"]]}, **self._tensor_betas()),
            outputs={"ParamOut": [param], "Moment1Out": [acc["moment1"]],
                     "Moment2Out": [acc["moment2"]], "Beta1PowOut": [acc["beta1_pow_acc"]],
                     "Beta2PowOut": [acc["beta2_pow_acc"]]},
            attrs=self._update_attrs(param))

    def _tensor_betas(self):
        """Betas given as Variables, as the op's Beta1Tensor / Beta2Tensor inputs."""
        return {slot: [value] for slot, value in (("Beta1Tensor", self._beta1),
                                                   ("Beta2Tensor", self._beta2))
                if isinstance(value, Variable)}

    def _update_attrs(self, param):
        return {"beta1": _start(self._beta1, 0.9), "beta2": _start(self._beta2, 0.999),
                "epsilon": float(self._epsilon), "lazy_mode": bool(self._lazy_mode)}


class Adamax(Optimizer):
    """Adam with the infinity norm; the beta1 power is advanced by a ``scale`` op after
    the updates, as Fluid does."""
    type = "adamax"
    #: accumulator names (Fluid's attributes, which subclasses read)
    _moment_acc_str = "moment"
    _inf_norm_acc_str = "inf_norm"
    _beta1_pow_acc_str = "beta1_pow_acc"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 parameter_list=None, regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self._check_arguments(beta1=(beta1, _BETA), beta2=(beta2, _BETA),
                              epsilon=(epsilon, _NON_NEGATIVE))
        self._beta1, self._beta2, self._epsilon = beta1, beta2, epsilon

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._moment_acc_str, p)
            self._add_accumulator(self._inf_norm_acc_str, p)
            self._add_accumulator(self._beta1_pow_acc_str, p, fill_value=self._beta1, shape=(1,),
                                  dtype=VarType.FP32)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        moment = self._get_accumulator(self._moment_acc_str, param)
        inf_norm = self._get_accumulator(self._inf_norm_acc_str, param)
        beta1_pow = self._get_accumulator(self._beta1_pow_acc_str, param)
        return block.append_op(
            type="adamax",
            inputs={"Param": [param], "Grad": [grad],
                    "LearningRate": [self._param_learning_rate(param, block)],
                    "Moment": [moment], "InfNorm": [inf_norm], "Beta1Pow": [beta1_pow]},
            outputs={"ParamOut": [param], "MomentOut": [moment], "InfNormOut": [inf_norm]},
            attrs={"beta1": float(self._beta1), "beta2": float(self._beta2),
                   "epsilon": float(self._epsilon)})

    def _finish_update(self, block, parameters_and_grads):
        ops = []
        for param, grad in parameters_and_grads:
            beta1_pow = self._get_accumulator(self._beta1_pow_acc_str, param)
            # op_role_var names the pair it belongs to, as Fluid's (the distribute
            # transpiler moves it to the server holding the parameter)
            ops.append(block.append_op(type="scale", inputs={"X": [beta1_pow]},
                                       outputs={"Out": [beta1_pow]},
                                       attrs={"scale": float(self._beta1),
                                              "op_role_var": [param.name, grad.name]}))
        return ops


class Adagrad(Optimizer):
    """``moment += grad^2``; ``param -= lr * grad / (sqrt(moment) + epsilon)``."""
    type = "adagrad"
    #: accumulator names (Fluid's attributes, which subclasses read)
    _moment_acc_str = "moment"

    def __init__(self, learning_rate, epsilon=1.0e-6, parameter_list=None, regularization=None,
                 grad_clip=None, name=None, initial_accumulator_value=0.0):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self._check_arguments(epsilon=(epsilon, _NON_NEGATIVE),
                              initial_accumulator_value=(initial_accumulator_value,
                                                         _NON_NEGATIVE))
        self._epsilon = epsilon
        self._initial = initial_accumulator_value

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._moment_acc_str, p, fill_value=self._initial)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        moment = self._get_accumulator(self._moment_acc_str, param)
        return block.append_op(
            type="adagrad",
            inputs={"Param": [param], "Grad": [grad], "Moment": [moment],
                    "LearningRate": [self._param_learning_rate(param, block)]},
            outputs={"ParamOut": [param], "MomentOut": [moment]},
            attrs={"epsilon": float(self._epsilon)})


class DecayedAdagrad(Optimizer):
    """``moment = decay * moment + (1 - decay) * grad^2``; Adagrad's step."""
    type = "decayed_adagrad"
    #: accumulator names (Fluid's attributes, which subclasses read)
    _moment_acc_str = "moment"

    def __init__(self, learning_rate, decay=0.95, epsilon=1.0e-6, parameter_list=None,
                 regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self._check_arguments(decay=(decay, PROBABILITY), epsilon=(epsilon, _NON_NEGATIVE))
        self._decay, self._epsilon = decay, epsilon

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._moment_acc_str, p)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        moment = self._get_accumulator(self._moment_acc_str, param)
        return block.append_op(
            type="decayed_adagrad",
            inputs={"Param": [param], "Grad": [grad], "Moment": [moment],
                    "LearningRate": [self._param_learning_rate(param, block)]},
            outputs={"ParamOut": [param], "MomentOut": [moment]},
            attrs={"decay": float(self._decay), "epsilon": float(self._epsilon)})


class RMSProp(Optimizer):
    """Mean-square scaled steps with momentum; ``centered`` also tracks the mean gradient."""
    type = "rmsprop"
    #: accumulator names (Fluid's attributes, which subclasses read)
    _momentum_acc_str = "momentum"
    _mean_square_acc_str = "mean_square"
    _mean_grad_acc_str = "mean_grad"

    def __init__(self, learning_rate, rho=0.95, epsilon=1.0e-6, momentum=0.0, centered=False,
                 parameter_list=None, regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self._check_arguments(rho=(rho, PROBABILITY), epsilon=(epsilon, _NON_NEGATIVE),
                              momentum=(momentum, _NON_NEGATIVE), centered=(centered, boolean))
        self._rho, self._epsilon, self._momentum = rho, epsilon, momentum
        self._centered = centered

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._momentum_acc_str, p)
            self._add_accumulator(self._mean_square_acc_str, p)
            self._add_accumulator(self._mean_grad_acc_str, p)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        momentum = self._get_accumulator(self._momentum_acc_str, param)
        mean_square = self._get_accumulator(self._mean_square_acc_str, param)
        mean_grad = self._get_accumulator(self._mean_grad_acc_str, param)
        return block.append_op(
            type="rmsprop",
            inputs={"Param": [param], "Grad": [grad], "Moment": [momentum],
                    "MeanSquare": [mean_square], "MeanGrad": [mean_grad],
                    "LearningRate": [self._param_learning_rate(param, block)]},
            outputs={"ParamOut": [param], "MomentOut": [momentum],
                     "MeanSquareOut": [mean_square], "MeanGradOut": [mean_grad]},
            attrs={"epsilon": float(self._epsilon), "decay": float(self._rho),
                   "momentum": float(self._momentum), "centered": bool(self._centered)})


class Adadelta(Optimizer):
    """Step sizes from running averages of squared gradients and squared updates."""
    type = "adadelta"
    #: accumulator names (Fluid's attributes, which subclasses read)
    _avg_squared_grad_acc_str = "_avg_squared_grad"
    _avg_squared_update_acc_str = "_avg_squared_update"

    def __init__(self, learning_rate, epsilon=1.0e-6, rho=0.95, parameter_list=None,
                 regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self._check_arguments(epsilon=(epsilon, _NON_NEGATIVE), rho=(rho, PROBABILITY))
        self._epsilon, self._rho = epsilon, rho

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._avg_squared_grad_acc_str, p)
            self._add_accumulator(self._avg_squared_update_acc_str, p)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        avg_grad = self._get_accumulator(self._avg_squared_grad_acc_str, param)
        avg_update = self._get_accumulator(self._avg_squared_update_acc_str, param)
        return block.append_op(
            type="adadelta",
            inputs={"Param": [param], "Grad": [grad], "AvgSquaredGrad": [avg_grad],
                    "AvgSquaredUpdate": [avg_update],
                    "LearningRate": [self._param_learning_rate(param, block)]},
            outputs={"ParamOut": [param], "AvgSquaredGradOut": [avg_grad],
                     "AvgSquaredUpdateOut": [avg_update]},
            attrs={"epsilon": float(self._epsilon), "rho": float(self._rho)})


class Lamb(Adam):
    """Adam's moments with a layer-wise trust ratio and decoupled weight decay."""
    type = "lamb"

    def __init__(self, learning_rate=0.001, lamb_weight_decay=0.01, beta1=0.9, beta2=0.999,
                 epsilon=1e-6, parameter_list=None, regularization=None, grad_clip=None,
                 exclude_from_weight_decay_fn=None, name=None):
        super().__init__(learning_rate, beta1, beta2, epsilon, parameter_list, regularization,
                         grad_clip, name)
        self._check_arguments(lamb_weight_decay=(lamb_weight_decay, _NON_NEGATIVE),
                              exclude_from_weight_decay_fn=(exclude_from_weight_decay_fn,
                                                            optional(_function)))
        self._weight_decay = lamb_weight_decay
        self._exclude = exclude_from_weight_decay_fn

    def _update_attrs(self, param):
        excluded = self._exclude is not None and self._exclude(param)
        return {"beta1": float(self._beta1), "beta2": float(self._beta2),
                "epsilon": float(self._epsilon),
                "weight_decay": 0.0 if excluded else float(self._weight_decay)}


SGDOptimizer = SGD
MomentumOptimizer = Momentum
AdamOptimizer = Adam
AdamaxOptimizer = Adamax
AdagradOptimizer = Adagrad
DecayedAdagradOptimizer = DecayedAdagrad
RMSPropOptimizer = RMSProp
AdadeltaOptimizer = Adadelta
LambOptimizer = Lamb


class Ftrl(Optimizer):
    """FTRL-proximal (McMahan et al.) with l1 and l2 regularisation (op ``ftrl``)."""
    type = "ftrl"
    #: accumulator names (Fluid's attributes, which subclasses read)
    _squared_acc_str = "squared"
    _linear_acc_str = "linear"

    def __init__(self, learning_rate, l1=0.0, l2=0.0, lr_power=-0.5, parameter_list=None,
                 regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self._check_arguments(l1=(l1, _NON_NEGATIVE), l2=(l2, _NON_NEGATIVE),
                              lr_power=(lr_power, real_in()))
        self._l1, self._l2, self._lr_power = float(l1), float(l2), float(lr_power)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._squared_acc_str, p)
            self._add_accumulator(self._linear_acc_str, p)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        squared = self._get_accumulator(self._squared_acc_str, param)
        linear = self._get_accumulator(self._linear_acc_str, param)
        return block.append_op(
            type="ftrl",
            inputs={"Param": [param], "Grad": [grad], "SquaredAccumulator": [squared],
                    "LinearAccumulator": [linear],
                    "LearningRate": [self._param_learning_rate(param, block)]},
            outputs={"ParamOut": [param], "SquaredAccumOut": [squared],
                     "LinearAccumOut": [linear]},
            attrs={"l1": self._l1, "l2": self._l2, "lr_power": self._lr_power})


class LarsMomentum(Optimizer):
    """Momentum with a layer-wise adaptive rate (LARS, You et al.; op ``lars_momentum``)."""
    type = "lars_momentum"
    #: accumulator names (Fluid's attributes, which subclasses read)
    _velocity_acc_str = "velocity"

    def __init__(self, learning_rate, momentum, lars_coeff=0.001, lars_weight_decay=0.0005,
                 parameter_list=None, regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self._check_arguments(momentum=(momentum, _NON_NEGATIVE),
                              lars_coeff=(lars_coeff, _NON_NEGATIVE),
                              lars_weight_decay=(lars_weight_decay, _NON_NEGATIVE))
        self._momentum, self._lars_coeff = float(momentum), float(lars_coeff)
        self._lars_weight_decay = float(lars_weight_decay)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._velocity_acc_str, p)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        velocity = self._get_accumulator(self._velocity_acc_str, param)
        return block.append_op(
            type="lars_momentum",
            inputs={"Param": [param], "Grad": [grad], "Velocity": [velocity],
                    "LearningRate": [self._param_learning_rate(param, block)]},
            outputs={"ParamOut": [param], "VelocityOut": [velocity]},
            attrs={"mu": self._momentum, "lars_coeff": self._lars_coeff,
                   "lars_weight_decay": self._lars_weight_decay})


class Dpsgd(Optimizer):
    """Differentially private SGD (Abadi et al.; op ``dpsgd``): the gradient clipped to
    norm ``clip`` plus Gaussian noise of scale ``sigma``, over ``batch_size``."""
    type = "dpsgd"

    def __init__(self, learning_rate=0.001, clip=0.9, batch_size=0.999, sigma=1e-8,
                 parameter_list=None):
        super().__init__(learning_rate, parameter_list)
        self._check_arguments(clip=(clip, real_in(0.0)), batch_size=(batch_size, real_in(0.0)),
                              sigma=(sigma, _NON_NEGATIVE))
        self._clip, self._batch_size, self._sigma = float(clip), float(batch_size), float(sigma)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        return block.append_op(
            type="dpsgd",
            inputs={"Param": [param], "Grad": [grad],
                    "LearningRate": [self._param_learning_rate(param, block)]},
            outputs={"ParamOut": [param]},
            attrs={"clip": self._clip, "batch_size": self._batch_size, "sigma": self._sigma,
                   "seed": int(block.program.random_seed or 0)})


FtrlOptimizer = Ftrl
LarsMomentumOptimizer = LarsMomentum
DpsgdOptimizer = Dpsgd

from .optimizer_wrappers import (DGCMomentumOptimizer, ExponentialMovingAverage,  # noqa: E402
                                 LookaheadOptimizer, ModelAverage, PipelineOptimizer,
                                 RecomputeOptimizer)
