"""Shared pieces of the recurrent ops: activations, the batch layout of a LoD input, and the
one-step LSTM/GRU cell maths used by ``lstm``/``gru`` (per time step over a batch) and
``gru_unit`` (one step on a plain batch).

Activations are written in terms of their outputs because Paddle's backward kernels only
keep the activated values: ``d act(x) / dx`` is ``y(1-y)`` for sigmoid, ``1-y^2`` for tanh,
``y>0`` for relu.
"""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.tensor import offsets_to_lengths

#: gru_unit's integer activation codes (Paddle's GRUActivationType)
GRU_UNIT_ACTIVATIONS = {0: "identity", 1: "sigmoid", 2: "tanh", 3: "relu"}
ACTIVATIONS = ("sigmoid", "tanh", "relu", "identity")

# Paddle's lstm/gru kernels (math/detail/activation_functions.h) clip sigmoid's input
_SIGMOID_MIN, _SIGMOID_MAX = -40.0, 13.0


def activate(xp, name, x, clip_sigmoid=True):
    if name == "sigmoid":
        if clip_sigmoid:  # (np.clip's values; its Python wrapper costs two ufunc calls more)
            x = xp.minimum(xp.maximum(x, _SIGMOID_MIN), _SIGMOID_MAX)
        return 1.0 / (1.0 + xp.exp(-x))
    if name == "tanh":
        return xp.tanh(x)
    if name == "relu":
        return xp.maximum(x, 0)
    if name in ("identity", ""):
        return x
    raise InvalidArgument(expected("rnn", "activation", f"one of {list(ACTIVATIONS)}",
                                   repr(name)))


def activate_grad(xp, name, dy, y):
    """dL/dx from dL/dy and the activation's output y."""
    if name == "sigmoid":
        return dy * y * (1 - y)
    if name == "tanh":
        return dy * (1 - y * y)
    if name == "relu":
        return dy * (y > 0)
    return dy


def one_of(*choices):
    return lambda v: None if v in choices else f"one of {list(choices)}"


# --- batch layout ----------------------------------------------------------------------------
class BatchLayout:
    """Paddle's sequence-to-batch reordering (math/sequence2batch): sequences sorted by length,
    longest first (ties keep input order); time step t of the batch holds row t of every
    sequence longer than t (row ``len-1-t`` when reversed). Because of the sort, the sequences
    alive at step t are a prefix of those alive at step t-1.

    ``rows``: input row of every batch row; ``starts``: where each step begins;
    ``order``: sequence index of each batch position (to reorder H0/C0). Empty sequences
    sort last and have no step: their initial states are never read (their gradients are 0).
    """

    def __init__(self, offsets, is_reverse):
        lengths = offsets_to_lengths(offsets)
        self.order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        steps = max(lengths) if lengths else 0
        rows, starts = [], [0]
        for t in range(steps):
            for s in self.order:
                if lengths[s] > t:
                    rows.append(offsets[s] + (lengths[s] - 1 - t if is_reverse else t))
            starts.append(len(rows))
        self.rows = np.asarray(rows, dtype="int64")
        self.starts = starts
        self.num_rows = offsets[-1]
        # the sequences the first step runs: every one but the empty ones
        self._first = np.asarray(self.order[:starts[1] if steps else 0], dtype="int64")

    def steps(self):
        """(t, start, end, prev_start) for each time step; prev_start is None at t = 0."""
        for t in range(len(self.starts) - 1):
            yield t, self.starts[t], self.starts[t + 1], self.starts[t - 1] if t else None

    def to_batch(self, xp, data):
        return xp.take(data, xp.asarray(self.rows), axis=0)

    def to_seq(self, xp, batch):
        out = xp.zeros((self.num_rows,) + batch.shape[1:], dtype=batch.dtype)
        out[xp.asarray(self.rows)] = batch
        return out

    def first_rows(self):
        """Rows of the first step: ``[0, first_rows())``; every later row reads a state row."""
        return self.starts[1] if len(self.starts) > 1 else 0

    def previous(self, xp, batch):
        """The row of ``batch`` (batch order) that each row of the steps after the first
        reads as its previous state: row ``start + i`` of step t reads ``prev + i``. A
        weight's gradient, summed over the steps, is then one product: ``previous(states).T
        @ grads[first_rows():]`` (plus the first step's initial states')."""
        starts = self.starts
        if len(starts) < 3:
            index = np.zeros(0, dtype="int64")
        else:
            index = np.concatenate([np.arange(starts[t - 1], starts[t - 1] + starts[t + 1] -
                                              starts[t]) for t in range(1, len(starts) - 1)])
        return xp.take(batch, xp.asarray(index), axis=0)

    def reorder(self, xp, state):
        """The initial states (one row per sequence) of the sequences of the first step, in
        batch order."""
        return xp.take(state, xp.asarray(self._first), axis=0)

    def restore(self, xp, ordered, like):
        """The inverse of ``reorder``: rows back in sequence order, shaped ``like`` the
        states, zeros for the empty sequences (and everywhere when ``ordered`` is None)."""
        out = xp.zeros_like(like)
        if ordered is not None:
            out[xp.asarray(self._first)] = ordered
        return out


def lod_offsets(op, tensor, slot="Input"):
    lod = tensor._lod
    if not lod:
        raise InvalidArgument(expected(op, f"input '{slot}'", "a LoDTensor with LoD",
                                       "a tensor without LoD"))
    offsets = lod[-1]
    if offsets[-1] != tensor.array.shape[0]:
        raise InvalidArgument(expected(op, f"input '{slot}' last LoD offset",
                                       f"{tensor.array.shape[0]} (its number of rows)",
                                       offsets[-1]))
    return offsets


# --- GRU cell --------------------------------------------------------------------------------
def gru_weights(weight):
    """Paddle's GRU weight is one buffer: its first 2*D*D values are the [D, 2D] update/reset
    weights, the last D*D the [D, D] candidate weights (not Weight[:, :2D] / Weight[:, 2D:])."""
    d = weight.shape[0]
    flat = weight.reshape(-1)
    return flat[:2 * d * d].reshape(d, 2 * d), flat[2 * d * d:].reshape(d, d)


def gru_weight_grad(xp, d_gate_w, d_state_w):
    d = d_state_w.shape[0]
    return xp.concatenate([d_gate_w.reshape(-1), d_state_w.reshape(-1)]).reshape(d, 3 * d)


def gru_step(xp, pre, h_prev, gate_w, state_w, act, gate_act, origin_mode, clip=True):
    """One GRU step. ``pre``: [n, 3D] input projection (+ bias); ``h_prev``: [n, D].
    Returns (activated gates [u, r, c], r * h_prev, h)."""
    d = h_prev.shape[1]
    ur = pre[:, :2 * d] + h_prev @ gate_w
    u = activate(xp, gate_act, ur[:, :d], clip)
    r = activate(xp, gate_act, ur[:, d:], clip)
    reset_h = r * h_prev
    c = activate(xp, act, pre[:, 2 * d:] + reset_h @ state_w, clip)
    if origin_mode:
        h = u * h_prev + c - u * c
    else:
        h = h_prev - u * h_prev + u * c
    return xp.concatenate([u, r, c], axis=1), reset_h, h


def gru_step_grad(xp, gates, reset_h, h_prev, dh, gate_w, state_w, act, gate_act,
                  origin_mode, weight_grads=True):
    """Gradients of one GRU step: (d pre [n, 3D], d h_prev, d gate_w, d state_w); the
    weights' are None without ``weight_grads`` (a sequence's are one product each over all
    its steps: ``h_prev.T @ d pre[:, :2D]``, ``reset_h.T @ d pre[:, 2D:]``)."""
    d = h_prev.shape[1]
    u, r, c = gates[:, :d], gates[:, d:2 * d], gates[:, 2 * d:]
    if origin_mode:
        du = dh * (h_prev - c)
        dh_prev = dh * u
        dc = activate_grad(xp, act, dh * (1 - u), c)
    else:
        du = dh * (c - h_prev)
        dh_prev = dh * (1 - u)
        dc = activate_grad(xp, act, dh * u, c)
    d_reset_h = dc @ state_w.T
    dr = activate_grad(xp, gate_act, d_reset_h * h_prev, r)
    du = activate_grad(xp, gate_act, du, u)
    dh_prev = dh_prev + d_reset_h * r
    dur = xp.concatenate([du, dr], axis=1)
    dh_prev = dh_prev + dur @ gate_w.T
    if not weight_grads:
        return xp.concatenate([dur, dc], axis=1), dh_prev, None, None
    return (xp.concatenate([dur, dc], axis=1), dh_prev, h_prev.T @ dur, reset_h.T @ dc)


# --- LSTM cell -------------------------------------------------------------------------------
def lstm_step(xp, pre, c_prev, peep, acts, cell_clip=0.0):
    """One step of Paddle's lstm. ``pre``: [n, 4D] projections in Paddle's gate order
    (candidate, input, forget, output); ``c_prev`` None means a zero state; ``peep`` None or
    (w_ic, w_fc, w_oc); ``cell_clip`` > 0 clips c to [-cell_clip, cell_clip] before the
    output gate reads it. Returns (activated gates, c, act_cell(c), h)."""
    gate_act, cell_act, cand_act = acts
    d = pre.shape[1] // 4
    cand = activate(xp, cand_act, pre[:, :d])
    zi, zf, zo = pre[:, d:2 * d], pre[:, 2 * d:3 * d], pre[:, 3 * d:]
    if c_prev is not None and peep is not None:
        zi = zi + c_prev * peep[0]
        zf = zf + c_prev * peep[1]
    ig = activate(xp, gate_act, zi)
    fg = activate(xp, gate_act, zf)
    c = cand * ig + (c_prev * fg if c_prev is not None else 0)
    if cell_clip > 0:
        c = xp.clip(c, -cell_clip, cell_clip)
    og = activate(xp, gate_act, zo + c * peep[2] if peep is not None else zo)
    c_act = activate(xp, cell_act, c)
    return xp.concatenate([cand, ig, fg, og], axis=1), c, c_act, og * c_act


def lstm_step_grad(xp, gates, c, c_act, c_prev, dh, dc, peep, acts, cell_clip=0.0):
    """Gradients of one lstm step given dh and the cell gradient dc flowing in from later
    steps: (d pre [n, 4D], d c_prev or None, peephole grads (3 arrays [D]) or None).
    With ``cell_clip``, no gradient passes where c was clipped."""
    gate_act, cell_act, cand_act = acts
    d = c.shape[1]
    cand, ig, fg, og = (gates[:, k * d:(k + 1) * d] for k in range(4))
    dog = activate_grad(xp, gate_act, dh * c_act, og)
    dc = dc + activate_grad(xp, cell_act, dh * og, c_act)
    if peep is not None:
        dc = dc + dog * peep[2]
    if cell_clip > 0:
        dc = dc * ((c > -cell_clip) & (c < cell_clip))
    dcand = activate_grad(xp, cand_act, dc * ig, cand)
    dig = activate_grad(xp, gate_act, dc * cand, ig)
    prev = c_prev if c_prev is not None else xp.zeros_like(c)
    dfg = activate_grad(xp, gate_act, dc * prev, fg)
    dc_prev = dc * fg
    dpeep = None
    if peep is not None:
        dc_prev = dc_prev + dig * peep[0] + dfg * peep[1]
        dpeep = ((dig * prev).sum(axis=0), (dfg * prev).sum(axis=0), (dog * c).sum(axis=0))
    return xp.concatenate([dcand, dig, dfg, dog], axis=1), dc_prev, dpeep
