"""Normalisation and activation layers of Fluid 1.8 with parameters: instance_norm,
group_norm, data_norm, inplace_abn, lrn, prelu, label_smooth.

Each builds the op types, attributes and parameter names of the Fluid 1.8 function of the
same name; ``fluid.layers`` exports them through ``nn``.
"""
from ...errors import InvalidArgument
from ...tensor.dtypes import VarType
from ...framework.program import Variable
from ..initializer import ConstantInitializer
from ..layer_helper import LayerHelper
from ..param_attr import ParamAttr
from .arg_checks import (INT, NAME, NUMBER, PROBABILITY, POSITIVE_INT, activation, boolean,
                         checks, dtype, one_of, optional, or_variable, real_in, variable)

__all__ = ["instance_norm", "group_norm", "data_norm", "inplace_abn", "lrn", "prelu",
           "label_smooth"]


def _float_input(where, x):
    if x.dtype not in (VarType.FP32, VarType.FP64, VarType.FP16):
        raise InvalidArgument(f"{where}: input expected float32 or float64, but received "
                              f"{x.dtype.name}")


@checks(input=variable, epsilon=real_in(0.0), name=NAME)
def instance_norm(input, epsilon=1e-05, param_attr=None, bias_attr=None, name=None):
    """Normalise each (sample, channel) slice of [N, C, ...] over its positions
    (``instance_norm``): Y = (X - mu) / sqrt(var + epsilon) * scale[c] + bias[c], scale
    ``instance_norm_0.w_0`` (ones) and bias ``.b_0`` (zeros) of shape [C]."""
    _float_input("instance_norm", input)
    if bias_attr is False:
        raise InvalidArgument("instance_norm: bias_attr expected a ParamAttr or None, but "
                              "received False")
    helper = LayerHelper("instance_norm", input=input, param_attr=param_attr,
                         bias_attr=bias_attr, name=name)
    dtype = helper.input_dtype()
    if dtype == VarType.FP16:
        dtype = VarType.FP32
    shape = [input.shape[1]]
    scale = helper.create_parameter(attr=helper.param_attr, shape=shape, dtype=dtype,
                                    default_initializer=ConstantInitializer(1.0))
    bias = helper.create_parameter(attr=helper.bias_attr, shape=shape, dtype=dtype,
                                   is_bias=True, default_initializer=ConstantInitializer(0.0))
    saved_mean = helper.create_variable_for_type_inference(dtype=dtype, stop_gradient=True)
    saved_variance = helper.create_variable_for_type_inference(dtype=dtype, stop_gradient=True)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="instance_norm",
                     inputs={"X": [input], "Scale": [scale], "Bias": [bias]},
                     outputs={"Y": [out], "SavedMean": [saved_mean],
                              "SavedVariance": [saved_variance]},
                     attrs={"epsilon": epsilon})
    return out


@checks(input=variable, groups=POSITIVE_INT, epsilon=real_in(0.0), act=activation,
        data_layout=one_of("NCHW", "NHWC"), name=NAME)
def group_norm(input, groups, epsilon=1e-05, param_attr=None, bias_attr=None, act=None,
               data_layout="NCHW", name=None):
    """Normalise each (sample, group of channels) over its channels and positions
    (``group_norm``). As in Fluid 1.8, the scale ``group_norm_0.w_0`` (ones) and the bias
    ``.b_0`` exist only when param_attr / bias_attr are given (truthy); the defaults give a
    group_norm without them."""
    _float_input("group_norm", input)
    helper = LayerHelper("group_norm", input=input, param_attr=param_attr,
                         bias_attr=bias_attr, act=act, name=name)
    dtype = helper.input_dtype()
    channels = input.shape[1] if data_layout == "NCHW" else input.shape[-1]
    if channels > 0 and channels % groups:
        raise InvalidArgument(f"group_norm: groups expected to divide the {channels} "
                              f"channels, but received {groups}")
    inputs = {"X": [input]}
    if param_attr:
        inputs["Scale"] = [helper.create_parameter(
            attr=helper.param_attr, shape=[channels], dtype=dtype,
            default_initializer=ConstantInitializer(1.0))]
    if bias_attr:
        inputs["Bias"] = [helper.create_parameter(attr=helper.bias_attr, shape=[channels],
                                                  dtype=dtype, is_bias=True)]
    mean = helper.create_variable(dtype=dtype, stop_gradient=True)
    variance = helper.create_variable(dtype=dtype, stop_gradient=True)
    out = helper.create_variable(dtype=dtype)
    helper.append_op(type="group_norm", inputs=inputs,
                     outputs={"Y": [out], "Mean": [mean], "Variance": [variance]},
                     attrs={"epsilon": epsilon, "groups": groups,
                            "data_layout": data_layout})
    return helper.append_activation(out)


@checks(input=variable, n=POSITIVE_INT, k=NUMBER, alpha=NUMBER, beta=NUMBER, name=NAME,
        data_format=one_of("NCHW", "NHWC"))
def lrn(input, n=5, k=1.0, alpha=1e-4, beta=0.75, name=None, data_format="NCHW"):
    """Local response normalisation across channels (``lrn``):
    Out[c] = X[c] / (k + alpha * sum_{j=c-(n-1)//2}^{c-(n-1)//2+n-1} X[j]^2) ^ beta."""
    if len(input.shape) != 4:
        raise InvalidArgument(f"lrn: input expected a 4-D tensor, but received shape "
                              f"{list(input.shape)}")
    helper = LayerHelper("lrn", input=input, name=name)
    dtype = helper.input_dtype()
    mid = helper.create_variable_for_type_inference(dtype=dtype, stop_gradient=True)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="lrn", inputs={"X": [input]},
                     outputs={"Out": [out], "MidOut": [mid]},
                     attrs={"n": n, "k": float(k), "alpha": float(alpha),
                            "beta": float(beta), "data_format": data_format})
    return out


@checks(x=variable, mode=one_of("all", "channel", "element"), name=NAME)
def prelu(x, mode, param_attr=None, name=None):
    """Parametric ReLU (``prelu``): x where x > 0, alpha * x elsewhere, alpha
    ``prelu_0.w_0`` (0.25, float32) of shape [1] (mode 'all'), [1, C, 1, 1] ('channel') or
    [1, *x.shape[1:]] ('element')."""
    _float_input("prelu", x)
    helper = LayerHelper("prelu", x=x, param_attr=param_attr, name=name)
    if mode == "channel":
        if len(x.shape) < 2:
            raise InvalidArgument(f"prelu: x expected rank >= 2 for mode 'channel', but "
                                  f"received shape {list(x.shape)}")
        alpha_shape = [1, x.shape[1], 1, 1]
    elif mode == "element":
        alpha_shape = [1] + list(x.shape)[1:]
    else:
        alpha_shape = [1]
    alpha = helper.create_parameter(attr=helper.param_attr, shape=alpha_shape,
                                    dtype="float32", is_bias=False,
                                    default_initializer=ConstantInitializer(0.25))
    out = helper.create_variable_for_type_inference(helper.input_dtype(input_param_name="x"))
    helper.append_op(type="prelu", inputs={"X": [x], "Alpha": [alpha]},
                     outputs={"Out": [out]}, attrs={"mode": mode})
    return out


@checks(label=variable, prior_dist=optional(variable), epsilon=real_in(0.0, 1.0),
        dtype=dtype, name=NAME)
def label_smooth(label, prior_dist=None, epsilon=0.1, dtype="float32", name=None):
    """(1 - epsilon) * label + epsilon * prior_dist (the uniform 1/K without it) with
    ``label_smooth``; the label stops gradients, as in Fluid."""
    _float_input("label_smooth", label)
    helper = LayerHelper("label_smooth", name=name)
    label.stop_gradient = True
    out = helper.create_variable_for_type_inference(dtype)
    inputs = {"X": [label]}
    if prior_dist is not None:
        inputs["PriorDist"] = [prior_dist]
    helper.append_op(type="label_smooth", inputs=inputs, outputs={"Out": [out]},
                     attrs={"epsilon": float(epsilon)})
    return out


@checks(input=variable, act=activation, epsilon=real_in(0.0), data_layout=one_of("NCHW", "NHWC"),
        in_place=boolean, name=NAME, slot_dim=INT, sync_stats=boolean,
        summary_decay_rate=real_in(0.0, 1.0), enable_scale_and_shift=boolean)
def data_norm(input, act=None, epsilon=1e-05, param_attr=None, data_layout="NCHW",
              in_place=False, name=None, moving_mean_name=None, moving_variance_name=None,
              do_model_average_for_mean_and_var=True, slot_dim=-1, sync_stats=False,
              summary_decay_rate=0.9999999, enable_scale_and_shift=False):
    """Normalise [N, C] features by running summaries (``data_norm``):
    (x - batch_sum / batch_size) * sqrt(batch_size / batch_square_sum), with the summaries
    ``<name>.batch_size`` (1e4), ``.batch_sum`` (0), ``.batch_square_sum`` (1e4) (``name``
    defaults to 'dn'; a dict param_attr sets their starting values) and, with
    enable_scale_and_shift, ``.scale_w`` and ``.bias``."""
    helper = LayerHelper("data_norm", input=input, act=act, name=name)
    dtype = helper.input_dtype()
    channels = input.shape[1] if data_layout == "NCHW" else input.shape[-1]
    defaults = {"batch_size": 1e4, "batch_sum": 0.0, "batch_square": 1e4, "scale_w": 1.0,
                "bias": 0.0}
    if param_attr and isinstance(param_attr, dict):
        defaults.update({k: v for k, v in param_attr.items() if k in defaults})
    name = name or "dn"

    def summary(suffix, value):
        return helper.create_parameter(
            attr=ParamAttr(name=f"{name}.{suffix}",
                           initializer=ConstantInitializer(float(value)), trainable=True),
            shape=[channels], dtype=input.dtype)
    inputs = {"X": [input]}
    if enable_scale_and_shift:
        inputs["scale_w"] = [summary("scale_w", defaults["scale_w"])]
        inputs["bias"] = [summary("bias", defaults["bias"])]
    batch_size = summary("batch_size", defaults["batch_size"])
    batch_sum = summary("batch_sum", defaults["batch_sum"])
    batch_square_sum = summary("batch_square_sum", defaults["batch_square"])
    inputs.update({"BatchSize": [batch_size], "BatchSum": [batch_sum],
                   "BatchSquareSum": [batch_square_sum]})
    means = helper.create_variable(dtype=dtype, stop_gradient=True)
    scales = helper.create_variable(dtype=dtype, stop_gradient=True)
    out = input if in_place else helper.create_variable(dtype=dtype)
    attrs = {"epsilon": epsilon, "sync_stats": sync_stats,
             "summary_decay_rate": summary_decay_rate}
    if slot_dim > 0:
        attrs["slot_dim"] = slot_dim
    if enable_scale_and_shift:
        attrs["enable_scale_and_shift"] = True
    helper.append_op(type="data_norm", inputs=inputs,
                     outputs={"Y": [out], "Means": [means], "Scales": [scales],
                              "BatchSize": [batch_size], "BatchSum": [batch_sum],
                              "BatchSquareSum": [batch_square_sum]},
                     attrs=attrs)
    return helper.append_activation(out)


@checks(input=variable, act=one_of(None, "identity", "leaky_relu", "elu"), is_test=boolean,
        momentum=or_variable(PROBABILITY), epsilon=real_in(0.0),
        data_layout=one_of("NCHW", "NHWC"), name=NAME, use_global_stats=boolean,
        act_alpha=NUMBER)
def inplace_abn(input, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None,
                bias_attr=None, data_layout="NCHW", name=None, moving_mean_name=None,
                moving_variance_name=None, do_model_average_for_mean_and_var=True,
                use_global_stats=False, act_alpha=1.0):
    """batch_norm and an activation (identity, leaky_relu or elu, slope/scale act_alpha)
    written over ``input`` (``inplace_abn``); parameters as batch_norm names them
    (``inplace_abn_0.w_0`` scale, ``.b_0`` bias, ``.w_1``/``.w_2`` moving mean and
    variance). Returns ``input``, now holding the result."""
    if bias_attr is False:
        raise InvalidArgument("inplace_abn: bias_attr expected a ParamAttr or None, but "
                              "received False")
    helper = LayerHelper("inplace_abn", input=input, param_attr=param_attr,
                         bias_attr=bias_attr, name=name)
    dtype = helper.input_dtype()
    channels = input.shape[1] if data_layout == "NCHW" else input.shape[-1]
    shape = [channels]
    scale = helper.create_parameter(attr=helper.param_attr, shape=shape, dtype=dtype,
                                    default_initializer=ConstantInitializer(1.0))
    bias = helper.create_parameter(attr=helper.bias_attr, shape=shape, dtype=dtype,
                                   is_bias=True)

    def moving(stat_name, value):
        var = helper.create_parameter(
            attr=ParamAttr(name=stat_name, initializer=ConstantInitializer(value),
                           trainable=False, do_model_average=do_model_average_for_mean_and_var),
            shape=shape, dtype=dtype)
        var.stop_gradient = True
        return var
    mean = moving(moving_mean_name, 0.0)
    variance = moving(moving_variance_name, 1.0)
    saved_mean = helper.create_variable_for_type_inference(dtype=dtype, stop_gradient=True)
    saved_variance = helper.create_variable_for_type_inference(dtype=dtype, stop_gradient=True)
    inputs = {"X": [input], "Scale": [scale], "Bias": [bias], "Mean": [mean],
              "Variance": [variance]}
    attrs = {"epsilon": epsilon, "is_test": is_test, "data_layout": data_layout,
             "use_mkldnn": False, "fuse_with_relu": False, "use_global_stats": use_global_stats,
             "activation": act or "identity", "alpha": float(act_alpha)}
    if isinstance(momentum, Variable):
        inputs["MomentumTensor"] = [momentum]
    else:
        attrs["momentum"] = momentum
    helper.append_op(type="inplace_abn", inputs=inputs,
                     outputs={"Y": [input], "MeanOut": [mean], "VarianceOut": [variance],
                              "SavedMean": [saved_mean], "SavedVariance": [saved_variance]},
                     attrs=attrs)
    return input
