"""Metric and selection ops: ``accuracy`` over top-k predictions, ``top_k``/``top_k_v2``
(values and int64 indices of the k largest or smallest entries), ``arg_max`` and
``arg_min``."""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor
from ..tensor.dtypes import VarType
from ..framework.infer import dims_match
from ..framework.registry import def_op, grad_maker, grads_like, no_gradient
from ..tensor.transfer import host_scalar, to_host


# --- accuracy -----------------------------------------------------------------------------
def _accuracy_infer(ctx):
    out, label = ctx.input_shape("Out"), ctx.input_shape("Label")
    ctx.check(len(label) == 2, "input 'Label'", "rank 2 ([N, 1])", list(label))
    ctx.check(dims_match(label[1], 1), "input 'Label'", "shape [N, 1]", list(label))
    ctx.check(dims_match(out[0], label[0]), f"shapes of Out {list(out)} and Label "
              f"{list(label)}", "the same number of rows", f"{out[0]} and {label[0]}")
    ctx.set_output("Accuracy", (1,), VarType.FP32)
    ctx.set_output("Correct", (1,), VarType.INT32)
    ctx.set_output("Total", (1,), VarType.INT32)


def _accuracy(ctx, out, indices, label):
    xp = ctx.xp
    rows = indices.shape[0]
    hits = indices.reshape(rows, -1) == label.reshape(rows, -1)[:, :1]
    if xp is np:  # (the count as a number: a few small arrays fewer)
        correct = np.array([np.count_nonzero(hits.any(axis=1))], dtype="int32")
        return (np.divide(correct, max(rows, 1), dtype="float32"), correct,
                np.array([rows], dtype="int32"))
    correct = hits.any(axis=1).sum().astype("int32").reshape(1)
    total = xp.full((1,), rows, dtype="int32")
    accuracy = (correct.astype("float32") / max(rows, 1)).astype("float32")
    return accuracy, correct, total


def_op("accuracy",
       inputs=["Out", "Indices", "Label"], outputs=["Accuracy", "Correct", "Total"],
       infer_shape=_accuracy_infer, share_lod=("Out", ["Accuracy"]),
       traits=("infer_from_inputs",), kernel=_accuracy,
       doc="Correct = number of rows i where Label[i] is among Indices[i, :] (the top-k "
           "predictions); Total = rows; Accuracy = Correct / Total (float32 [1]). No gradient.")


# --- top_k / top_k_v2 -----------------------------------------------------------------------
def _k_of(ctx, k_tensor):
    """k: the K tensor's value (read on the host: it decides the outputs' shape) or the
    attribute."""
    return int(host_scalar(k_tensor)) if k_tensor is not None else ctx.attrs["k"]


def _top_k_along(ctx, op, x, k, axis, largest):
    """(values, int64 indices) of the top ``k`` along ``axis``, best first; ties keep the
    lower index first and NaN counts as the largest value."""
    xp = ctx.xp
    size = x.shape[axis] if x.ndim else 1
    if not 1 <= k <= size:
        raise InvalidArgument(expected(op, "k", f"in [1, {size}] (the size of dim {axis})", k))
    if x.dtype.kind == "f":
        key = xp.fmin(x, xp.inf)  # (NaN as +inf: fmin passes over a NaN)
        if largest:
            xp.negative(key, out=key)
    elif x.dtype.kind == "b":
        key = ~x if largest else x
    else:
        key = -x.astype("int64") if largest else x
    # (key ascending is the order wanted: the first k of its stable sort are the answer)
    if x.ndim and axis == x.ndim - 1:  # (the usual axis: rows of a matrix, indexed at once)
        rows = x.reshape(-1, size)
        if k == 1:  # (accuracy's: the first smallest key of each row, no sort)
            indices = xp.argmin(key, axis=-1)[..., None].astype("int64")
        elif xp is np and size >= _PARTITION_FROM and 4 * k <= size:
            indices = _first_k(key.reshape(-1, size), k).reshape(x.shape[:-1] + (k,))
        else:
            indices = xp.argsort(key, axis=-1, kind="stable")[..., :k].astype("int64")
        picked = rows[xp.arange(rows.shape[0])[:, None], indices.reshape(-1, k)]
        return picked.reshape(indices.shape), indices
    order = xp.argsort(key, axis=axis, kind="stable")
    indices = xp.take(order, xp.arange(k), axis=axis).astype("int64")
    return xp.take_along_axis(x, indices, axis=axis), indices


#: the row length from which a host top-k partitions each row before sorting its k
_PARTITION_FROM = 64


def _first_k(keys, k):
    """The first ``k`` columns of each row of ``keys`` in the order a stable sort puts
    them (int64 [rows, k]): the row's k-th smallest key found by a partition, every column
    below it and the lowest ones equal to it taken (a stable sort keeps ties in column
    order), then those k sorted. A row of n keys costs about n, not n log n."""
    kth = np.partition(keys, k - 1, axis=1)[:, k - 1:k]
    below = keys < kth
    equal = keys == kth
    wanted = k - np.count_nonzero(below, axis=1)
    taken = below | equal
    tied = np.nonzero(np.count_nonzero(equal, axis=1) > wanted)[0]
    if tied.size:  # (rows with more keys equal to the k-th than places left: the first ones)
        ranks = np.cumsum(equal[tied], axis=1)
        taken[tied] = below[tied] | (equal[tied] & (ranks <= wanted[tied, None]))
    columns = np.nonzero(taken)[1].reshape(-1, k)  # (ascending within each row)
    chosen = np.take_along_axis(keys, columns, axis=1)
    return np.take_along_axis(columns, np.argsort(chosen, axis=1, kind="stable"), axis=1)


def _scatter_along(xp, shape, dtype, indices, values, axis):
    """Zeros of ``shape`` with ``values`` put at ``indices`` along ``axis`` (each row's
    indices are distinct, so plain assignment is exact)."""
    idx = xp.moveaxis(indices, axis, -1)
    k = idx.shape[-1]
    moved = tuple(n for i, n in enumerate(shape) if i != axis) + (shape[axis],)
    rows = idx.size // k if k else 0
    flat = xp.zeros((rows, moved[-1]), dtype=dtype)
    flat[xp.arange(rows)[:, None], idx.reshape(rows, k)] = \
        xp.moveaxis(values, axis, -1).reshape(rows, k)
    return xp.moveaxis(flat.reshape(moved), -1, axis)


def _top_k_infer(ctx, axis_attr):
    x = list(ctx.input_shape("X"))
    rank = len(x)
    ctx.check(rank >= 1, "input 'X'", "rank >= 1", x)
    axis = ctx.attr("axis") if axis_attr else -1
    ctx.check(-rank <= axis < rank, "attribute 'axis'", f"in [{-rank}, {rank})", axis)
    axis %= rank
    k = ctx.attr("k")
    if ctx.has_input("K"):
        k = -1  # known only when the K tensor is read at run time
    else:
        ctx.check(k >= 1, "attribute 'k'", ">= 1", k)
        ctx.check(x[axis] < 0 or k <= x[axis], "attribute 'k'",
                  f"<= {x[axis]} (the size of dim {axis} of X)", k)
    x[axis] = k
    ctx.set_output("Out", x, ctx.input_dtype("X"))
    ctx.set_output("Indices", x, VarType.INT64)


def _top_k(ctx, x, k_tensor):
    return _top_k_along(ctx, "top_k", x, _k_of(ctx, k_tensor), x.ndim - 1, True)


def _top_k_grad(ctx, x, indices, dout):
    return _scatter_along(ctx.xp, x.shape, dout.dtype, indices, dout, x.ndim - 1)


def_op("top_k",
       inputs=["X", "K?"], outputs=["Out", "Indices"],
       attrs={"k": ("int", 1)},
       infer_shape=lambda ctx: _top_k_infer(ctx, axis_attr=False),
       share_lod=("X", ["Out", "Indices"]), traits=("infer_from_x",),
       grad=grad_maker("top_k_grad", inputs=["X"], outputs=["Indices"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_top_k,
       host_reads="K: k decides the outputs' shape",
       doc="Out, Indices = the k largest entries of X along its last dim (k from the K tensor "
           "when given), largest first; Indices is int64.")

def_op("top_k_grad",
       inputs=["X", "Indices", "Out@GRAD"], outputs=["X@GRAD"],
       attrs={"k": ("int", 1)},
       infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_top_k_grad,
       doc="Gradient of top_k: dX = zeros like X with dOut put back at Indices.")


def _top_k_v2(ctx, x, k_tensor):
    attrs = ctx.attrs
    # ``sorted=False`` leaves the order unspecified in Paddle; sorted order is one valid answer
    return _top_k_along(ctx, "top_k_v2", x, _k_of(ctx, k_tensor), attrs["axis"] % x.ndim,
                        attrs["largest"])


def _top_k_v2_grad(ctx, x, indices, dout):
    return _scatter_along(ctx.xp, x.shape, dout.dtype, indices, dout,
                          ctx.attrs["axis"] % x.ndim)


_TOP_K_V2_ATTRS = {"k": ("int", 1), "axis": ("int", -1), "largest": ("bool", True),
                   "sorted": ("bool", True)}

def_op("top_k_v2",
       inputs=["X", "K?"], outputs=["Out", "Indices"],
       attrs=_TOP_K_V2_ATTRS,
       infer_shape=lambda ctx: _top_k_infer(ctx, axis_attr=True),
       share_lod=("X", ["Out", "Indices"]), traits=("infer_from_x",),
       grad=grad_maker("top_k_v2_grad", inputs=["X"], outputs=["Indices"], out_grads=["Out"],
                       in_grads=["X"]),
       kernel=_top_k_v2,
       host_reads="K: k decides the outputs' shape",
       doc="Out, Indices = the k largest (largest=True) or smallest entries of X along "
           "``axis``, best first; Indices is int64.")

def_op("top_k_v2_grad",
       inputs=["X", "Indices", "Out@GRAD"], outputs=["X@GRAD"],
       attrs=_TOP_K_V2_ATTRS,
       infer_shape=grads_like(**{"X@GRAD": "X"}),
       kernel=_top_k_v2_grad,
       doc="Gradient of top_k_v2: dX = zeros like X with dOut put back at Indices.")


# --- arg_max / arg_min -----------------------------------------------------------------------
_INDEX_DTYPES = {2: VarType.INT32, 3: VarType.INT64}


def _arg_infer(ctx):
    x = list(ctx.input_shape("X"))
    attrs = ctx.attrs()
    ctx.check("axis" in attrs, "attribute 'axis'", "a value (it has no default)", "none")
    axis, rank = attrs["axis"], len(x)
    ctx.check(-rank <= axis < max(rank, 1), "attribute 'axis'", f"in [{-rank}, {rank})",
              axis)
    if attrs["flatten"]:
        out = [1]
    else:
        axis %= max(rank, 1)
        out = x[:axis] + ([1] if attrs["keepdims"] else []) + x[axis + 1:]
    ctx.set_output("Out", out, _INDEX_DTYPES[attrs["dtype"]])


def _arg_kernel(find):
    def kernel(ctx, x):
        attrs = ctx.attrs
        dtype = "int32" if attrs["dtype"] == 2 else "int64"
        if attrs["flatten"]:
            return find(x.reshape(-1)).astype(dtype).reshape(1)
        axis = attrs["axis"] % x.ndim
        out = find(x, axis=axis).astype(dtype)
        return ctx.xp.expand_dims(out, axis) if attrs["keepdims"] else out
    return kernel


_argmax_kernel = _arg_kernel(lambda x, axis=None: x.argmax(axis=axis))
_argmin_kernel = _arg_kernel(lambda x, axis=None: x.argmin(axis=axis))

_ARG_ATTRS = {"axis": ("long", None), "keepdims": ("bool", False), "flatten": ("bool", False),
              "dtype": ("int", 3, lambda v: None if v in (2, 3) else "2 (int32) or 3 (int64)")}

def_op("arg_max",
       inputs=["X"], outputs=["Out"], attrs=_ARG_ATTRS,
       infer_shape=_arg_infer,
       kernel=_argmax_kernel, plain_kernel=_argmax_kernel,
       doc="Out = the index of the first largest entry of X along ``axis`` (of the flattened X "
           "when flatten=True, giving shape [1]); int64 (dtype=3) or int32 (dtype=2). No "
           "gradient.")

def_op("arg_min",
       inputs=["X"], outputs=["Out"], attrs=_ARG_ATTRS,
       infer_shape=_arg_infer,
       kernel=_argmin_kernel, plain_kernel=_argmin_kernel,
       doc="Out = the index of the first smallest entry of X along ``axis``, as arg_max "
           "finds the largest. No gradient.")


# --- mean_iou, edit_distance, ctc_align ----------------------------------------------------------
def _mean_iou(ctx, predictions, labels, in_wrongs, in_corrects, in_mean_ious):
    xp = ctx.xp
    classes = ctx.attrs["num_classes"]
    pred = predictions.reshape(-1).astype("int64")
    label = labels.reshape(-1).astype("int64")
    counted = None
    if xp is np:  # checked on the host; a device would copy the ids there every run
        for name, values in (("Predictions", pred), ("Labels", label)):
            if values.size and (int(values.min()) < 0 or int(values.max()) >= classes):
                raise InvalidArgument(expected("mean_iou", name,
                                               f"class ids in [0, {classes})",
                                               f"ids from {int(values.min())} to "
                                               f"{int(values.max())}"))
    else:  # a device counts only the pixels whose ids are in range
        counted = (pred >= 0) & (pred < classes) & (label >= 0) & (label < classes)
        pred, label = xp.where(counted, pred, 0), xp.where(counted, label, 0)
    hit = pred == label
    miss = ~hit
    if counted is not None:
        hit, miss = hit & counted, miss & counted
    # masks as weights (not boolean indexing) keep the shapes fixed, as a device wants
    correct = xp.bincount(label, weights=hit, minlength=classes).astype("int32")
    wrong = (xp.bincount(label, weights=miss, minlength=classes)
             + xp.bincount(pred, weights=miss, minlength=classes)).astype("int32")
    for extra in in_wrongs or ():
        wrong = wrong + extra.astype("int32")
    for extra in in_corrects or ():
        correct = correct + extra.astype("int32")
    seen = (correct + wrong) > 0
    iou = xp.where(seen, correct / xp.maximum(correct + wrong, 1), 0)
    mean = iou.sum() / xp.maximum(seen.sum(), 1)
    for extra in in_mean_ious or ():
        mean = mean + extra.reshape(-1)[0].astype("float64")
    return mean.reshape(1).astype("float32"), wrong, correct


def _mean_iou_infer(ctx):
    classes = ctx.attrs()["num_classes"]
    ctx.set_output("OutMeanIou", (1,), VarType.FP32)
    ctx.set_output("OutWrong", (classes,), VarType.INT32)
    ctx.set_output("OutCorrect", (classes,), VarType.INT32)


def_op("mean_iou", inputs=["Predictions", "Labels", "InWrongs[]?", "InCorrects[]?",
                           "InMeanIou[]?"],
       outputs=["OutMeanIou", "OutWrong", "OutCorrect"],
       attrs={"num_classes": ("int", None)}, infer_shape=_mean_iou_infer, grad=no_gradient,
       kernel=_mean_iou,
       doc="Per class c: correct = pixels predicted c where the label is c; wrong = pixels "
           "labelled c predicted otherwise plus pixels predicted c labelled otherwise (the "
           "In* counts added); OutMeanIou = the mean of correct / (correct + wrong) over the "
           "classes that occur.")


def _levenshtein(a, b):
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def _sequences(tensor, lengths, where):
    """The rows of each sequence, on the host (one copy of each input from a device: the
    ops that call this loop over sequences there): by LoD, or by the padded rows and their
    lengths."""
    values = to_host(tensor.array)
    if lengths is not None:
        counts = to_host(lengths.array).reshape(-1).astype("int64")
        rows = values.reshape(len(counts), -1)
        return [list(rows[i, :counts[i]]) for i in range(len(counts))]
    lod = tensor.lod()
    if not lod:
        raise InvalidArgument(expected(where, "a LoD or lengths", "one of them", "neither"))
    flat = values.reshape(-1)
    offsets = lod[-1]
    return [list(flat[offsets[i]:offsets[i + 1]]) for i in range(len(offsets) - 1)]


def _edit_distance(ctx, hyps, refs, hyps_length, refs_length):
    hyp_seqs = _sequences(hyps, hyps_length, "edit_distance")
    ref_seqs = _sequences(refs, refs_length, "edit_distance")
    if len(hyp_seqs) != len(ref_seqs):
        raise InvalidArgument(expected("edit_distance", "as many Refs as Hyps",
                                       len(hyp_seqs), len(ref_seqs)))
    distances = []
    for hyp, ref in zip(hyp_seqs, ref_seqs):
        d = float(_levenshtein(hyp, ref))
        if ctx.attrs["normalized"]:
            d = d / len(ref) if ref else float(len(hyp) > 0)
        distances.append(d)
    xp = ctx.xp
    return (LoDTensor(xp.asarray(np.array(distances, "float32").reshape(-1, 1))),
            LoDTensor(xp.asarray(np.array([len(distances)], "int64"))))


def _edit_distance_infer(ctx):
    ctx.set_output("Out", (-1, 1), VarType.FP32)
    ctx.set_output("SequenceNum", (1,), VarType.INT64)


def_op("edit_distance", inputs=["Hyps", "Refs", "HypsLength?", "RefsLength?"],
       outputs=["Out", "SequenceNum"], attrs={"normalized": ("bool", False)},
       infer_shape=_edit_distance_infer, grad=no_gradient, kernel=_edit_distance,
       host_reads="Hyps, Refs (and their lengths): the Levenshtein recursion is a loop per "
                  "sequence pair on the host (one copy in, the distances copied back once)",
       lod_aware=True, traits={"runtime_outputs"},
       doc="Out[i] = the Levenshtein distance between hypothesis i and reference i "
           "(sequences by LoD, or padded rows with lengths), divided by the reference's "
           "length when normalized; SequenceNum = the number of pairs.")


def _ctc_align_infer(ctx):
    dtype = ctx.input_dtype("Input")
    if ctx.has_input("InputLength"):  # the padded form: [N, T] in, [N, T] out
        shape = list(ctx.input_shape("Input"))
        ctx.set_output("Output", shape, dtype, lod_level=0)
        ctx.set_output("OutputLength", [shape[0] if shape else -1, 1],
                       ctx.input_dtype("InputLength"))
        return
    ctx.set_output("Output", (-1, 1), dtype, lod_level=1)


def _ctc_align(ctx, x, input_length):
    a = ctx.attrs
    blank, merge = a["blank"], a["merge_repeated"]
    rows = []
    for seq in _sequences(x, input_length, "ctc_align"):
        kept, previous = [], None
        for token in seq:
            token = int(token)
            if token != blank and not (merge and token == previous):
                kept.append(token)
            previous = token
        rows.append(kept)
    dtype = x.array.dtype
    if input_length is not None:
        width = x.array.shape[1] if x.array.ndim > 1 else 0
        padded = np.full((len(rows), width), a["padding_value"], dtype)
        for i, row in enumerate(rows):
            padded[i, :len(row)] = row
        lengths = np.array([[len(row)] for row in rows], input_length.array.dtype)
        return LoDTensor(ctx.xp.asarray(padded)), LoDTensor(ctx.xp.asarray(lengths))
    offsets = [0]
    for row in rows:
        offsets.append(offsets[-1] + len(row))
    if offsets[-1] == 0:  # nothing left anywhere: Fluid's one row of -1
        return LoDTensor(ctx.xp.asarray(np.array([[-1]], dtype)), [[0, 1]]), None
    flat = np.array([t for row in rows for t in row], dtype).reshape(-1, 1)
    return LoDTensor(ctx.xp.asarray(flat), [offsets]), None


def_op("ctc_align", inputs=["Input", "InputLength?"], outputs=["Output", "OutputLength?"],
       attrs={"blank": ("int", 0), "merge_repeated": ("bool", True),
              "padding_value": ("int", 0)},
       infer_shape=_ctc_align_infer,
       grad=no_gradient, kernel=_ctc_align, lod_aware=True, traits={"runtime_outputs"},
       host_reads="Input: the tokens kept decide the output's rows and LoD",
       doc="Per sequence: repeated tokens merged (merge_repeated), then the blank removed. "
           "LoD input: Output holds the kept tokens with a LoD by sequence (a single -1 row "
           "when nothing is left in any). Padded input ([N, T] with InputLength [N, 1]): "
           "Output [N, T] holds each row's kept tokens then padding_value, OutputLength "
           "[N, 1] their counts.")


def _sequence_erase(ctx, x):
    tokens = set(ctx.attrs["tokens"])
    rows = [[t for t in seq if int(t) not in tokens]
            for seq in _sequences(x, None, "sequence_erase")]
    offsets = [0]
    for row in rows:
        offsets.append(offsets[-1] + len(row))
    flat = np.array([t for row in rows for t in row], x.array.dtype).reshape(-1, 1)
    return LoDTensor(ctx.xp.asarray(flat), [offsets])


def_op("sequence_erase", inputs=["X"], outputs=["Out"], attrs={"tokens": ("ints", [])},
       infer_shape=lambda ctx: ctx.set_output("Out", (-1, 1), ctx.input_dtype("X"),
                                              lod_level=1),
       grad=no_gradient, kernel=_sequence_erase, lod_aware=True,
       host_reads="X: the tokens kept decide the output's rows and LoD",
       traits={"runtime_outputs"},
       doc="Out = each sequence of X without the ids in tokens (LoD recomputed).")


# --- auc: the area under ROC or PR curves from bucketed counts ----------------------------------
def _area(xp, pos, neg, curve):
    """The area under the curve from per-bucket positive and negative counts (highest
    bucket first, as the thresholds fall), by trapezoids as Paddle sums them; on the array
    module (a 0-d float64 array), so a device keeps the counts. The terms are sums and
    products of counts and halves, exact in float64, so their order does not matter."""
    total_pos = xp.cumsum(pos[::-1].astype("float64"))
    total_neg = xp.cumsum(neg[::-1].astype("float64"))
    zero = xp.zeros(1)
    previous_pos = xp.concatenate([zero, total_pos[:-1]])
    previous_neg = xp.concatenate([zero, total_neg[:-1]])
    all_pos, all_neg = total_pos[-1], total_neg[-1]
    if curve == "ROC":
        area = (xp.abs(total_neg - previous_neg) * (total_pos + previous_pos) / 2).sum()
        both = (all_pos > 0) & (all_neg > 0)
        return xp.where(both, area / xp.where(both, all_pos * all_neg, 1.0), 0.0)
    # PR: a step counts where both it and the one before have predictions
    now, before = total_pos + total_neg, previous_pos + previous_neg
    counted = (now > 0) & (before > 0)
    precision = total_pos / xp.where(counted, now, 1.0)
    previous_precision = previous_pos / xp.where(counted, before, 1.0)
    area = xp.where(counted, xp.abs(total_pos - previous_pos)
                    * (precision + previous_precision) / 2, 0.0).sum()
    return xp.where(all_pos > 0, area / xp.where(all_pos > 0, all_pos, 1.0), 0.0)


def _auc(ctx, predict, label, stat_pos, stat_neg):
    xp, a = ctx.xp, ctx.attrs
    thresholds, steps = a["num_thresholds"], a["slide_steps"]
    buckets = thresholds + 1
    scores = predict.reshape(len(predict), -1)[:, -1]
    labels = label.reshape(-1)
    bins = xp.clip((scores * thresholds).astype("int64"), 0, thresholds)
    # label masks as weights (not boolean indexing): fixed shapes, as a device wants
    batch_pos = xp.bincount(bins, weights=labels != 0, minlength=buckets).astype("int64")
    batch_neg = xp.bincount(bins, weights=labels == 0, minlength=buckets).astype("int64")
    pos = stat_pos.astype("int64").reshape(-1)  # fresh arrays (astype copies)
    neg = stat_neg.astype("int64").reshape(-1)
    if steps == 0:  # every batch so far
        pos[:buckets] += batch_pos
        neg[:buckets] += batch_neg
        summed_pos, summed_neg = pos[:buckets], neg[:buckets]
    else:  # a window of the last slide_steps batches: a ring of rows, their sum, a counter
        counter = (steps + 1) * buckets
        # the ring row this batch replaces, picked by a mask so the counter stays put
        ring = (xp.arange(steps) == pos[counter] % steps)[:, None]
        total = slice(steps * buckets, (steps + 1) * buckets)
        for counts, batch in ((pos, batch_pos), (neg, batch_neg)):
            rows = counts[:steps * buckets].reshape(steps, buckets)
            old = xp.where(ring, rows, 0).sum(axis=0)
            counts[total] += batch - old
            counts[:steps * buckets] = xp.where(ring, batch[None, :], rows).reshape(-1)
            counts[counter] += 1
        summed_pos, summed_neg = pos[total], neg[total]
    value = _area(xp, summed_pos, summed_neg, a["curve"])
    return (value.astype("float64").reshape(()), pos.reshape(stat_pos.shape),
            neg.reshape(stat_neg.shape))


def _auc_infer(ctx):
    ctx.set_output("AUC", (), VarType.FP64)
    ctx.set_output("StatPosOut", ctx.input_shape("StatPos"), VarType.INT64)
    ctx.set_output("StatNegOut", ctx.input_shape("StatNeg"), VarType.INT64)


def _curve(value):
    return None if value in ("ROC", "PR") else "ROC or PR"


def_op("auc", inputs=["Predict", "Label", "StatPos", "StatNeg"],
       outputs=["AUC", "StatPosOut", "StatNegOut"],
       attrs={"curve": ("string", "ROC", _curve), "num_thresholds": ("int", 2 ** 12 - 1),
              "slide_steps": ("int", 1)},
       infer_shape=_auc_infer, grad=no_gradient, kernel=_auc,
       doc="Each prediction (Predict's last column) falls in bucket floor(p * "
           "num_thresholds); StatPos/StatNeg count the positive and negative labels per "
           "bucket over all batches (slide_steps 0) or the last slide_steps batches (a ring "
           "of rows, their sum and a step counter); AUC = the trapezoid area under the ROC "
           "(or PR) curve of the counts, thresholds from high to low.")
