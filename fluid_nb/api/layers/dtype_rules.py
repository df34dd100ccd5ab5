"""The dtypes each Fluid 1.8 layer accepts, and the one check every layer runs on them.

Fluid 1.8's layers call ``check_variable_and_dtype`` on their tensor arguments at the call,
so ``fluid.layers.relu(int32_var)`` is a TypeError before any op is added. The table below
lists, for each layer that checks, the dtypes Fluid 1.8 accepts per argument (taken from its
layer sources); :func:`apply` has those layers check them (a layer with argument checks in
the same call, any other in a wrapper), so a Variable of another dtype is refused with
:class:`~fluid_nb.errors.InvalidType` naming the layer, the argument and the dtypes.
"""
import functools
import inspect

from ...errors import InvalidType, expected
from ...framework.program import Variable
from ...tensor.dtypes import convert_dtype, dtype_name

__all__ = ["FLUID18_DTYPES", "apply"]

_BOOL = ('bool',)
_BOOL_I32_I64_F32_F64 = ('bool', 'int32', 'int64', 'float32', 'float64')
_BOOL_UI8_I32_I64_F16_F32_F64 = ('bool', 'uint8', 'int32', 'int64', 'float16', 'float32', 'float64')
_F16_F32_F64 = ('float16', 'float32', 'float64')
_F32 = ('float32',)
_F32_F64 = ('float32', 'float64')
_I32 = ('int32',)
_I32_I64 = ('int32', 'int64')
_I32_I64_F16_F32_F64 = ('int32', 'int64', 'float16', 'float32', 'float64')
_I32_I64_F32_F64 = ('int32', 'int64', 'float32', 'float64')
_I64 = ('int64',)
_I64_F32_F64 = ('int64', 'float32', 'float64')
_I8_I32_I64_F32_F64 = ('int8', 'int32', 'int64', 'float32', 'float64')
_UI8_I16_I32_I64_F32_F64 = ('uint8', 'int16', 'int32', 'int64', 'float32', 'float64')
_UI8_I32_I64 = ('uint8', 'int32', 'int64')
_UI8_I8_I16_I32_I64_F16_F32_F64 = ('uint8', 'int8', 'int16', 'int32', 'int64', 'float16', 'float32', 'float64')

#: layer -> {argument: the dtypes Fluid 1.8 accepts for it}
FLUID18_DTYPES = {
    "Print": {"input": _BOOL_I32_I64_F32_F64},
    "accuracy": {"input": _F16_F32_F64},
    "adaptive_pool2d": {"input": _I32_I64_F16_F32_F64},
    "adaptive_pool3d": {"input": _I32_I64_F16_F32_F64},
    "argmax": {"x": _UI8_I16_I32_I64_F32_F64},
    "argmin": {"x": _UI8_I16_I32_I64_F32_F64},
    "argsort": {"input": _UI8_I16_I32_I64_F32_F64},
    "array_read": {"i": _I64},
    "array_write": {"i": _I64},
    "batch_norm": {"input": _F16_F32_F64},
    "box_clip": {"im_info": _F32_F64, "input": _F32_F64},
    "box_coder": {"prior_box": _F32_F64, "target_box": _F32_F64},
    "box_decoder_and_assign": {"box_score": _F32_F64, "prior_box": _F32_F64, "target_box": _F32_F64},
    "brelu": {"x": _F16_F32_F64},
    "cast": {"x": _BOOL_UI8_I32_I64_F16_F32_F64},
    "center_loss": {"alpha": _F32_F64, "input": _F32_F64, "label": _I32_I64},
    "clip": {"x": _F16_F32_F64},
    "clip_by_norm": {"x": _F32},
    "cond": {"pred": _BOOL},
    "conv2d": {"input": _F16_F32_F64},
    "cos_sim": {"X": _F32, "Y": _F32},
    "crop_tensor": {"x": _I32_I64_F32_F64},
    "cross_entropy": {"input": _F16_F32_F64},
    "ctc_greedy_decoder": {"input": _F32_F64},
    "deformable_conv": {"input": _F32_F64, "offset": _F32_F64},
    "deformable_roi_pooling": {"input": _F32_F64, "rois": _F32_F64, "trans": _F32_F64},
    "distribute_fpn_proposals": {"fpn_rois": _F32_F64},
    "dropout": {"x": _F16_F32_F64},
    "elu": {"x": _F16_F32_F64},
    "embedding": {"input": _I64},
    "equal": {"x": _I32_I64_F32_F64, "y": _I32_I64_F32_F64},
    "expand": {"x": _BOOL_I32_I64_F32_F64},
    "fill_constant": {"shape": _I32_I64},
    "fsp_matrix": {"x": _F32_F64, "y": _F32_F64},
    "greater_equal": {"x": _I32_I64_F32_F64, "y": _I32_I64_F32_F64},
    "greater_than": {"x": _I32_I64_F32_F64, "y": _I32_I64_F32_F64},
    "grid_sampler": {"grid": _F32_F64, "x": _F32_F64},
    "hard_shrink": {"x": _F16_F32_F64},
    "hard_sigmoid": {"x": _F16_F32_F64},
    "hard_swish": {"x": _F16_F32_F64},
    "hsigmoid": {"input": _F32_F64, "label": _I64},
    "huber_loss": {"input": _F32_F64, "label": _F32_F64},
    "increment": {"x": _I32_I64_F32_F64},
    "inplace_abn": {"input": _F32_F64},
    "instance_norm": {"input": _F32_F64},
    "isfinite": {"x": _I32_I64_F32_F64},
    "kldiv_loss": {"target": _F32_F64, "x": _F32_F64},
    "l2_normalize": {"x": _F32_F64},
    "leaky_relu": {"x": _F16_F32_F64},
    "less_equal": {"x": _I32_I64_F32_F64, "y": _I32_I64_F32_F64},
    "less_than": {"x": _I32_I64_F32_F64, "y": _I32_I64_F32_F64},
    "linspace": {"num": _I32, "start": _F32_F64, "stop": _F32_F64},
    "locality_aware_nms": {"bboxes": _F32_F64, "scores": _F32_F64},
    "lod_append": {"level": _I32, "x": _I32_I64_F32_F64},
    "lod_reset": {"x": _I32_I64_F32_F64},  # (y is checked only when it has no LoD)
    "log": {"x": _F32_F64},
    "lrn": {"input": _F32},
    "matmul": {"x": _F16_F32_F64, "y": _F16_F32_F64},
    "maxout": {"x": _F32_F64},
    "mean": {"x": _F16_F32_F64},
    "mean_iou": {"input": _I32_I64, "label": _I32_I64},
    "mse_loss": {"input": _F32_F64, "label": _F32_F64},
    "mul": {"x": _F16_F32_F64, "y": _F16_F32_F64},
    "multiclass_nms": {"bboxes": _F32_F64, "scores": _F32_F64},
    "nce": {"input": _F32_F64, "label": _I64},
    "not_equal": {"x": _I32_I64_F32_F64, "y": _I32_I64_F32_F64},
    "npair_loss": {"anchor": _F32_F64, "labels": _I64_F32_F64, "positive": _F32_F64},
    "one_hot": {"input": _I32_I64},
    "ones_like": {"out": _BOOL_I32_I64_F32_F64, "x": _BOOL_I32_I64_F32_F64},
    "pad": {"x": _I32_I64_F16_F32_F64},
    "pad2d": {"input": _I32_I64_F16_F32_F64},
    "pad_constant_like": {"y": _I32_I64_F32_F64},
    "polygon_box_transform": {"input": _F32_F64},
    "pow": {"factor": _F32, "x": _I32_I64_F32_F64},
    "prelu": {"x": _F32_F64},
    "prroi_pool": {"input": _F32, "rois": _F32},
    "reduce_all": {"input": _BOOL},
    "reduce_any": {"input": _BOOL},
    "reduce_mean": {"input": _I32_I64_F32_F64},
    "reduce_sum": {"input": _I32_I64_F32_F64},
    "relu": {"x": _F16_F32_F64},
    "relu6": {"x": _F16_F32_F64},
    "reshape": {"x": _I32_I64_F16_F32_F64},
    "retinanet_detection_output": {"im_info": _F32_F64},
    "retinanet_target_assign": {"anchor_box": _F32_F64, "anchor_var": _F32_F64, "bbox_pred": _F32_F64, "cls_logits": _F32_F64, "gt_boxes": _F32_F64, "gt_labels": _I32, "im_info": _F32_F64, "is_crowd": _I32},
    "roi_align": {"input": _F32_F64, "rois": _F32_F64},
    "roi_perspective_transform": {"input": _F32, "rois": _F32},
    "roi_pool": {"input": _F32, "rois": _F32},
    "scale": {"x": _UI8_I8_I16_I32_I64_F16_F32_F64},
    "select_input": {"mask": _I32},
    "selu": {"x": _F32_F64},
    "sigmoid_focal_loss": {"fg_num": _I32, "label": _I32, "x": _F32_F64},
    "smooth_l1": {"x": _F32_F64, "y": _F32_F64},
    "soft_relu": {"x": _F16_F32_F64},
    "softmax": {"input": _F16_F32_F64},
    "softshrink": {"x": _F16_F32_F64},
    "spectral_norm": {"weight": _F32_F64},
    "square_error_cost": {"input": _F32_F64, "label": _F32_F64},
    "squeeze": {"input": _I8_I32_I64_F32_F64},
    "stanh": {"x": _F16_F32_F64},
    "sums": {"input": _I32_I64_F32_F64, "out": _I32_I64_F32_F64},
    "swish": {"x": _F16_F32_F64},
    "switch_case": {"branch_index": _UI8_I32_I64},
    "teacher_student_sigmoid_loss": {"input": _F32_F64, "label": _F32_F64},
    "temporal_shift": {"x": _F32_F64},
    "thresholded_relu": {"x": _F16_F32_F64},
    "transpose": {"x": _I32_I64_F16_F32_F64},
    "uniform_random_batch_size_like": {"input": _F32_F64},
    "unique": {"x": _I32_I64_F32_F64},
    "unique_with_counts": {"x": _I32_I64_F32_F64},
    "zeros_like": {"out": _BOOL_I32_I64_F32_F64, "x": _BOOL_I32_I64_F32_F64},
}


def check_dtypes(where, arg, value, allowed, dtypes):
    """Refuse a Variable ``value`` (or a list's Variable: sums' input, each checked as Fluid
    does) whose dtype is not in ``allowed``; anything else is the argument rules' to judge."""
    for item in value if isinstance(value, (list, tuple)) else (value,):
        if isinstance(item, Variable) and item.dtype not in allowed:
            raise InvalidType(expected(where, f"{arg}'s dtype", "one of " + ", ".join(dtypes),
                                       dtype_name(item.dtype)))


def _slots(layer, rules):
    names = list(inspect.signature(layer).parameters)
    return [(names.index(arg), arg, frozenset(convert_dtype(d) for d in dtypes), dtypes)
            for arg, dtypes in rules.items() if arg in names]


def _checked(layer, slots):
    where = layer.__name__

    @functools.wraps(layer)
    def checked_layer(*args, **kwargs):
        for index, arg, allowed, dtypes in slots:
            check_dtypes(where, arg, args[index] if index < len(args) else kwargs.get(arg),
                         allowed, dtypes)
        return layer(*args, **kwargs)
    return checked_layer


def apply(namespace, modules):
    """Wrap every layer of ``namespace`` (a module's dict) that the table names, and the same
    function where ``modules`` define it, so ``fluid.layers.nn.relu`` checks as
    ``fluid.layers.relu`` does."""
    for name, rules in FLUID18_DTYPES.items():
        layer = namespace.get(name)
        if layer is None or hasattr(layer, "__wrapped_dtypes__"):
            continue
        slots = _slots(layer, rules)
        given_to = getattr(layer, "__check_dtypes__", None)
        if given_to is not None:  # a layer with argument checks: its own call checks these
            given_to(slots, check_dtypes)
            layer.__wrapped_dtypes__ = rules
            continue
        wrapped = _checked(layer, slots)
        wrapped.__wrapped_dtypes__ = rules
        namespace[name] = wrapped
        for module in modules:
            if getattr(module, name, None) is layer:
                setattr(module, name, wrapped)
