"""Paddle 1.8's OpTest API on fluid_nb's public API (see README.md beside this file).

The original file is kept as op_test_paddle.py. This one builds a one-op fluid_nb program
per check and runs it on CPU. Output checks: np.allclose(actual, expect, atol) per output (atol as
given, default 1e-5), no_check_set honoured, LoD outputs compared by data and lod. Gradient
checks: analytic gradient from append_backward on mean(output) (mean of means for several
outputs, as Paddle's append_loss_ops) against a central finite difference of the same loss
(delta as given, default 0.005), compared with Paddle's relative-error rule
(max_relative_error as given, default 0.005). GPU places and MKL-DNN cases are skipped.

Messages of assertion failures start with "OUTPUT" or "GRAD" so the summary can tell
result differences from exceptions.
"""
from __future__ import print_function

import os
import random
import unittest

import numpy as np
import six

import paddle.fluid as fluid
import paddle.fluid.core as core
# Paddle's op_test imports Operator from paddle.fluid.op; tests then reach it as fluid.op
from paddle.fluid.op import Operator  # noqa: F401

from white_list import op_threshold_white_list

import fluid_nb
from fluid_nb.ops import registry

STRICT_FP64 = os.environ.get("P18_STRICT_FP64") == "1"


def _set_use_system_allocator(value=None):
    return None


def randomize_probability(batch_size, class_num, dtype='float32'):
    prob = np.random.uniform(
        0.1, 1.0, size=(batch_size, class_num)).astype(dtype)
    prob_sum = prob.sum(axis=1)
    for i in six.moves.xrange(len(prob)):
        prob[i] /= prob_sum[i]
    return prob


def skip_check_grad_ci(reason=None):
    if not isinstance(reason, str):
        raise AssertionError("The reason for skipping check_grad is required.")

    def wrapper(cls):
        cls.no_need_check_grad = True
        return cls

    return wrapper


def convert_float_to_uint16(float_list):
    arr = np.asarray(float_list, dtype=np.float32)
    return (arr.view(np.uint32) >> 16).astype(np.uint16)


def _is_np(v):
    return isinstance(v, (np.ndarray, np.generic))


def _is_dup_form(value):
    """[(name, array), ...] or [(name, (array, lod)), ...]"""
    return isinstance(value, list) and len(value) > 0 and all(
        isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str)
        for item in value)


def _split(value):
    """(array, recursive lod or None) of one variable's given value."""
    if isinstance(value, tuple) and len(value) == 2 and not _is_np(value[1]) \
            and (isinstance(value[1], (list, tuple))):
        return np.asarray(value[0]), value[1]
    return np.asarray(value), None


def _vars_of(slot, value):
    """[(var name, value)] for a slot's given value."""
    if _is_dup_form(value):
        return [(name, v) for name, v in value]
    return [(slot, value)]


class _Skip(Exception):
    pass


class OpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._np_rand_state = np.random.get_state()
        cls._py_rand_state = random.getstate()
        cls.call_once = False
        cls.dtype = None
        cls.outputs = {}
        cls.input_shape_is_large = True
        np.random.seed(123)
        random.seed(124)

    @classmethod
    def tearDownClass(cls):
        np.random.set_state(cls._np_rand_state)
        random.setstate(cls._py_rand_state)

    def try_call_once(self, data_type):
        if not self.call_once:
            self.call_once = True
            self.dtype = data_type

    # --- dtype ---------------------------------------------------------------------------
    def infer_dtype_from_inputs_outputs(self, inputs, outputs):
        dtype_set = set()
        for _, var_value in six.iteritems(inputs):
            if _is_np(var_value):
                dtype_set.add(var_value.dtype)
            elif isinstance(var_value, (list, tuple)):
                for sub in var_value:
                    if _is_np(sub):
                        dtype_set.add(sub.dtype)
                    elif isinstance(sub, (list, tuple)) and len(sub) > 1 and _is_np(sub[1]):
                        dtype_set.add(sub[1].dtype)
                    elif isinstance(sub, (list, tuple)) and len(sub) > 1 and isinstance(
                            sub[1], (list, tuple)) and len(sub[1]) and _is_np(sub[1][0]):
                        dtype_set.add(sub[1][0].dtype)
        order = [np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8,
                 np.uint8, np.bool_]
        self.dtype = None
        for dtype in order:
            if np.dtype(dtype) in dtype_set:
                self.dtype = np.dtype(dtype)
                break
        self.__class__.dtype = self.dtype

    @staticmethod
    def np_dtype_to_fluid_dtype(input):
        return input

    @staticmethod
    def fluid_dtype_to_np_dtype(self, dtype):
        return dtype

    @staticmethod
    def np_value_to_fluid_value(input):
        return input

    # --- places --------------------------------------------------------------------------
    def _is_mkldnn(self):
        return (getattr(self, "use_mkldnn", False) is True or
                (isinstance(getattr(self, "attrs", None), dict)
                 and self.attrs.get("use_mkldnn") is True))

    def _get_places(self):
        self.infer_dtype_from_inputs_outputs(getattr(self, "inputs", {}),
                                             getattr(self, "outputs", {}))
        if self.dtype == np.float16:
            return []
        return [fluid.CPUPlace()]

    def _usable(self, place):
        """False (and the test skipped if nothing was checked yet) for places we skip."""
        if self._is_mkldnn():
            raise unittest.SkipTest("MKL-DNN case")
        if not isinstance(place, fluid.CPUPlace):
            if not getattr(self, "_checked_any", False):
                raise unittest.SkipTest("GPU place")
            return False
        return True

    # --- program -------------------------------------------------------------------------
    def _opdef(self):
        return registry.get(self.op_type)

    def _build(self, for_grad=False):
        """(program, block, op, feed names -> (array, lod), output vars by slot)."""
        opdef = self._opdef()
        self.infer_dtype_from_inputs_outputs(self.inputs, getattr(self, "outputs", {}))
        program = fluid.Program()
        block = program.global_block()
        inputs, feed = {}, {}
        for slot, value in six.iteritems(self.inputs):
            names = []
            declared = opdef.input_slots.get(slot)
            if isinstance(value, list) and not value and declared is not None \
                    and declared.duplicable:
                # Paddle's OpTest reads an empty list of a duplicable slot as no variables
                inputs[slot] = names
                continue
            for name, v in _vars_of(slot, value):
                arr, lod = _split(v)
                block.create_var(name=name, shape=list(arr.shape), dtype=arr.dtype,
                                 lod_level=len(lod) if lod else 0)
                feed[name] = (arr, lod)
                names.append(name)
            inputs[slot] = names
        outputs = {}
        given = getattr(self, "outputs", {}) or {}
        for slot in opdef.outputs:
            if slot.name in given:
                names = []
                for name, v in _vars_of(slot.name, given[slot.name]):
                    try:
                        arr, _ = _split(v)
                        dtype = arr.dtype if arr.dtype != object else None
                    except Exception:
                        dtype = None
                    kwargs = {"name": name}
                    if dtype is not None:
                        kwargs["dtype"] = dtype
                    block.create_var(**kwargs)
                    names.append(name)
                outputs[slot.name] = names
            elif not slot.dispensable:
                block.create_var(name=slot.name)
                outputs[slot.name] = [slot.name]
        extra = [k for k in given if k not in opdef.output_slots]
        if extra:
            raise AssertionError("OUTPUT slots %s: fluid_nb's %s has no such output slot "
                                 "(it has %s)" % (extra, self.op_type,
                                                  [s.name for s in opdef.outputs]))
        attrs = dict(getattr(self, "attrs", {}) or {})
        op = block.append_op(type=self.op_type, inputs=inputs, outputs=outputs, attrs=attrs)
        return program, block, op, feed, outputs

    @staticmethod
    def _feed(feed, place, override=None):
        out = {}
        for name, (arr, lod) in feed.items():
            if override is not None and name in override:
                arr = override[name]
            t = fluid.LoDTensor()
            t.set(arr, place)
            if lod:
                t.set_recursive_sequence_lengths([list(l) for l in lod])
            out[name] = t
        return out

    def _calc_output(self, place, parallel=False, no_check_set=None):
        # (Paddle's signature; ``parallel`` ran the op through a ParallelExecutor, which on
        # one place computes the same outputs)
        program, block, op, feed, outputs = self._build()
        fetch_list = list(getattr(self, "fetch_list", []) or [])
        given = getattr(self, "outputs", {}) or {}
        if not fetch_list:
            for slot, names in outputs.items():
                if slot not in given:
                    continue
                if no_check_set is not None and slot in no_check_set:
                    continue
                fetch_list.extend(names)
        if not fetch_list:
            fetch_list = [n for names in outputs.values() for n in names]
        exe = fluid.Executor(place)
        outs = exe.run(program, feed=self._feed(feed, place), fetch_list=fetch_list,
                       scope=fluid.Scope(), return_numpy=False)
        self.op = op
        self.program = program
        return outs, fetch_list

    def calc_output(self, place):
        outs, _ = self._calc_output(place)
        return outs

    # --- output checks -------------------------------------------------------------------
    def check_output_with_place(self, place, atol=1e-5, no_check_set=None, equal_nan=False,
                                check_dygraph=True, inplace_atol=None):
        if not self._usable(place):
            return ([], [], []) if check_dygraph else ([], [])
        if atol is None:
            atol = 1e-5
        outs, fetch_list = self._calc_output(place, no_check_set=no_check_set)
        by_name = dict(zip(fetch_list, outs))
        given = getattr(self, "outputs", {}) or {}
        for slot in self._opdef().outputs:
            if slot.name not in given:
                continue
            if no_check_set is not None and slot.name in no_check_set:
                continue
            for name, expect in _vars_of(slot.name, given[slot.name]):
                if name not in by_name:
                    continue
                actual = by_name[name]
                expect_t = expect[0] if isinstance(expect, tuple) else expect
                actual_t = np.array(actual)
                expect_t = np.asarray(expect_t)
                try:
                    close = np.allclose(actual_t, expect_t, atol=atol, equal_nan=equal_nan)
                except (ValueError, TypeError) as e:
                    raise AssertionError("OUTPUT (%s): shapes %s vs expected %s: %s" % (
                        name, actual_t.shape, expect_t.shape, e))
                if not close:
                    raise AssertionError(
                        "OUTPUT (%s) has diff in %s: shape %s vs expected %s\nExpect %s\nBut "
                        "got %s" % (name, self.__class__.__name__, actual_t.shape,
                                    expect_t.shape, str(expect_t)[:600], str(actual_t)[:600]))
                if isinstance(expect, tuple):
                    got_lod = actual.recursive_sequence_lengths()
                    want = [list(l) for l in expect[1]]
                    if [list(l) for l in got_lod] != want:
                        raise AssertionError("OUTPUT (%s) lod %s, expected %s" % (
                            name, got_lod, want))
        self._checked_any = True
        if check_dygraph:
            return outs, outs, fetch_list
        return outs, fetch_list

    def check_output(self, atol=1e-5, no_check_set=None, equal_nan=False, check_dygraph=True,
                     inplace_atol=None):
        self.__class__.op_type = self.op_type
        places = self._get_places()
        if not places:
            raise unittest.SkipTest("float16 (GPU only)")
        for place in places:
            self.check_output_with_place(place, atol, no_check_set, equal_nan, check_dygraph)

    def check_output_customized(self, checker):
        places = self._get_places()
        if not places:
            raise unittest.SkipTest("float16 (GPU only)")
        for place in places:
            if not self._usable(place):
                continue
            outs = self.calc_output(place)
            outs = [np.array(out) for out in outs]
            outs.sort(key=len)
            checker(outs)

    # --- gradient checks -----------------------------------------------------------------
    def _assert_is_close(self, numeric_grads, analytic_grads, names, max_relative_error,
                         msg_prefix):
        for a, b, name in six.moves.zip(numeric_grads, analytic_grads, names):
            a = np.asarray(a, dtype=np.float64)
            b = np.asarray(b, dtype=np.float64)
            if a.shape != b.shape:
                if a.size == b.size:
                    b = b.reshape(a.shape)
                else:
                    raise AssertionError("GRAD %s: analytic gradient shape %s, numeric %s" % (
                        name, b.shape, a.shape))
            abs_a = np.abs(a)
            if self.dtype == np.float64 and self.op_type not in \
                    op_threshold_white_list.NEED_FIX_FP64_CHECK_GRAD_THRESHOLD_OP_LIST:
                abs_a[abs_a < 1e-10] = 1e-3
                abs_a[np.logical_and(abs_a > 1e-10, abs_a <= 1e-8)] *= 1e4
                abs_a[np.logical_and(abs_a > 1e-8, abs_a <= 1e-6)] *= 1e2
            else:
                abs_a[abs_a < 1e-3] = 1
            diff_mat = np.abs(a - b) / abs_a
            max_diff = np.max(diff_mat) if diff_mat.size else 0.0
            if not max_diff <= max_relative_error:
                offset = int(np.argmax(diff_mat > max_relative_error))
                raise AssertionError(
                    "GRAD %s error, %s variable %s max gradient diff %f over limit %f, the "
                    "first error element is %d, expected %f, but got %f." % (
                        self.op_type, msg_prefix, name, max_diff, max_relative_error, offset,
                        a.flatten()[offset], b.flatten()[offset]))

    def _check_grad_helper(self):
        self.infer_dtype_from_inputs_outputs(self.inputs, getattr(self, "outputs", {}))
        self.__class__.op_type = self.op_type
        self.__class__.exist_check_grad = True
        if self.dtype == np.float64:
            self.__class__.exist_fp64_check_grad = True

    def check_grad(self, inputs_to_check, output_names, no_grad_set=None,
                   numeric_grad_delta=0.005, in_place=False, max_relative_error=0.005,
                   user_defined_grads=None, check_dygraph=True):
        self._check_grad_helper()
        places = self._get_places()
        if not places:
            raise unittest.SkipTest("float16 (GPU only)")
        for place in places:
            self.check_grad_with_place(place, inputs_to_check, output_names, no_grad_set,
                                       numeric_grad_delta, in_place, max_relative_error,
                                       user_defined_grads, check_dygraph)

    def _numeric_gradient(self, place, input_to_check, output_names, delta):
        program, block, op, feed, outputs = self._build()
        arr, _ = feed[input_to_check]
        dtype = arr.dtype
        if dtype not in (np.float32, np.float64, np.float16):
            raise ValueError("Not supported data type " + str(dtype))
        exe = fluid.Executor(place)
        scope = fluid.Scope()

        def loss(value):
            outs = exe.run(program, feed=self._feed(feed, place, {input_to_check: value}),
                           fetch_list=list(output_names), scope=scope, return_numpy=False)
            total = [np.array(o).astype(dtype).mean() for o in outs]
            return dtype.type(np.array(total).sum() / len(output_names))

        base = np.array(arr, copy=True)
        flat = base.reshape(-1)
        grad = np.zeros(flat.shape, dtype=dtype)
        for i in six.moves.xrange(flat.size):
            origin = flat[i]
            flat[i] = origin + dtype.type(delta)
            y_pos = loss(base)
            flat[i] = origin - dtype.type(delta)
            y_neg = loss(base)
            flat[i] = origin
            grad[i] = (y_pos - y_neg) / delta / 2
        return grad.reshape(arr.shape)

    def _get_gradient(self, input_to_check, place, output_names, no_grad_set):
        program, block, op, feed, outputs = self._build()
        with fluid.program_guard(program, fluid.Program()):
            if len(output_names) == 1:
                src = block.var(output_names[0])
                loss = block.create_var(name="loss@MEAN", dtype=src.dtype, shape=[1])
                block.append_op(type="mean", inputs={"X": [src.name]},
                                outputs={"Out": [loss.name]})
            else:
                avgs = []
                for i, n in enumerate(output_names):
                    src = block.var(n)
                    avg = block.create_var(name="avg@%d" % i, dtype=src.dtype, shape=[1])
                    block.append_op(type="mean", inputs={"X": [n]},
                                    outputs={"Out": [avg.name]})
                    avgs.append(avg.name)
                total = block.create_var(name="loss@SUM", dtype=block.var(avgs[0]).dtype,
                                         shape=[1])
                block.append_op(type="sum", inputs={"X": avgs}, outputs={"Out": [total.name]})
                loss = block.create_var(name="loss@MEAN", dtype=total.dtype, shape=[1])
                block.append_op(type="scale", inputs={"X": [total.name]},
                                outputs={"Out": [loss.name]},
                                attrs={"scale": 1.0 / float(len(avgs))})
            params_grads = fluid.backward.append_backward(
                loss=loss, parameter_list=list(input_to_check),
                no_grad_set=set(no_grad_set or ()))
        got = {p.name: g for p, g in params_grads}
        missing = [n for n in input_to_check if n not in got or got[n] is None]
        if missing:
            raise AssertionError("GRAD %s: no gradient produced for %s" % (self.op_type,
                                                                           missing))
        fetch = [got[n].name for n in input_to_check]
        exe = fluid.Executor(place)
        outs = exe.run(program, feed=self._feed(feed, place), fetch_list=fetch,
                       scope=fluid.Scope(), return_numpy=False)
        return [np.array(o) for o in outs]

    def check_grad_with_place(self, place, inputs_to_check, output_names, no_grad_set=None,
                              numeric_grad_delta=0.005, in_place=False,
                              max_relative_error=0.005, user_defined_grads=None,
                              check_dygraph=True):
        if not self._usable(place):
            return
        self._check_grad_helper()
        if STRICT_FP64 and self.dtype == np.float64 and self.op_type not in \
                op_threshold_white_list.NEED_FIX_FP64_CHECK_GRAD_THRESHOLD_OP_LIST:
            numeric_grad_delta = 1e-5
            max_relative_error = 1e-7
        if not isinstance(output_names, list):
            output_names = [output_names]
        if isinstance(inputs_to_check, str):
            inputs_to_check = [inputs_to_check]
        numeric_grads = user_defined_grads or [
            self._numeric_gradient(place, name, output_names, numeric_grad_delta)
            for name in inputs_to_check]
        analytic_grads = self._get_gradient(inputs_to_check, place, output_names, no_grad_set)
        self._assert_is_close(numeric_grads, analytic_grads, inputs_to_check,
                              max_relative_error, "Gradient Check On %s" % str(place))
        self._checked_any = True

    # --- sequence helpers Paddle's tests call --------------------------------------------
    def get_sequence_batch_size_1_input(self, lod=None, shape=None):
        if lod is None:
            lod = [[13]]
        if shape is None:
            shape = [13, 23]
        assert len(lod[0]) == 1
        assert lod[0][0] == shape[0]
        x = np.random.uniform(0.1, 1, shape).astype('float32')
        return (x, lod)

    def lod_has_single_zero(self, lod):
        for i in range(len(lod) - 2):
            if lod[i] != 0 and lod[i + 1] == 0 and lod[i + 2] != 0:
                return True
        return False

    def lod_has_continuous_zero(self, lod):
        for i in range(len(lod) - 3):
            if lod[i] != 0 and lod[i + 1] == 0 and lod[i + 2] == 0 and lod[i + 3] != 0:
                return True
        return False

    def get_sequence_instance_size_0_input(self, lod=None, shape=None):
        if lod is None:
            lod = [[0, 0, 4, 0, 3, 0, 0, 5, 0, 0]]
        if shape is None:
            shape = [12, 10]
        assert sum(lod[0]) == shape[0]
        x = np.random.uniform(0.1, 1, shape).astype('float32')
        return (x, lod)
