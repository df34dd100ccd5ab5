"""W3: a tanh RNN over a LoD batch, forward + backward, against NumPy and PyTorch.

    python benchmarks/dynamic_rnn.py

32 sequences of lengths 5..50, input 64, hidden 128, h_t = tanh(x_t W + h_{t-1} U + b),
loss = mean of each sequence's last hidden state. fluid_nb runs it as Fluid does, with
DynamicRNN (rank table, shrinking per-step batch, while loop) and append_backward; the
references are a hand-written NumPy loop over the same sorted, shrinking batch, and PyTorch's
eager loop and packed ``nn.RNN`` when installed, and PaddlePaddle 2.6's static graph on the
same ops when this Python has Paddle (for instance a venv with ``paddlepaddle==2.6.2``)::

    /path/to/paddle-venv/bin/python benchmarks/dynamic_rnn.py

Every candidate starts each batch from the batch itself (rows and lengths, or sequences)
and does its own ranking and gathering inside the timing. The candidates take turns, 20
batches each, for 15 rounds, in an order that rotates from round to round, and each keeps
its fastest round; compare the ratios, which machine load moves far less than the times.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fluid_nb as fluid  # noqa: E402
from _timing import interleaved_best, row, torch_or_none  # noqa: E402

BATCH, INPUT, HIDDEN = 32, 64, 128


def make_batch(seed=0):
    rng = np.random.RandomState(seed)
    lengths = rng.randint(5, 51, BATCH)
    data = rng.uniform(-1, 1, (int(lengths.sum()), INPUT)).astype("float32")
    return data, [int(n) for n in lengths]


def make_params(seed=1):
    rng = np.random.RandomState(seed)
    w = rng.uniform(-0.1, 0.1, (INPUT, HIDDEN)).astype("float32")
    u = rng.uniform(-0.1, 0.1, (HIDDEN, HIDDEN)).astype("float32")
    b = np.zeros(HIDDEN, "float32")
    return w, u, b


def numpy_step(data, lengths, w, u, b):
    """Forward and backward over the batch sorted by length, shrinking as sequences end.

    Each call starts from the LoD batch itself (its rows and lengths), as a fluid_nb run
    starts from the fed LoDTensor and the PyTorch loop from the sequences: it ranks the
    sequences by length and gathers each step's rows (one gather, a view per step)."""
    lengths = np.asarray(lengths)
    batch, hidden = len(lengths), u.shape[0]
    offsets = np.concatenate([[0], np.cumsum(lengths)])[:-1]

    def layout():
        order = np.argsort(-lengths, kind="stable")
        sorted_lengths = lengths[order]
        steps = int(sorted_lengths[0])
        running = np.arange(steps)[:, None] < sorted_lengths[None, :]  # [step, rank]
        batch_at = running.sum(axis=1).tolist()
        # x per step: rows of the sequences still running, in rank order
        rows = data[(offsets[order][None, :] + np.arange(steps)[:, None])[running]]
        ends = np.cumsum(batch_at).tolist()
        xs = [rows[end - n:end] for n, end in zip(batch_at, ends)]
        return sorted_lengths, steps, batch_at, xs

    def run():
        sorted_lengths, steps, batch_at, xs = layout()
        h = np.zeros((batch, hidden), "float32")
        hs = []
        for t, n in enumerate(batch_at):
            h = np.tanh(xs[t] @ w + h[:n] @ u + b)
            hs.append(h)
        # last state of each sequence: the step where it ends
        last = np.empty((batch, hidden), "float32")
        for rank, n_len in enumerate(sorted_lengths):
            last[rank] = hs[n_len - 1][rank]
        loss = last.mean()
        dlast = np.full_like(last, 1.0 / last.size)
        dw, du, db = np.zeros_like(w), np.zeros_like(u), np.zeros_like(b)
        dh = np.zeros((batch, hidden), "float32")
        for t in range(steps - 1, -1, -1):
            n = batch_at[t]
            ends = sorted_lengths[:n] == t + 1
            dh_t = dh[:n] + np.where(ends[:, None], dlast[:n], 0)
            dz = dh_t * (1 - hs[t] * hs[t])
            dw += xs[t].T @ dz
            db += dz.sum(axis=0)
            h_prev = hs[t - 1][:n] if t > 0 else np.zeros((n, hidden), "float32")
            du += h_prev.T @ dz
            dh = np.zeros((batch, hidden), "float32")
            dh[:n] = dz @ u.T
        return loss, dw, du, db
    return run


def fluid_program(data, lengths, w, u, b, place=None, fetch_grads=True):
    """The DynamicRNN batch as Fluid builds it, on ``place`` (hidden size from ``u``):
    (program, feed, fetch list, scope holding the parameters, executor)."""
    place = place or fluid.CPUPlace()
    hidden = u.shape[0]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[w.shape[0]], dtype="float32", lod_level=1)
        rnn = fluid.layers.DynamicRNN()
        with rnn.block():
            x_t = rnn.step_input(x)
            h_prev = rnn.memory(shape=[hidden], value=0.0)
            h = fluid.layers.fc(input=[x_t, h_prev], size=hidden, act="tanh",
                                param_attr=[fluid.ParamAttr(name="w"), fluid.ParamAttr(name="u")],
                                bias_attr=fluid.ParamAttr(name="b"))
            rnn.update_memory(h_prev, h)
            rnn.output(h)
        last = fluid.layers.sequence_last_step(rnn())
        loss = fluid.layers.mean(last)
        fluid.backward.append_backward(loss)
    scope, exe = fluid.Scope(), fluid.Executor(place)
    exe.run(startup, scope=scope)
    for name, value in (("w", w), ("u", u), ("b", b)):
        scope.var(name).get_tensor().set(value, place)
    feed = {"x": fluid.create_lod_tensor(data, [lengths], fluid.CPUPlace())}
    fetch = [loss, "w@GRAD", "u@GRAD", "b@GRAD"] if fetch_grads else [loss]
    return main, feed, fetch, scope, exe


def fluid_step(data, lengths, w, u, b, place=None, fetch_grads=True):
    """The DynamicRNN batch as Fluid runs it, on ``place`` (hidden size from ``u``): a
    step fetching the loss (and the parameters' gradients with ``fetch_grads``)."""
    main, feed, fetch, scope, exe = fluid_program(data, lengths, w, u, b, place, fetch_grads)
    return lambda: exe.run(main, feed=feed, fetch_list=fetch, scope=scope)


def torch_steps(torch, data, lengths, w, u, b):
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    seqs = [torch.from_numpy(data[offsets[i]:offsets[i + 1]]) for i in range(BATCH)]
    tw = torch.tensor(w, requires_grad=True)
    tu = torch.tensor(u, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    order = sorted(range(BATCH), key=lambda i: -lengths[i])

    def loop():
        for p in (tw, tu, tb):
            p.grad = None
        h = torch.zeros(BATCH, HIDDEN)
        last = [None] * BATCH
        for t in range(lengths[order[0]]):
            running = [i for i in order if lengths[i] > t]
            x_t = torch.stack([seqs[i][t] for i in running])
            h = torch.tanh(x_t @ tw + h[:len(running)] @ tu + tb)
            for rank, i in enumerate(running):
                if lengths[i] == t + 1:
                    last[i] = h[rank]
        loss = torch.stack(last).mean()
        loss.backward()
        return loss

    rnn = torch.nn.RNN(INPUT, HIDDEN, nonlinearity="tanh", batch_first=False)
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(torch.from_numpy(w.T))
        rnn.weight_hh_l0.copy_(torch.from_numpy(u.T))
        rnn.bias_ih_l0.copy_(torch.from_numpy(b))
        rnn.bias_hh_l0.zero_()
    packed_input = torch.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False)

    def packed():
        rnn.zero_grad()
        _, h_n = rnn(packed_input)
        loss = h_n[0].mean()
        loss.backward()
        return loss
    return loop, packed


def paddle_step(data, lengths, w, u, b):
    """Paddle 2.6's static graph running the same DynamicRNN op structure (Paddle 2.6 no
    longer ships the DynamicRNN layer; the fixture tools rebuild it from the raw ops), or
    None when Paddle is not installed in this Python."""
    try:
        import paddle  # noqa: F401
    except ImportError:
        return None
    tools = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools",
                         "paddle_fixtures")
    sys.path.insert(0, tools)
    import gen_control_flow as raw  # switches Paddle to static-graph mode
    static = raw.static
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data(name="x", shape=[None, INPUT], dtype="float32", lod_level=1)
        # Paddle's executor fails on this backward unless x takes a gradient
        # ("numel() can't be used in TensorArray" in fill_any_like)
        x.stop_gradient = False
        rnn = raw.RawDynamicRNN(main)
        with rnn.block():
            x_t = rnn.step_input(x)
            h_prev = rnn.memory(shape=[HIDDEN], value=0.0)
            h = static.nn.fc([x_t, h_prev], size=HIDDEN, activation="tanh",
                             weight_attr=[raw.paddle.ParamAttr(name="w"),
                                          raw.paddle.ParamAttr(name="u")],
                             bias_attr=raw.paddle.ParamAttr(name="b"))
            rnn.update_memory(h_prev, h)
            rnn.output(h)
        last = static.nn.sequence_lod.sequence_pool(rnn.outputs[0], "last")
        loss = raw.fluid_mean(last)
        static.append_backward(loss)
    place = raw.paddle.CPUPlace()
    exe = static.Executor(place)
    scope = raw.paddle.static.global_scope()
    exe.run(startup)
    for name, value in (("w", w), ("u", u), ("b", b)):
        scope.var(name).get_tensor().set(value, place)
    offsets = [0] + [int(o) for o in np.cumsum(lengths)]
    feed = {"x": raw.lod_tensor(data, [offsets], place)}
    fetch = [loss.name, "w@GRAD", "u@GRAD", "b@GRAD"]
    return lambda: exe.run(main, feed=feed, fetch_list=fetch)


def main():
    data, lengths = make_batch()
    w, u, b = make_params()
    reference = numpy_step(data, lengths, w, u, b)
    ours = fluid_step(data, lengths, w, u, b)
    loss_ref, dw, du, db = reference()
    loss, gw, gu, gb = ours()
    np.testing.assert_allclose(np.asarray(loss).item(), loss_ref, rtol=1e-4)
    for got, want in ((gw, dw), (gu, du), (gb, db)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-3, atol=1e-6)
    print(f"W3 DynamicRNN, {BATCH} sequences (lengths 5..50, {sum(lengths)} rows), "
          f"input {INPUT}, hidden {HIDDEN}, tanh, forward + backward "
          f"(values checked against NumPy)")
    candidates = {"fluid_nb DynamicRNN": ours, "NumPy loop over the sorted batch": reference}
    in_paddle = paddle_step(data, lengths, w, u, b)
    if in_paddle is not None:
        loss_p, gw_p, _, _ = in_paddle()
        np.testing.assert_allclose(float(np.asarray(loss_p).reshape(-1)[0]), loss_ref, rtol=1e-4)
        np.testing.assert_allclose(np.asarray(gw_p), dw, rtol=1e-3, atol=1e-6)
        candidates["PaddlePaddle 2.6 static, the same ops"] = in_paddle
    torch = torch_or_none()
    if torch is not None:
        loop, packed = torch_steps(torch, data, lengths, w, u, b)
        candidates["PyTorch eager loop"] = loop
        candidates["PyTorch packed nn.RNN"] = packed
    for fn in candidates.values():  # warm up: plans, caches, allocator
        for _ in range(10):
            fn()
    times = interleaved_best(candidates)
    base = times["NumPy loop over the sorted batch"]
    for label, seconds in times.items():
        row(f"  {label}", seconds * 1e3, "ms/batch", base * 1e3, "NumPy")


if __name__ == "__main__":
    main()
