"""The device executor: W2 and W3 on CUDAPlace against the same steps hand-written in CuPy
and in PyTorch CUDA eager, the per-op overhead on the device, and the host transfers a step
makes.

    python benchmarks/gpu.py                 # on a machine whose CuPy sees a GPU
    python benchmarks/gpu.py --place strict  # anywhere: the strict device stands in for
                                             # CuPy (transfers, and the code paths; its
                                             # times are NumPy's and mean nothing)

W2: MLP 784-200-200-10 (relu), softmax cross-entropy, Adam, batch 64 and 1024.
W3: the DynamicRNN batch of benchmarks/dynamic_rnn.py (32 sequences of 5..50 steps, input
64), tanh RNN, forward + backward, hidden 128 and 512.
Each step ends with its loss on the host (a fluid_nb fetch copies it back; the hand-written
steps copy it too), so every timing includes the device's work.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fluid_nb as fluid  # noqa: E402
from _timing import interleaved_best, row, torch_or_none  # noqa: E402
from dynamic_rnn import BATCH, INPUT, fluid_step, make_batch  # noqa: E402
from train_step import w2_by_hand, w2_fluid  # noqa: E402  (the one W2 of the benchmarks)
from fluid_nb.tensor.transfer import to_host  # noqa: E402


# --- W2 ------------------------------------------------------------------------------------------
def w2_torch(torch, x, label):
    device = torch.device("cuda")
    tx = torch.from_numpy(x).to(device)
    tl = torch.from_numpy(label.reshape(-1)).to(device)
    model = torch.nn.Sequential(torch.nn.Linear(784, 200), torch.nn.ReLU(),
                                torch.nn.Linear(200, 200), torch.nn.ReLU(),
                                torch.nn.Linear(200, 10)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.001)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(tx), tl)
        loss.backward()
        opt.step()
        return loss.item()
    return step


# --- W3 ------------------------------------------------------------------------------------------
def rnn_params(hidden, seed=1):
    rng = np.random.RandomState(seed)
    return (rng.uniform(-0.1, 0.1, (INPUT, hidden)).astype("float32"),
            rng.uniform(-0.1, 0.1, (hidden, hidden)).astype("float32"),
            np.zeros(hidden, "float32"))


def w3_fluid(place, data, lengths, w, u, b):
    """The W3 batch on ``place``, fetching the loss (as the hand-written steps give it)."""
    return fluid_step(data, lengths, w, u, b, place, fetch_grads=False)


def w3_by_hand(xp, data, lengths, w, u, b):
    """The W3 batch written directly in ``xp``: the batch ranked by length on the host (its
    LoD is host data), each step's rows gathered on the device, the shrinking loop and its
    backward."""
    hidden = u.shape[0]
    lengths = np.asarray(lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)])[:-1]
    w, u, b, data = xp.asarray(w), xp.asarray(u), xp.asarray(b), xp.asarray(data)

    def step():
        order = np.argsort(-lengths, kind="stable")
        sorted_lengths = lengths[order]
        steps = int(sorted_lengths[0])
        running = np.arange(steps)[:, None] < sorted_lengths[None, :]
        batch_at = running.sum(axis=1).tolist()
        rows = data[xp.asarray((offsets[order][None, :] + np.arange(steps)[:, None])[running])]
        ends = np.cumsum(batch_at).tolist()
        xs = [rows[end - n:end] for n, end in zip(batch_at, ends)]
        h = xp.zeros((BATCH, hidden), "float32")
        hs = []
        for t, n in enumerate(batch_at):
            h = xp.tanh(xs[t] @ w + h[:n] @ u + b)
            hs.append(h)
        last_rows = xp.concatenate([hs[n - 1][rank:rank + 1]
                                    for rank, n in enumerate(sorted_lengths.tolist())])
        loss = last_rows.mean()
        scale = 1.0 / (BATCH * hidden)
        dw, du, db = xp.zeros_like(w), xp.zeros_like(u), xp.zeros_like(b)
        dh = xp.zeros((BATCH, hidden), "float32")
        for t in range(steps - 1, -1, -1):
            n = batch_at[t]
            ends_now = xp.asarray((sorted_lengths[:n] == t + 1)[:, None].astype("float32"))
            dz = (dh[:n] + ends_now * scale) * (1 - hs[t] * hs[t])
            dw += xs[t].T @ dz
            db += dz.sum(axis=0)
            if t > 0:
                du += hs[t - 1][:n].T @ dz
            dh = xp.zeros((BATCH, hidden), "float32")
            dh[:n] = dz @ u.T
        return to_host(loss)
    return step


def w3_torch(torch, data, lengths, w, u, b):
    device = torch.device("cuda")
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    seqs = [torch.from_numpy(data[offsets[i]:offsets[i + 1]]).to(device) for i in range(BATCH)]
    tw, tu, tb = (torch.tensor(a, device=device, requires_grad=True) for a in (w, u, b))
    hidden = u.shape[0]
    order = sorted(range(BATCH), key=lambda i: -lengths[i])

    def step():
        for p in (tw, tu, tb):
            p.grad = None
        h = torch.zeros(BATCH, hidden, device=device)
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
        return loss.item()
    return step


# --- per-op overhead ---------------------------------------------------------------------------
def op_chain(place, n_ops=200):
    """A chain of ``n_ops`` scale ops on a [64, 64] tensor: (seconds per op, a step)."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[64], dtype="float32")
        y = x
        for _ in range(n_ops):
            y = fluid.layers.scale(y, scale=1.0001)
    exe, scope = fluid.Executor(place), fluid.Scope()
    feed = {"x": np.ones((64, 64), "float32")}
    return lambda: exe.run(main, feed=feed, fetch_list=[y], scope=scope)[0]


# --- transfers -----------------------------------------------------------------------------------
def transfers_per_step():
    """Host transfers of one W2 step and one W3 batch on the strict device (after a first
    run, which initialises parameters and builds the plan)."""
    from fluid_nb.testing.strict_device import StrictDevicePlace, counting
    place = StrictDevicePlace()
    rng = np.random.RandomState(1)
    x = rng.uniform(-1, 1, (64, 784)).astype("float32")
    label = rng.randint(0, 10, (64, 1)).astype("int64")
    data, lengths = make_batch()
    counts = {}
    for name, step in [("W2 step", w2_fluid(x, label, place)),
                       ("W3 batch (hidden 128)",
                        w3_fluid(place, data, lengths, *rnn_params(128)))]:
        step()
        with counting() as count:
            step()
        counts[name] = count
        print(f"  {name:24s} to the device {count['to_device']}, to the host "
              f"{count['to_host']}, {count['bytes']:,} bytes")
    return counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--place", choices=("cuda", "strict"), default=None,
                        help="cuda (default where CuPy sees a GPU) or strict")
    args = parser.parse_args(argv)
    use_cuda = args.place == "cuda" or (args.place is None and fluid.is_compiled_with_cuda())
    print("host transfers per step (strict device: feeds in, fetches out, and the copies the "
          "ops' meaning needs)")
    transfers_per_step()
    if use_cuda:
        import cupy as xp
        place = fluid.CUDAPlace(0)
        device = xp.cuda.runtime.getDeviceProperties(0)["name"].decode()
        torch = torch_or_none()
        if torch is not None and not torch.cuda.is_available():
            torch = None
    else:
        from fluid_nb.testing.strict_device import StrictDevicePlace, xp
        place, device, torch = StrictDevicePlace(), "the strict device (NumPy; times mean nothing)", None
    print(f"device: {device}")
    rng = np.random.RandomState(1)
    for batch in (64, 1024):
        x = rng.uniform(-1, 1, (batch, 784)).astype("float32")
        label = rng.randint(0, 10, (batch, 1)).astype("int64")
        steps = {"fluid_nb": w2_fluid(x, label, place), "CuPy by hand": w2_by_hand(xp, x, label)}
        if torch is not None:
            steps["PyTorch CUDA eager"] = w2_torch(torch, x, label)
        _report(f"W2 MLP step, batch {batch}, Adam", steps, "µs/step", 1e6)
    data, lengths = make_batch()
    for hidden in (128, 512):
        params = rnn_params(hidden)
        ours, by_hand = w3_fluid(place, data, lengths, *params), w3_by_hand(xp, data, lengths, *params)
        np.testing.assert_allclose(np.asarray(ours()).reshape(-1)[0], by_hand(), rtol=1e-4)
        steps = {"fluid_nb": ours, "CuPy by hand": by_hand}
        if torch is not None:
            steps["PyTorch CUDA eager"] = w3_torch(torch, data, lengths, *params)
        _report(f"W3 DynamicRNN batch, hidden {hidden}", steps, "ms/batch", 1e3, number=5)
    chain = op_chain(place)
    chain()
    seconds = interleaved_best({"chain": chain}, rounds=5, number=5)["chain"]
    print(f"per-op overhead on the device: {seconds / 200 * 1e6:.1f} µs/op "
          f"(a chain of 200 scale ops on [64, 64])")


def _report(title, steps, unit, scale, number=20):
    print(title)
    for step in steps.values():
        for _ in range(3):
            step()
    times = interleaved_best(steps, rounds=7, number=number)
    base = times["CuPy by hand"]
    for label, seconds in times.items():
        row(f"  {label}", seconds * scale, unit, base * scale, "CuPy by hand")


if __name__ == "__main__":
    main()
