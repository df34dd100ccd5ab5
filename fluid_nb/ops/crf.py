"""Linear-chain CRF op family: ``linear_chain_crf`` (the negative log-likelihood of a tag
sequence, with its gradient), ``crf_decoding`` (the Viterbi path) and ``chunk_eval``
(precision, recall and F1 of the chunks a tagging marks).

The transition parameter ``w`` is ``[D + 2, D]`` for ``D`` tags: row 0 holds the start
weights ``a``, row 1 the end weights ``b``, rows ``2 + i`` the weights of moving from tag
``i`` to each tag. The score of tags ``s_1 .. s_L`` over emissions ``x`` is::

    score(s) = a[s_1] + b[s_L] + sum_l x[l, s_l] + sum_{l>1} w[2 + s_{l-1}, s_l]

Both ops take a batch in one of two layouts:
- LoD: Emission ``[N, D]`` (rows of all sequences stacked), Label ``[N, 1]``, the sequences
  given by a LoD level;
- padded: Emission ``[B, S, D]``, Label ``[B, S]`` or ``[B, S, 1]`` and ``Length [B]`` (the
  valid steps of each row; the rest is padding and ignored).

The dynamic programmes run on the host, one sequence at a time (as Paddle's CPU-only
kernels do); the arrays they use are the place's (``ctx.xp``).
"""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor
from ..tensor.dtypes import VarType
from ..framework.infer import dims_match
from ..framework.registry import def_op
from ..tensor.transfer import to_host

# rows of the transition parameter: start weights, end weights, then tag-to-tag weights
_START, _END, _FIRST_PAIR_ROW = 0, 1, 2


def _host(array):
    """A small integer array (labels, lengths) as a host NumPy array."""
    return array.get() if hasattr(array, "get") else np.asarray(array)


class _HostContext:
    """A kernel context whose array module is NumPy (everything else is the kernel's)."""
    xp = np

    def __init__(self, ctx):
        self._ctx = ctx

    def __getattr__(self, name):
        return getattr(self._ctx, name)


def _on_host(kernel):
    """``kernel`` (a loop per sequence and per step, with data-dependent control flow) run
    on the host: on a device each input is copied to the host once and each output back
    once, rather than every step of the loop reading device values. The op declares
    host_reads."""
    def run(ctx, *inputs):
        if ctx.xp is np:
            return kernel(ctx, *inputs)
        outputs = kernel(_HostContext(ctx), *[
            None if t is None else LoDTensor(to_host(t.array), t.lod()) for t in inputs])
        single = not isinstance(outputs, tuple)

        def back(value):
            if isinstance(value, LoDTensor):
                return LoDTensor(ctx.xp.asarray(value.array), value.lod())
            return None if value is None else ctx.xp.asarray(value)
        return back(outputs) if single else tuple(back(v) for v in outputs)
    return run


# --- the layouts ------------------------------------------------------------------------------
def _row_spans(op, emission, label, length, lod_from):
    """(emission as [rows, D], labels as host [rows] or None, [(start, end)] one span of rows
    per sequence) for either layout. ``lod_from``: the tensors whose LoD gives the sequences
    in the LoD layout, the first that has one."""
    data = emission.array
    if length is not None:
        if data.ndim != 3:
            raise InvalidArgument(expected(op, "input 'Emission'",
                                           "rank 3 ([batch, max_len, tags]) with Length",
                                           list(data.shape)))
        batch, steps = data.shape[0], data.shape[1]
        lengths = [int(n) for n in _host(length.array).reshape(-1)]
        if len(lengths) != batch:
            raise InvalidArgument(expected(op, "input 'Length'",
                                           f"{batch} values (one per row of Emission)",
                                           len(lengths)))
        bad = [n for n in lengths if not 0 <= n <= steps]
        if bad:
            raise InvalidArgument(expected(op, "input 'Length' values",
                                           f"in [0, {steps}] (Emission's dim 1)", bad[0]))
        spans = [(i * steps, i * steps + n) for i, n in enumerate(lengths)]
        flat = data.reshape(batch * steps, data.shape[2])
    else:
        if data.ndim != 2:
            raise InvalidArgument(expected(op, "input 'Emission'",
                                           "rank 2 ([rows, tags]) without Length",
                                           list(data.shape)))
        lod = next((t._lod for t in lod_from if t is not None and t._lod), None)
        if not lod:
            raise InvalidArgument(expected(op, "input 'Emission'",
                                           "a LoD (or a padded batch with Length)",
                                           "a tensor without LoD"))
        offsets = lod[0]
        if offsets[-1] != data.shape[0]:
            raise InvalidArgument(expected(op, "the last LoD offset",
                                           f"{data.shape[0]} (Emission's rows)", offsets[-1]))
        spans = list(zip(offsets, offsets[1:]))
        flat = data
    labels = None
    if label is not None:
        if label.array is None:
            raise InvalidArgument(expected(op, "input 'Label'", "a tensor with a value",
                                           "an empty variable (was it fed?)"))
        labels = _host(label.array).reshape(-1).astype("int64")
        if labels.size != flat.shape[0]:
            raise InvalidArgument(expected(op, "input 'Label'",
                                           f"{flat.shape[0]} values (one per emission row)",
                                           labels.size))
        tags = flat.shape[1]
        used = np.concatenate([labels[s:e] for s, e in spans] + [np.zeros(0, "int64")])
        if used.size and not 0 <= used.min() <= used.max() < tags:
            raise InvalidArgument(expected(op, "input 'Label' values", f"in [0, {tags})",
                                           int(used.max() if used.max() >= tags
                                               else used.min())))
    return flat, labels, spans


def _check_transition(op, transition, tags):
    shape = tuple(transition.shape)
    if shape != (tags + 2, tags):
        raise InvalidArgument(expected(op, "input 'Transition'",
                                       f"shape [{tags + 2}, {tags}] (tags + 2, tags)",
                                       list(shape)))


def _transition_infer(ctx, tags):
    trans = ctx.input_shape("Transition")
    ctx.check(len(trans) == 2, "input 'Transition'", "rank 2 ([tags + 2, tags])", list(trans))
    if trans[0] >= 0 and trans[1] >= 0:
        ctx.check(trans[0] - 2 == trans[1], "input 'Transition'", "shape [tags + 2, tags]",
                  list(trans))
    ctx.check(dims_match(tags, trans[1]), "the tag count of Emission and Transition",
              "equal", f"{tags} and {trans[1]}")


def _layout_infer(ctx, label_slot):
    """Checks the shapes of Emission (and Label); returns (emission shape, padded?)."""
    emission = tuple(ctx.input_shape("Emission"))
    padded = ctx.has_input("Length")
    if padded:
        ctx.check(len(emission) == 3, "input 'Emission'",
                  "rank 3 ([batch, max_len, tags]) with Length", list(emission))
    else:
        ctx.check(len(emission) == 2, "input 'Emission'", "rank 2 ([rows, tags])",
                  list(emission))
    _transition_infer(ctx, emission[-1])
    if label_slot is not None and ctx.has_input(label_slot):
        label = tuple(ctx.input_shape(label_slot))
        if padded:
            ctx.check(len(label) == 2 or (len(label) == 3 and dims_match(label[2], 1)),
                      f"input '{label_slot}'", "shape [batch, max_len] or [batch, max_len, 1]",
                      list(label))
        else:
            ctx.check(len(label) == 2 and dims_match(label[1], 1), f"input '{label_slot}'",
                      "shape [rows, 1]", list(label))
        ctx.check(dims_match(label[0], emission[0]), f"input '{label_slot}' dim 0",
                  f"Emission's dim 0 ({emission[0]})", label[0])
    return emission, padded


# --- linear_chain_crf -------------------------------------------------------------------------
def _normalized(xp, v):
    """(v / sum(v), sum(v)): the forward and backward vectors are kept at unit sum so the
    products along a long sequence neither overflow nor underflow."""
    total = v.sum()
    if not float(total) > 0:
        raise InvalidArgument(expected("linear_chain_crf", "the sum of unnormalised path "
                                       "probabilities", "> 0 (finite emissions and "
                                       "transitions)", float(total)))
    return v / total, total


def _forward_one(xp, x, x_exps, row_max, w, w_exps, tags_of_seq, alpha):
    """-log P(tags | x) of one sequence; fills ``alpha`` (its normalised forward vectors).

    alpha[0] ~ exp(a) * exp(x[0]), alpha[k] ~ exp(x[k]) * (alpha[k-1] @ exp(w[2:])), each
    scaled to unit sum; log Z = sum_k (row_max[k] + log(scale_k)) + log(alpha[-1] @ exp(b)).
    """
    pair_exps = w_exps[_FIRST_PAIR_ROW:]
    alpha[0], scale = _normalized(xp, w_exps[_START] * x_exps[0])
    log_z = float(row_max[0]) + float(np.log(float(scale)))
    for k in range(1, x.shape[0]):
        alpha[k], scale = _normalized(xp, x_exps[k] * (alpha[k - 1] @ pair_exps))
        log_z += float(row_max[k]) + float(np.log(float(scale)))
    log_z += float(np.log(float(alpha[-1] @ w_exps[_END])))
    s = tags_of_seq
    score = float(w[_START, s[0]] + w[_END, s[-1]]) + float(x[np.arange(len(s)), s].sum())
    if len(s) > 1:
        score += float(w[_FIRST_PAIR_ROW + s[:-1], s[1:]].sum())
    return log_z - score


def _linear_chain_crf(ctx, emission, transition, label, length):
    xp, op = ctx.xp, "linear_chain_crf"
    if label is None:
        raise InvalidArgument(expected(op, "input 'Label'", "a tensor (the tags to score)",
                                       "no value (was it fed?)"))
    flat, labels, spans = _row_spans(op, emission, label, length, (label, emission))
    w = transition.array
    _check_transition(op, w, flat.shape[1])
    row_max = flat.max(axis=1, keepdims=True) if flat.shape[0] else flat[:, :1]
    # every row's exponentials, padding rows too (Paddle exponentiates the whole
    # emission); padding rows of Alpha stay zero
    x_exps = xp.exp(flat - row_max)
    alpha = xp.zeros_like(flat)
    w_exps = xp.exp(w)
    nll = xp.zeros((len(spans), 1), dtype=flat.dtype)
    for i, (start, end) in enumerate(spans):
        if start == end:  # an empty sequence costs 0
            continue
        nll[i, 0] = _forward_one(xp, flat[start:end], x_exps[start:end],
                                 row_max[start:end, 0], w, w_exps,
                                 labels[start:end], alpha[start:end])
    shape = emission.array.shape
    return (LoDTensor(alpha.reshape(shape), emission.lod() if length is None else ()),
            LoDTensor(x_exps.reshape(shape), emission.lod() if length is None else ()),
            w_exps, nll)


def _crf_infer(ctx):
    emission, padded = _layout_infer(ctx, "Label")
    dtype = ctx.input_dtype("Emission")
    for slot in ("Alpha", "EmissionExps"):
        if ctx.has_output(slot):
            ctx.set_output(slot, emission, dtype)
    if ctx.has_output("TransitionExps"):
        ctx.set_output("TransitionExps", ctx.input_shape("Transition"), dtype)
    # one cost per sequence: known from the batch size when padded, from the LoD otherwise
    ctx.set_output("LogLikelihood", (emission[0] if padded else -1, 1), dtype, lod_level=0)


def _backward_one(xp, g, x_exps, w_exps, alpha, tags_of_seq, d_x, d_w):
    """Adds g * d(-log P)/d(x, w) of one sequence to ``d_x`` and ``d_w``.

    With beta the normalised backward vectors (beta[L-1] ~ exp(b), beta[k] ~ exp(w[2:]) @
    (exp(x[k+1]) * beta[k+1])), the tag marginals are P(s_k = i) ~ alpha[k, i] beta[k, i] and
    the pair marginals P(s_k = i, s_k+1 = j) ~ alpha[k, i] exp(w[2+i, j]) exp(x[k+1, j])
    beta[k+1, j]; the gradient is g * (expected counts - the label's counts).
    """
    steps = alpha.shape[0]
    pair_exps = w_exps[_FIRST_PAIR_ROW:]
    beta = xp.empty_like(alpha)
    beta[-1], _ = _normalized(xp, w_exps[_END].copy())
    for k in range(steps - 2, -1, -1):
        beta[k], _ = _normalized(xp, pair_exps @ (x_exps[k + 1] * beta[k + 1]))
    marginal = alpha * beta
    marginal /= marginal.sum(axis=1, keepdims=True)
    s = tags_of_seq
    d_x[:] = g * marginal
    d_x[np.arange(steps), s] -= g
    if d_w is None:
        return
    d_w[_START] += d_x[0]
    d_w[_END] += d_x[-1]
    for k in range(steps - 1):
        pair = alpha[k][:, None] * pair_exps * (x_exps[k + 1] * beta[k + 1])[None, :]
        d_w[_FIRST_PAIR_ROW:] += g * (pair / pair.sum())
    for prev, tag in zip(s[:-1], s[1:]):
        d_w[_FIRST_PAIR_ROW + prev, tag] -= g


def _linear_chain_crf_grad(ctx, emission, transition, label, alpha, emission_exps,
                           transition_exps, length, d_nll):
    xp, op = ctx.xp, "linear_chain_crf_grad"
    # Emission and Transition are read only for their layout (the exps carry the values)
    flat_exps, labels, spans = _row_spans(op, emission_exps, label, length,
                                          (label, emission, emission_exps))
    flat_alpha = alpha.array.reshape(flat_exps.shape)
    w_exps = transition_exps.array
    g_all = _host(d_nll.array).reshape(-1)
    d_x = xp.zeros_like(flat_exps)
    d_w = xp.zeros_like(w_exps) if ctx.wants("Transition@GRAD") else None
    for i, (start, end) in enumerate(spans):
        if start == end:
            continue
        _backward_one(xp, float(g_all[i]), flat_exps[start:end], w_exps,
                      flat_alpha[start:end], labels[start:end], d_x[start:end], d_w)
    d_emission = None
    if ctx.wants("Emission@GRAD"):
        d_emission = LoDTensor(d_x.reshape(emission_exps.array.shape),
                               emission.lod() if length is None else ())
    return d_emission, d_w


def _crf_grad_maker(g):
    inputs = {"Emission": g.input("Emission"), "Transition": g.input("Transition"),
              "Label": g.input("Label"), "Alpha": g.output("Alpha"),
              "EmissionExps": g.output("EmissionExps"),
              "TransitionExps": g.output("TransitionExps"),
              "LogLikelihood@GRAD": g.output_grad("LogLikelihood")}
    if g.has_input("Length"):
        inputs["Length"] = g.input("Length")
    return [g.op("linear_chain_crf_grad", inputs,
                 {"Emission@GRAD": g.input_grad("Emission"),
                  "Transition@GRAD": g.input_grad("Transition")})]


_crf_grad_maker.grad_type = "linear_chain_crf_grad"


def _crf_grad_infer(ctx):
    if ctx.has_output("Emission@GRAD"):
        ctx.set_output("Emission@GRAD", ctx.input_shape("EmissionExps"),
                       ctx.input_dtype("EmissionExps"))
        if not ctx.has_input("Length"):
            ctx.share_lod("Emission", "Emission@GRAD")
    if ctx.has_output("Transition@GRAD"):
        ctx.set_output("Transition@GRAD", ctx.input_shape("TransitionExps"),
                       ctx.input_dtype("TransitionExps"))


def_op("linear_chain_crf",
       inputs=["Emission", "Transition", "Label", "Length?"],
       outputs=["Alpha!", "EmissionExps!", "TransitionExps!", "LogLikelihood"],
       infer_shape=_crf_infer, grad=_crf_grad_maker,
       kernel=_on_host(_linear_chain_crf), lod_aware=True,
       host_reads="Emission, Transition, Label, Length: the forward recursion is a loop per "
                  "sequence and step on the host (each copied in once, the results back once)",
       doc="LogLikelihood[i] = log Z(x_i) - score(s_i) (the negative log-likelihood of "
           "sequence i's labels; 0 for an empty one), with score(s) = a[s_1] + b[s_L] + "
           "sum_l x[l, s_l] + sum_l w[2 + s_(l-1), s_l] and Z the sum of exp(score) over all "
           "tag sequences. Transition: [D + 2, D] (row 0 start a, row 1 end b). Alpha: the "
           "forward vectors scaled to unit sum per step; EmissionExps = exp(x - rowmax(x)); "
           "TransitionExps = exp(w). LoD layout (Label's level 0) or padded with Length.")

def_op("linear_chain_crf_grad",
       inputs=["Emission", "Transition", "Label", "Alpha", "EmissionExps", "TransitionExps",
               "Length?", "LogLikelihood@GRAD"],
       outputs=["Emission@GRAD", "Transition@GRAD"],
       infer_shape=_crf_grad_infer,
       kernel=_on_host(_linear_chain_crf_grad), lod_aware=True, traits=("optional_outputs",),
       host_reads="every input: the backward recursion is a loop per sequence and step on "
                  "the host (each copied in once, the gradients back once)",
       doc="dEmission[k] = g * (P(s_k = . | x) - onehot(label_k)); dTransition = g * "
           "(expected start, end and pair counts - the label's counts), g = "
           "dLogLikelihood of the sequence; from Alpha, EmissionExps and TransitionExps.")


# --- crf_decoding -----------------------------------------------------------------------------
def _viterbi(xp, x, w):
    """The highest-scoring tag sequence of emissions ``x`` [L, D] (host int64 [L]); ties go
    to the lower tag."""
    steps, tags = x.shape
    pair = w[_FIRST_PAIR_ROW:]
    best = w[_START] + x[0]
    back = np.zeros((steps, tags), dtype="int64")
    for k in range(1, steps):
        scores = best[:, None] + pair          # [from, to]
        back[k] = _host(xp.argmax(scores, axis=0))
        best = scores.max(axis=0) + x[k]
    path = np.empty(steps, dtype="int64")
    path[-1] = int(xp.argmax(best + w[_END]))
    for k in range(steps - 1, 0, -1):
        path[k - 1] = back[k, path[k]]
    return path


def _crf_decoding(ctx, emission, transition, label, length):
    xp, op = ctx.xp, "crf_decoding"
    flat, labels, spans = _row_spans(op, emission, label, length, (emission, label))
    w = transition.array
    _check_transition(op, w, flat.shape[1])
    path = np.zeros(flat.shape[0], dtype="int64")
    for start, end in spans:
        if start < end:
            path[start:end] = _viterbi(xp, flat[start:end], w)
    if labels is not None:
        # with a label, Paddle reports per step whether the decoded tag is right (padding: 0)
        valid = np.zeros(flat.shape[0], dtype=bool)
        for start, end in spans:
            valid[start:end] = True
        path = ((path == labels) & valid).astype("int64")
    if length is not None:
        return xp.asarray(path.reshape(emission.array.shape[:2]))
    return LoDTensor(xp.asarray(path.reshape(-1, 1)), emission.lod())


def _decoding_infer(ctx):
    emission, padded = _layout_infer(ctx, "Label")
    if padded:
        ctx.set_output("ViterbiPath", emission[:2], VarType.INT64, lod_level=0)
    else:
        ctx.set_output("ViterbiPath", (emission[0], 1), VarType.INT64)
        ctx.share_lod("Emission", "ViterbiPath")


def_op("crf_decoding",
       inputs=["Emission", "Transition", "Label?", "Length?"], outputs=["ViterbiPath"],
       infer_shape=_decoding_infer,
       kernel=_on_host(_crf_decoding), lod_aware=True,
       host_reads="Emission, Transition, Label, Length: Viterbi is a loop per sequence and "
                  "step with back-pointers on the host (each copied in once, the path back once)",
       doc="ViterbiPath = argmax over tag sequences s of score(s) (see linear_chain_crf), per "
           "sequence: int64 [N, 1] with Emission's LoD, or [B, S] when padded with Length. "
           "With Label: 1 where the decoded tag equals the label, else 0 (padding 0). No "
           "gradient.")


# --- chunk_eval -------------------------------------------------------------------------------
# tag numbers within a chunk type per scheme: (tags per type, begin, inside, end, single)
_SCHEMES = {"IOB": (2, 0, 1, -1, -1), "IOE": (2, -1, 0, 1, -1),
            "IOBES": (4, 0, 1, 2, 3), "plain": (1, -1, -1, -1, -1)}


def _chunk_ends(prev_tag, prev_type, tag, type_, other, scheme):
    """Whether the chunk open at the previous step closes before this one."""
    _, begin, inside, end, single = scheme
    if prev_type == other:
        return False
    if type_ == other or type_ != prev_type:
        return True
    if prev_tag in (begin, inside):
        return tag in (begin, single)
    return prev_tag in (end, single)


def _chunk_begins(prev_tag, prev_type, tag, type_, other, scheme):
    """Whether a new chunk opens at this step."""
    _, begin, inside, end, single = scheme
    if prev_type == other:
        return type_ != other
    if type_ == other:
        return False
    if type_ != prev_type or tag in (begin, single):
        return True
    if tag in (inside, end):
        return prev_tag in (end, single)
    return False


def chunks(labels, num_chunk_types, scheme_name):
    """The chunks of one tag sequence as (first step, last step, chunk type) tuples. Label
    ``v`` means tag ``v % n`` of type ``v // n`` (n tags per type); type
    ``num_chunk_types`` is outside any chunk."""
    scheme = _SCHEMES[scheme_name]
    per_type, other = scheme[0], num_chunk_types
    found, start, open_chunk = [], 0, False
    tag, type_ = -1, other
    for i, value in enumerate(labels):
        prev_tag, prev_type = tag, type_
        tag, type_ = int(value) % per_type, int(value) // per_type
        if open_chunk and _chunk_ends(prev_tag, prev_type, tag, type_, other, scheme):
            found.append((start, i - 1, prev_type))
            open_chunk = False
        if _chunk_begins(prev_tag, prev_type, tag, type_, other, scheme):
            start, open_chunk = i, True
    if open_chunk:
        found.append((start, len(labels) - 1, type_))
    return found


def _chunk_spans(op, inference, label, seq_length):
    infer_values = _host(inference.array)
    label_values = _host(label.array)
    if seq_length is not None and not label._lod:
        rows = infer_values.shape[0]
        width = infer_values.size // rows if rows else 0
        lengths = [int(n) for n in _host(seq_length.array).reshape(-1)]
        bad = [n for n in lengths if not 0 <= n <= width]
        if len(lengths) != rows or bad:
            raise InvalidArgument(expected(op, "input 'SeqLength'",
                                           f"{rows} lengths in [0, {width}]", lengths))
        spans = [(i * width, i * width + n) for i, n in enumerate(lengths)]
    else:
        if not label._lod:
            raise InvalidArgument(expected(op, "input 'Label'",
                                           "a LoD (or a padded batch with SeqLength)",
                                           "a tensor without LoD"))
        if len(label._lod) != 1:
            raise InvalidArgument(expected(op, "input 'Label' LoD", "one level",
                                           f"{len(label._lod)} levels"))
        if inference._lod and inference.lod() != label.lod():
            raise InvalidArgument(expected(op, "the LoD of Inference", f"Label's "
                                           f"{label.lod()}", inference.lod()))
        offsets = label._lod[0]
        spans = list(zip(offsets, offsets[1:]))
    return infer_values.reshape(-1), label_values.reshape(-1), spans


def _chunk_eval(ctx, inference, label, seq_length):
    xp, attrs = ctx.xp, ctx.attrs
    types, scheme = attrs["num_chunk_types"], attrs["chunk_scheme"]
    excluded = set(attrs["excluded_chunk_types"])
    limit = types * _SCHEMES[scheme][0]
    infer_values, label_values, spans = _chunk_spans("chunk_eval", inference, label,
                                                     seq_length)
    for slot, values in (("Inference", infer_values), ("Label", label_values)):
        # only the steps inside the sequences: a padded batch's filler is not read
        values = np.concatenate([values[start:end] for start, end in spans] or [values[:0]])
        bad = values[(values < 0) | (values > limit)]
        if bad.size:
            raise InvalidArgument(expected("chunk_eval", f"input '{slot}' values",
                                           f"in [0, {limit}] (num_chunk_types * tags per "
                                           f"type; {limit} is outside any chunk)",
                                           int(bad[0])))
    n_infer = n_label = n_correct = 0
    for start, end in spans:
        found = [c for c in chunks(infer_values[start:end], types, scheme)
                 if c[2] not in excluded]
        truth = [c for c in chunks(label_values[start:end], types, scheme)
                 if c[2] not in excluded]
        n_infer += len(found)
        n_label += len(truth)
        n_correct += len(set(found) & set(truth))
    precision = n_correct / n_infer if n_infer else 0.0
    recall = n_correct / n_label if n_label else 0.0
    f1 = 2 * precision * recall / (precision + recall) if n_correct else 0.0

    def scalar(value, dtype):
        return xp.asarray(np.array([value], dtype=dtype))
    return (scalar(precision, "float32"), scalar(recall, "float32"), scalar(f1, "float32"),
            scalar(n_infer, "int64"), scalar(n_label, "int64"), scalar(n_correct, "int64"))


def _chunk_infer(ctx):
    infer, label = ctx.input_shape("Inference"), ctx.input_shape("Label")
    ctx.check(len(infer) == len(label) and all(dims_match(a, b) for a, b in zip(infer, label)),
              "input 'Label'", f"the shape of Inference {list(infer)}", list(label))
    for slot in ("Precision", "Recall", "F1-Score"):
        ctx.set_output(slot, (1,), VarType.FP32)
    for slot in ("NumInferChunks", "NumLabelChunks", "NumCorrectChunks"):
        ctx.set_output(slot, (1,), VarType.INT64)


def _scheme_check(value):
    return None if value in _SCHEMES else f"one of {sorted(_SCHEMES)}"


def_op("chunk_eval",
       inputs=["Inference", "Label", "SeqLength?"],
       outputs=["Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks",
                "NumCorrectChunks"],
       attrs={"num_chunk_types": ("int", None),
              "chunk_scheme": ("string", "IOB", _scheme_check),
              "excluded_chunk_types": ("ints", [])},
       infer_shape=_chunk_infer,
       kernel=_chunk_eval, lod_aware=True,
       host_reads="Inference, Label (and SeqLength): chunks are found by a scan per sequence "
                  "on the host; their counts are small",
       doc="Chunks (first step, last step, type) of the inferred and the true tags of each "
           "sequence under chunk_scheme (IOB, IOE, IOBES, plain; label v = tag v % n of type "
           "v // n, type num_chunk_types outside chunks); excluded types are not counted. "
           "Precision = correct / inferred, Recall = correct / labelled, F1 = 2PR / (P + R) "
           "(0 when nothing is correct). LoD layout (Label's level 0) or padded with "
           "SeqLength. No gradient.")
