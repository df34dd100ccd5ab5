"""``fluid.evaluator``: Fluid 1.8's deprecated evaluators, which keep their running totals
in persistable variables of the program (states) and add to them with ops at every batch.
``fluid.metrics`` holds the replacements that accumulate in Python; each evaluator warns.

    evaluator = fluid.evaluator.ChunkEvaluator(tags, labels, "IOB", num_chunk_types=3)
    for pass_id in range(passes):
        evaluator.reset(exe)                    # the states back to 0
        for data in reader():
            exe.run(main, feed=..., fetch_list=evaluator.metrics)
        precision, recall, f1 = evaluator.eval(exe)
"""
import warnings

import numpy as np

from . import layers
from ..errors import InvalidArgument, InvalidType, expected
from ..framework import Program, program_guard, unique_name
from ..framework.program import Variable
from .layer_helper import LayerHelper
from .metrics import _clone_var, _detection_map_graph, _reset_has_state

__all__ = ["ChunkEvaluator", "EditDistance", "DetectionMAP"]


class Evaluator:
    """The base: ``states`` (persistable variables reset to 0 by ``reset``), ``metrics``
    (the per-batch results to fetch) and ``eval`` (the result over the batches since the
    last reset)."""

    def __init__(self, name, **kwargs):
        warnings.warn(f"The {type(self).__name__} is deprecated, because maintain a modified "
                      f"program inside evaluator cause bug easily, please use "
                      f"fluid.metrics.{type(self).__name__} instead.", Warning)
        self.states = []
        self.metrics = []
        self.helper = LayerHelper(name, **kwargs)

    def reset(self, executor, reset_program=None):
        """Set every state to 0 by running ``reset_program`` (a new Program by default)."""
        reset_program = reset_program if reset_program is not None else Program()
        with program_guard(main_program=reset_program):
            for var in self.states:
                clone = _clone_var(reset_program.current_block(), var)
                layers.fill_constant(shape=clone.shape, value=0.0, dtype=clone.dtype,
                                     out=clone)
        executor.run(reset_program)

    def eval(self, executor, eval_program=None):
        raise NotImplementedError(f"{type(self).__name__}.eval: an evaluator defines how "
                                  f"its result is computed from its states")

    def _create_state(self, suffix, dtype, shape):
        state = self.helper.create_variable(
            name="_".join([unique_name.generate(self.helper.name), suffix]),
            persistable=True, dtype=dtype, shape=shape)
        self.states.append(state)
        return state

    def _require_root_block(self):
        block = self.helper.main_program.current_block()
        if block.idx != 0:
            raise InvalidArgument(expected(type(self).__name__, "the block it is made in",
                                           "the root block (0)", f"block {block.idx}"))


def _accumulate(state, value):
    layers.sums(input=[state, value], out=state)


class ChunkEvaluator(Evaluator):
    """Chunk precision, recall and F1 over the batches since the last reset, from the
    counts of ``layers.chunk_eval`` added to the states ``num_infer_chunks``,
    ``num_label_chunks`` and ``num_correct_chunks``. ``metrics`` holds the current
    batch's [precision, recall, f1_score]."""

    def __init__(self, input, label, chunk_scheme, num_chunk_types, excluded_chunk_types=None):
        super().__init__("chunk_eval")
        self._require_root_block()
        self.num_infer_chunks, self.num_label_chunks, self.num_correct_chunks = (
            self._create_state(dtype="int64", shape=[1], suffix=suffix)
            for suffix in ("num_infer_chunks", "num_label_chunks", "num_correct_chunks"))
        precision, recall, f1_score, num_infer, num_label, num_correct = layers.chunk_eval(
            input=input, label=label, chunk_scheme=chunk_scheme,
            num_chunk_types=num_chunk_types, excluded_chunk_types=excluded_chunk_types)
        _accumulate(self.num_infer_chunks, num_infer)
        _accumulate(self.num_label_chunks, num_label)
        _accumulate(self.num_correct_chunks, num_correct)
        self.metrics.extend([precision, recall, f1_score])

    def eval(self, executor, eval_program=None):
        """``(precision, recall, f1)`` as float32 [1] arrays: correct / inferred,
        correct / labelled and their harmonic mean (0 where a denominator is)."""
        eval_program = eval_program if eval_program is not None else Program()
        block = eval_program.current_block()
        infer, label, correct = (int(np.asarray(v).reshape(-1)[0]) for v in executor.run(
            eval_program, fetch_list=[_clone_var(block, state) for state in self.states]))
        precision = float(correct) / infer if infer else 0.0
        recall = float(correct) / label if label else 0.0
        f1 = 2 * precision * recall / (precision + recall) if correct else 0.0
        return tuple(np.array([v], dtype="float32") for v in (precision, recall, f1))


class EditDistance(Evaluator):
    """The mean edit distance per sequence and the share of sequences not decoded exactly,
    over the batches since the last reset (states ``total_distance``, ``seq_num``,
    ``instance_error``). ``metrics`` holds the current batch's [total distance, number
    of wrong sequences]."""

    def __init__(self, input, label, ignored_tokens=None, **kwargs):
        super().__init__("edit_distance", **kwargs)
        self._require_root_block()
        self.total_distance = self._create_state(dtype="float32", shape=[1],
                                                 suffix="total_distance")
        self.seq_num = self._create_state(dtype="int64", shape=[1], suffix="seq_num")
        self.instance_error = self._create_state(dtype="int64", shape=[1],
                                                 suffix="instance_error")
        distances, seq_num = layers.edit_distance(input=input, label=label,
                                                  ignored_tokens=ignored_tokens)
        zero = layers.fill_constant(shape=[1], value=0.0, dtype="float32")
        right = layers.reduce_sum(layers.cast(x=layers.equal(distances, zero), dtype="int64"))
        instance_error = layers.elementwise_sub(x=seq_num, y=right)
        total_distance = layers.reduce_sum(distances)
        _accumulate(self.total_distance, total_distance)
        _accumulate(self.seq_num, seq_num)
        _accumulate(self.instance_error, instance_error)
        self.metrics.extend([total_distance, instance_error])

    def eval(self, executor, eval_program=None):
        """``(mean distance, share of wrong sequences)``, each a float32 [1] array."""
        eval_program = eval_program if eval_program is not None else Program()
        block = eval_program.current_block()
        with program_guard(main_program=eval_program):
            total = _clone_var(block, self.total_distance)
            seq_num = layers.cast(x=_clone_var(block, self.seq_num), dtype="float32")
            wrong = layers.cast(x=_clone_var(block, self.instance_error), dtype="float32")
            result = executor.run(eval_program, fetch_list=[
                layers.elementwise_div(x=total, y=seq_num),
                layers.elementwise_div(x=wrong, y=seq_num)])
        return np.array(result[0]), np.array(result[1])


class DetectionMAP(Evaluator):
    """The mAP of detections, of the current batch and accumulated since the last reset;
    the graph of ``fluid.metrics.DetectionMAP`` (see there), its three count states in
    ``states`` and ``has_state`` (0 until a batch has run since the reset)."""

    def __init__(self, input, gt_label, gt_box, gt_difficult=None, class_num=None,
                 background_label=0, overlap_threshold=0.5, evaluate_difficult=True,
                 ap_version="integral"):
        super().__init__("map_eval")
        for label, value in (("input", input), ("gt_label", gt_label), ("gt_box", gt_box)):
            if not isinstance(value, Variable):
                raise InvalidType(expected("DetectionMAP", label, "a Variable",
                                               type(value).__name__))
        _detection_map_graph(self, input, gt_label, gt_box, gt_difficult, class_num,
                             background_label, overlap_threshold, evaluate_difficult,
                             ap_version)

    def get_map_var(self):
        """``(mAP of the current batch, mAP accumulated since the last reset)``."""
        return self.cur_map, self.accum_map

    def reset(self, executor, reset_program=None):
        """Start the accumulation afresh at the next batch (``has_state = 0``)."""
        _reset_has_state(self.has_state, executor, reset_program)
