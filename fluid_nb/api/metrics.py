"""``fluid.metrics``: Fluid 1.x's Python-side accumulators of evaluation results over
batches. A training loop fetches what a layer computes (``layers.accuracy``,
``layers.chunk_eval``, ``layers.edit_distance``, a softmax) and feeds it to a metric's
``update``; ``eval`` gives the figure over everything seen since ``reset``.

    acc = fluid.metrics.Accuracy()
    for data in reader():
        batch_acc, = exe.run(main, feed=..., fetch_list=[accuracy_var])
        acc.update(value=batch_acc, weight=len(data))
    print(acc.eval())
"""
import copy

import numpy as np

__all__ = ["MetricBase", "CompositeMetric", "Precision", "Recall", "Accuracy",
           "ChunkEvaluator", "EditDistance", "Auc", "DetectionMAP"]


def _is_number(value):
    return isinstance(value, (int, float, np.integer, np.floating)) and \
        not isinstance(value, bool)


def _is_number_or_matrix(value):
    return _is_number(value) or isinstance(value, np.ndarray)


def _check(where, name, value, accept, want):
    if not accept(value):
        raise ValueError(f"{where}: {name} expected {want}, but received "
                         f"{type(value).__name__}")


class MetricBase:
    """A metric's state is its public attributes: ``reset`` sets numbers to 0, arrays to
    zeros and lists to empty; ``update`` adds a batch, ``eval`` gives the result."""

    def __init__(self, name):
        self._name = str(name) if name is not None else self.__class__.__name__

    def __str__(self):
        return self._name

    def reset(self):
        for attr, value in list(self.__dict__.items()):
            if attr.startswith("_"):
                continue
            if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
                setattr(self, attr, 0)
            elif isinstance(value, (float, np.floating)):
                setattr(self, attr, 0.0)
            elif isinstance(value, np.ndarray):
                setattr(self, attr, np.zeros_like(value))
            elif isinstance(value, (list, tuple)):
                setattr(self, attr, type(value)())
            else:
                setattr(self, attr, None)

    def get_config(self):
        """The metric's name and a copy of its state."""
        states = {attr: copy.deepcopy(value) for attr, value in self.__dict__.items()
                  if not attr.startswith("_")}
        return {"name": self._name, "states": states}

    def update(self, preds, labels):
        raise NotImplementedError(f"{self.__class__.__name__}.update: a metric says how a "
                                  "batch adds to it")

    def eval(self):
        raise NotImplementedError(f"{self.__class__.__name__}.eval: a metric says what it "
                                  "measures")


class CompositeMetric(MetricBase):
    """Several metrics updated with the same predictions and labels; ``eval`` gives their
    results in the order they were added."""

    def __init__(self, name=None):
        super().__init__(name)
        self._metrics = []

    def add_metric(self, metric):
        if not isinstance(metric, MetricBase):
            raise ValueError("CompositeMetric.add_metric: metric expected a MetricBase, but "
                             f"received {type(metric).__name__}")
        self._metrics.append(metric)

    def update(self, preds, labels):
        for metric in self._metrics:
            metric.update(preds, labels)

    def eval(self):
        return [metric.eval() for metric in self._metrics]


class Precision(MetricBase):
    """Binary precision: of the samples predicted 1 (``preds`` rounded), the share whose
    label is 1; 0 when none was predicted 1."""

    def __init__(self, name=None):
        super().__init__(name)
        self.tp = 0
        self.fp = 0

    def update(self, preds, labels):
        _check("Precision.update", "preds", preds, _is_number_or_matrix, "a numpy array")
        _check("Precision.update", "labels", labels, _is_number_or_matrix, "a numpy array")
        predicted = np.rint(np.asarray(preds)).astype("int32").reshape(-1)
        truth = np.asarray(labels).reshape(-1)
        positive = predicted == 1
        self.tp += int(np.sum(positive & (truth == 1)))
        self.fp += int(np.sum(positive & (truth != 1)))

    def eval(self):
        predicted = self.tp + self.fp
        return float(self.tp) / predicted if predicted != 0 else 0.0


class Recall(MetricBase):
    """Binary recall: of the samples labelled 1, the share predicted 1 (``preds``
    rounded); 0 when no label is 1."""

    def __init__(self, name=None):
        super().__init__(name)
        self.tp = 0
        self.fn = 0

    def update(self, preds, labels):
        _check("Recall.update", "preds", preds, _is_number_or_matrix, "a numpy array")
        _check("Recall.update", "labels", labels, _is_number_or_matrix, "a numpy array")
        predicted = np.rint(np.asarray(preds)).astype("int32").reshape(-1)
        truth = np.asarray(labels).reshape(-1)
        labelled = truth == 1
        self.tp += int(np.sum(labelled & (predicted == 1)))
        self.fn += int(np.sum(labelled & (predicted != 1)))

    def eval(self):
        labelled = self.tp + self.fn
        return float(self.tp) / labelled if labelled != 0 else 0.0


class Accuracy(MetricBase):
    """The mean of batch accuracies weighted by batch size: ``sum(value * weight) /
    sum(weight)`` over the ``update(value, weight)`` calls."""

    def __init__(self, name=None):
        super().__init__(name)
        self.value = 0.0
        self.weight = 0.0

    def update(self, value, weight):
        _check("Accuracy.update", "value", value, _is_number_or_matrix,
               "a number or a numpy array")
        _check("Accuracy.update", "weight", weight, _is_number, "a number")
        self.value += value * weight
        self.weight += weight

    def eval(self):
        if self.weight == 0:
            raise ValueError("Accuracy.eval: no data yet (add the accuracy layer's output "
                             "with update first)")
        return self.value / self.weight


class ChunkEvaluator(MetricBase):
    """Chunk precision, recall and F1 over batches from ``layers.chunk_eval``'s counts:
    precision = correct / inferred, recall = correct / labelled, F1 their harmonic mean
    (each 0 where its denominator is)."""

    def __init__(self, name=None):
        super().__init__(name)
        self.num_infer_chunks = 0
        self.num_label_chunks = 0
        self.num_correct_chunks = 0

    def update(self, num_infer_chunks, num_label_chunks, num_correct_chunks):
        for name, value in (("num_infer_chunks", num_infer_chunks),
                            ("num_label_chunks", num_label_chunks),
                            ("num_correct_chunks", num_correct_chunks)):
            _check("ChunkEvaluator.update", name, value, _is_number_or_matrix,
                   "a number or a numpy array")
        self.num_infer_chunks += int(np.sum(num_infer_chunks))
        self.num_label_chunks += int(np.sum(num_label_chunks))
        self.num_correct_chunks += int(np.sum(num_correct_chunks))

    def eval(self):
        precision = float(self.num_correct_chunks) / self.num_infer_chunks \
            if self.num_infer_chunks else 0.0
        recall = float(self.num_correct_chunks) / self.num_label_chunks \
            if self.num_label_chunks else 0.0
        f1 = 2 * precision * recall / (precision + recall) if self.num_correct_chunks else 0.0
        return precision, recall, f1


class EditDistance(MetricBase):
    """Over batches of ``layers.edit_distance`` results: the mean distance per sequence
    and the share of sequences not decoded exactly."""

    def __init__(self, name=None):
        super().__init__(name)
        self.total_distance = 0.0
        self.seq_num = 0
        self.instance_error = 0

    def update(self, distances, seq_num):
        _check("EditDistance.update", "distances", distances, _is_number_or_matrix,
               "a numpy array")
        _check("EditDistance.update", "seq_num", seq_num, _is_number_or_matrix,
               "a number")
        distances = np.asarray(distances)
        count = int(np.sum(seq_num))
        self.seq_num += count
        self.instance_error += count - int(np.sum(distances == 0))
        self.total_distance += float(np.sum(distances))

    def eval(self):
        if self.seq_num == 0:
            raise ValueError("EditDistance.eval: no data yet (add the edit_distance layer's "
                             "output with update first)")
        return (self.total_distance / self.seq_num,
                self.instance_error / float(self.seq_num))


class Auc(MetricBase):
    """The area under the ROC curve from predictions ``preds`` [N, 2] (column 1 the
    positive class's probability) and labels, counted in ``num_thresholds + 1`` buckets
    over all batches; 0 until both classes were seen."""

    def __init__(self, name, curve="ROC", num_thresholds=4095):
        super().__init__(name=name)
        self._curve = curve
        self._num_thresholds = num_thresholds
        self._stat_pos = np.zeros(num_thresholds + 1)
        self._stat_neg = np.zeros(num_thresholds + 1)

    def reset(self):
        self._stat_pos = np.zeros(self._num_thresholds + 1)
        self._stat_neg = np.zeros(self._num_thresholds + 1)

    def update(self, preds, labels):
        _check("Auc.update", "preds", preds, _is_number_or_matrix, "a numpy array")
        _check("Auc.update", "labels", labels, _is_number_or_matrix, "a numpy array")
        scores = np.asarray(preds)[:, 1]
        if np.any((scores < 0) | (scores > 1)):
            raise ValueError("Auc.update: preds expected probabilities in [0, 1] in column 1")
        buckets = (scores * self._num_thresholds).astype(int)
        positive = np.asarray(labels).reshape(-1).astype(bool)
        np.add.at(self._stat_pos, buckets[positive], 1.0)
        np.add.at(self._stat_neg, buckets[~positive], 1.0)

    def eval(self):
        # walk the thresholds from the highest, adding trapezoids under the ROC curve
        pos = np.cumsum(self._stat_pos[::-1])
        neg = np.cumsum(self._stat_neg[::-1])
        pos_prev = np.concatenate([[0.0], pos[:-1]])
        neg_prev = np.concatenate([[0.0], neg[:-1]])
        area = np.sum(np.abs(neg - neg_prev) * (pos + pos_prev) / 2.0)
        total_pos, total_neg = pos[-1], neg[-1]
        return float(area / total_pos / total_neg) if total_pos > 0 and total_neg > 0 else 0.0


def _detection_map(helper, detect_res, label, class_num, background_label, overlap_threshold,
                   evaluate_difficult, ap_version, has_state=None, states=None):
    """Append one ``detection_map`` op (Fluid 1.8's slots and attributes); with
    ``states`` the accumulated counts are read from and written back to them."""
    out = helper.create_variable_for_type_inference("float32")
    counts = states or [helper.create_variable_for_type_inference(dtype)
                        for dtype in ("int32", "float32", "float32")]
    inputs = {"DetectRes": [detect_res], "Label": [label]}
    if has_state is not None:
        inputs["HasState"] = [has_state]
    if states:
        inputs.update(PosCount=[states[0]], TruePos=[states[1]], FalsePos=[states[2]])
    helper.append_op(
        type="detection_map", inputs=inputs,
        outputs={"MAP": [out], "AccumPosCount": [counts[0]], "AccumTruePos": [counts[1]],
                 "AccumFalsePos": [counts[2]]},
        attrs={"overlap_threshold": float(overlap_threshold),
               "evaluate_difficult": bool(evaluate_difficult), "ap_type": ap_version,
               "class_num": class_num, "background_label": background_label})
    return out


def _detection_map_graph(owner, input, gt_label, gt_box, gt_difficult, class_num,
                         background_label, overlap_threshold, evaluate_difficult, ap_version):
    """The graph both DetectionMAP classes build (Fluid 1.8's): the label rows
    ``[label, (difficult,) x1, y1, x2, y2]``, the batch's mAP, and the accumulated mAP
    from the persistable counts ``owner._create_state`` makes, ``has_state`` 0 until the
    first batch has run (then set to 1 by a fill_constant)."""
    from . import layers
    from .initializer import Constant
    from ..errors import InvalidType, expected
    if not isinstance(class_num, int) or isinstance(class_num, bool) or class_num < 1:
        raise InvalidType(expected("DetectionMAP", "class_num", "a positive int",
                                   repr(class_num)))
    gt_label = layers.cast(x=gt_label, dtype=gt_box.dtype)
    if gt_difficult is not None:
        gt_difficult = layers.cast(x=gt_difficult, dtype=gt_box.dtype)
        label = layers.concat([gt_label, gt_difficult, gt_box], axis=1)
    else:
        label = layers.concat([gt_label, gt_box], axis=1)
    args = (input, label, class_num, background_label, overlap_threshold, evaluate_difficult,
            ap_version)
    owner.cur_map = _detection_map(owner.helper, *args)
    states = [owner._create_state(dtype=dtype, shape=None, suffix=suffix)
              for dtype, suffix in (("int32", "accum_pos_count"),
                                    ("float32", "accum_true_pos"),
                                    ("float32", "accum_false_pos"))]
    owner.has_state = owner.helper.create_variable(
        name="_".join([_unique_name(owner.helper.name), "has_state"]), persistable=True,
        dtype="int32", shape=[1])
    owner.helper.set_variable_initializer(owner.has_state, initializer=Constant(value=0))
    owner.accum_map = _detection_map(owner.helper, *args, has_state=owner.has_state,
                                     states=states)
    layers.fill_constant(shape=owner.has_state.shape, value=1, dtype=owner.has_state.dtype,
                         out=owner.has_state)
    return states


def _unique_name(prefix):
    from ..framework import unique_name
    return unique_name.generate(prefix)


def _clone_var(block, var):
    """``var`` declared (persistable) in another program's ``block``, to run ops on it."""
    return block.create_var(name=var.name, shape=var.shape, dtype=var.dtype, type=var.type,
                            lod_level=var.lod_level, persistable=True)


def _reset_has_state(has_state, executor, reset_program):
    """Run ``has_state = 0`` (so the next batch starts the accumulation afresh)."""
    from . import layers
    from ..framework import Program, program_guard
    reset_program = reset_program if reset_program is not None else Program()
    with program_guard(main_program=reset_program):
        var = _clone_var(reset_program.current_block(), has_state)
        layers.fill_constant(shape=var.shape, value=0, dtype=var.dtype, out=var)
    executor.run(reset_program)


class DetectionMAP:
    """The mean average precision of detections, of the current batch and accumulated
    over batches, as ops of the program (Fluid 1.8's ``fluid.metrics.DetectionMAP``).

    ``input`` [M, 6] holds the detections ``[label, score, x1, y1, x2, y2]`` (LoD: per
    image), ``gt_label`` [G, 1], ``gt_box`` [G, 4] and ``gt_difficult`` [G, 1] the ground
    truth (LoD: per image). Per class, detections sorted by score are true positives when
    they overlap an unmatched ground-truth box by more than ``overlap_threshold`` (IoU);
    AP is the area under the precision-recall curve (``ap_version`` "integral") or its
    11-point mean ("11point"); mAP the mean over classes with ground truth.

    Example::

        map_eval = fluid.metrics.DetectionMAP(detections, gt_label, gt_box,
                                              class_num=21)
        cur_map, accum_map = map_eval.get_map_var()
        map_eval.reset(exe)                 # at the start of each pass
    """

    def __init__(self, input, gt_label, gt_box, gt_difficult=None, class_num=None,
                 background_label=0, overlap_threshold=0.5, evaluate_difficult=True,
                 ap_version="integral"):
        from .layer_helper import LayerHelper
        self.helper = LayerHelper("map_eval")
        _detection_map_graph(self, input, gt_label, gt_box, gt_difficult, class_num,
                             background_label, overlap_threshold, evaluate_difficult,
                             ap_version)

    def _create_state(self, suffix, dtype, shape):
        return self.helper.create_variable(
            name="_".join([_unique_name(self.helper.name), suffix]), persistable=True,
            dtype=dtype, shape=shape)

    def get_map_var(self):
        """``(mAP of the current batch, mAP accumulated since the last reset)``."""
        return self.cur_map, self.accum_map

    def reset(self, executor, reset_program=None):
        """Start the accumulation afresh at the next batch (runs ``reset_program``, a new
        Program by default, holding ``has_state = 0``)."""
        _reset_has_state(self.has_state, executor, reset_program)
