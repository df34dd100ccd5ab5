"""Training-step speed in steady state, against hand-written NumPy and PyTorch eager.

    python benchmarks/train_step.py

W1: fit_a_line, fc 13 -> 1, square error, batch 20, SGD.
W2: MLP 784-200-200-10 (relu), softmax cross-entropy, batch 64, Adam.
CNN: conv 3x3 3 -> 16 (padding 1, relu), max pool 2, conv 3x3 16 -> 32, max pool 2, fc 10,
softmax cross-entropy, batch 32 of 3x32x32 (CIFAR-10's images), SGD.
Each fluid_nb step is one ``Executor.run(main, feed, fetch_list=[loss])``. Then the feed a
book script's loop makes of each minibatch (``fluid.DataFeeder``) against NumPy by hand, from
samples as the book's readers yield them: ``uci_housing``'s float64 rows for W1's float32
layers, MNIST's float32 images and int labels for W2's; and W1's and W2's whole epochs as
the book's loop runs them (the reader decorators, the feed and the step; W2's over IDX
files of MNIST's size).
"""
import itertools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fluid_nb as fluid  # noqa: E402
from _timing import interleaved_best, row, torch_or_none  # noqa: E402


# --- W1 -----------------------------------------------------------------------------------
def w1_program():
    """W1's layers (inside a program_guard): returns the loss."""
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    predict = fluid.layers.fc(input=x, size=1)
    loss = fluid.layers.mean(fluid.layers.square_error_cost(input=predict, label=y))
    fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return loss


def fluid_step(build, feed, place=None):
    """One ``Executor.run`` of the training program ``build`` makes, on ``place``, after
    its startup program: a step fetching the loss."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = build()
    exe = fluid.Executor(place or fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return lambda: exe.run(main, feed=feed, fetch_list=[loss], scope=scope)


def fed_step(build, feed_names):
    """``step(samples)``: ``DataFeeder.feed`` of a reader's minibatch, then one
    ``Executor.run`` of the training program ``build`` makes (after its startup program),
    fetching the loss: a step as a book's loop runs it."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = build()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    feeder = fluid.DataFeeder(feed_names, fluid.CPUPlace(), program=main)
    return lambda samples: exe.run(main, feed=feeder.feed(samples), fetch_list=[loss],
                                   scope=scope)


def w1_fluid(x, y):
    return fluid_step(w1_program, {"x": x, "y": y})


def w1_numpy(x, y):
    step_on = w1_numpy_step()
    return lambda: step_on(x, y)


def w1_numpy_step():
    """W1's step by hand on a batch: ``step(x, y) -> loss``."""
    rng = np.random.RandomState(0)
    w = rng.uniform(-0.5, 0.5, (13, 1)).astype("float32")
    b = np.zeros(1, "float32")
    lr = np.float32(0.01)

    def step(x, y):
        nonlocal w, b
        pred = x @ w + b
        diff = pred - y
        loss = np.mean(diff * diff)
        dpred = (2.0 / diff.size) * diff
        w = w - lr * (x.T @ dpred)
        b = b - lr * dpred.sum(axis=0)
        return loss
    return step


def w1_torch(torch, x, y, compiled=False):
    """W1's PyTorch eager step (``compiled``: its model through ``torch.compile``)."""
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    model = torch.nn.Linear(13, 1)
    if compiled:
        model = torch.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        loss = ((model(tx) - ty) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    return step


# --- W2 -----------------------------------------------------------------------------------
def w2_program(update="adam"):
    """W2's layers (inside a program_guard) and their ``update`` ('adam', 'sgd', or None:
    the gradients alone): returns the loss."""
    img = fluid.layers.data(name="img", shape=[784], dtype="float32")
    lab = fluid.layers.data(name="label", shape=[1], dtype="int64")
    h = fluid.layers.fc(input=img, size=200, act="relu")
    h = fluid.layers.fc(input=h, size=200, act="relu")
    logits = fluid.layers.fc(input=h, size=10)
    loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, lab))
    if update is None:
        fluid.backward.append_backward(loss)
    else:
        optimizer = {"adam": fluid.optimizer.Adam, "sgd": fluid.optimizer.SGD}[update]
        optimizer(learning_rate=0.001).minimize(loss)
    return loss


def w2_fluid(x, label, place=None):
    return fluid_step(w2_program, {"img": x, "label": label}, place)


def w2_by_hand(xp, x, label):
    """The W2 step written directly in the array module ``xp`` (NumPy here, CuPy in
    benchmarks/gpu.py) on one batch: the same layers, loss and Adam; the loss comes back to
    the host."""
    step, batch = w2_by_hand_step(xp), w2_batch(xp, x, label)
    return lambda: step(*batch)


def w2_batch(xp, x, label):
    """The arrays W2's step by hand takes for a batch: images, labels, row numbers and the
    labels one-hot."""
    labels = xp.asarray(label.reshape(-1))
    return xp.asarray(x), labels, xp.arange(len(labels)), xp.eye(10, dtype="float32")[labels]


def w2_by_hand_step(xp):
    """W2's step by hand: ``step(*w2_batch(xp, x, label)) -> loss``."""
    from fluid_nb.tensor.transfer import to_host
    rng = np.random.RandomState(0)
    params = []
    for fan_in, fan_out in [(784, 200), (200, 200), (200, 10)]:
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        params += [xp.asarray(rng.uniform(-limit, limit, (fan_in, fan_out)).astype("float32")),
                   xp.zeros(fan_out, "float32")]
    moments = [[xp.zeros_like(p), xp.zeros_like(p)] for p in params]
    beta1, beta2, eps, lr = 0.9, 0.999, 1e-8, 0.001
    state = {"t": 0}

    def step(x, labels, rows, onehot):
        w1, b1, w2, b2, w3, b3 = params
        h1 = xp.maximum(x @ w1 + b1, 0)
        h2 = xp.maximum(h1 @ w2 + b2, 0)
        z = h2 @ w3 + b3
        z = z - z.max(axis=1, keepdims=True)
        e = xp.exp(z)
        p = e / e.sum(axis=1, keepdims=True)
        loss = -xp.log(p[rows, labels]).mean()
        dz = (p - onehot) / len(labels)
        dh2 = (dz @ w3.T) * (h2 > 0)
        dh1 = (dh2 @ w2.T) * (h1 > 0)
        grads = [x.T @ dh1, dh1.sum(0), h1.T @ dh2, dh2.sum(0), h2.T @ dz, dz.sum(0)]
        state["t"] += 1
        t = state["t"]
        lr_t = float(lr * np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t))  # keep float32 math
        for i, g in enumerate(grads):
            m, v = moments[i]
            m *= beta1
            m += (1 - beta1) * g
            v *= beta2
            v += (1 - beta2) * g * g
            params[i] = params[i] - lr_t * m / (xp.sqrt(v) + eps)
        return to_host(loss)
    return step


def w2_numpy(x, label):
    return w2_by_hand(np, x, label)


def w2_torch(torch, x, label, compiled=False):
    """W2's PyTorch eager step (``compiled``: its model through ``torch.compile``)."""
    tx, tl = torch.from_numpy(x), torch.from_numpy(label.reshape(-1))
    model = torch.nn.Sequential(torch.nn.Linear(784, 200), torch.nn.ReLU(),
                                torch.nn.Linear(200, 200), torch.nn.ReLU(),
                                torch.nn.Linear(200, 10))
    if compiled:
        model = torch.compile(model)
    return _classifier_step(torch, model, torch.optim.Adam(model.parameters(), lr=0.001), tx,
                            tl)


def _classifier_step(torch, model, opt, tx, tl):
    """A PyTorch eager step of ``model`` on inputs ``tx``, labels ``tl`` (cross-entropy)."""
    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(tx), tl)
        loss.backward()
        opt.step()
        return loss
    return step


# --- CNN ----------------------------------------------------------------------------------
def cnn_program():
    """The small CNN's layers (inside a program_guard): returns the loss."""
    img = fluid.data(name="img", shape=[None, 3, 32, 32], dtype="float32")
    label = fluid.data(name="label", shape=[None, 1], dtype="int64")
    c = fluid.layers.conv2d(img, 16, 3, padding=1, act="relu")
    c = fluid.layers.pool2d(c, 2, pool_stride=2)
    c = fluid.layers.conv2d(c, 32, 3, padding=1, act="relu")
    c = fluid.layers.pool2d(c, 2, pool_stride=2)
    loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(fluid.layers.fc(c, 10),
                                                                     label))
    fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return loss


def cnn_fluid(x, label):
    return fluid_step(cnn_program, {"img": x, "label": label})


def cnn_numpy(x, label):
    """The CNN step by hand: each convolution one product over the batch's columns (nine
    slices of the padded input), each max pool's gradient to its window's maximum (a tie
    is a window of zeros after relu, whose gradient the relu stops anyway)."""
    rng = np.random.RandomState(0)
    params = [rng.uniform(-0.3, 0.3, (16, 3, 3, 3)).astype("float32"),
              np.zeros(16, "float32"),
              rng.uniform(-0.1, 0.1, (32, 16, 3, 3)).astype("float32"),
              np.zeros(32, "float32"),
              rng.uniform(-0.05, 0.05, (32 * 8 * 8, 10)).astype("float32"),
              np.zeros(10, "float32")]
    labels, n = label.reshape(-1), len(label)
    onehot = np.eye(10, dtype="float32")[labels]

    def conv(x, w, b):  # 3x3, padding 1, stride 1, then relu
        (c, h, wd), m = x.shape[1:], w.shape[0]
        padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))).transpose(1, 0, 2, 3)
        cols = np.empty((c, 3, 3, n, h, wd), "float32")
        for i in range(3):
            for j in range(3):
                cols[:, i, j] = padded[:, :, i:i + h, j:j + wd]
        cols = cols.reshape(c * 9, -1)
        out = (w.reshape(m, -1) @ cols).reshape(m, n, h, wd).transpose(1, 0, 2, 3)
        return np.maximum(out + b.reshape(1, m, 1, 1), 0), cols

    def conv_grad(dout, cols, w, shape):
        m, (c, h, wd) = w.shape[0], shape[1:]
        d = dout.transpose(1, 0, 2, 3).reshape(m, -1)
        dcols = (w.reshape(m, -1).T @ d).reshape(c, 3, 3, n, h, wd)
        padded = np.zeros((c, n, h + 2, wd + 2), "float32")
        for i in range(3):
            for j in range(3):
                padded[:, :, i:i + h, j:j + wd] += dcols[:, i, j]
        return (padded[:, :, 1:-1, 1:-1].transpose(1, 0, 2, 3),
                (d @ cols.T).reshape(w.shape), d.sum(axis=1))

    def pool(y):  # 2x2, stride 2: the larger of its four strided quarters
        quarters = [y[:, :, i::2, j::2] for i in (0, 1) for j in (0, 1)]
        return np.maximum(np.maximum(quarters[0], quarters[1]),
                          np.maximum(quarters[2], quarters[3])), quarters

    def pool_grad(dout, out, quarters):
        grad = np.empty(dout.shape[:2] + (2 * dout.shape[2], 2 * dout.shape[3]), "float32")
        for k, quarter in enumerate(quarters):
            np.multiply(dout, quarter == out, out=grad[:, :, k // 2::2, k % 2::2])
        return grad

    def step():
        w1, b1, w2, b2, w3, b3 = params
        y1, cols1 = conv(x, w1, b1)
        p1, quarters1 = pool(y1)
        y2, cols2 = conv(p1, w2, b2)
        p2, quarters2 = pool(y2)
        flat = p2.reshape(n, -1)
        z = flat @ w3 + b3
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        prob = e / e.sum(axis=1, keepdims=True)
        loss = -np.log(prob[np.arange(n), labels]).mean()
        dz = (prob - onehot) / n
        dp2 = (dz @ w3.T).reshape(p2.shape)
        dy2 = pool_grad(dp2, p2, quarters2) * (y2 > 0)
        dp1, dw2, db2 = conv_grad(dy2, cols2, w2, p1.shape)
        dy1 = pool_grad(dp1, p1, quarters1) * (y1 > 0)
        _, dw1, db1 = conv_grad(dy1, cols1, w1, x.shape)
        grads = [dw1, db1, dw2, db2, flat.T @ dz, dz.sum(axis=0)]
        for i, g in enumerate(grads):
            params[i] = params[i] - np.float32(0.01) * g
        return loss
    return step


def cnn_torch(torch, x, label):
    """The CNN's PyTorch eager step."""
    tx, tl = torch.from_numpy(x), torch.from_numpy(label.reshape(-1))
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
    return _classifier_step(torch, model, torch.optim.SGD(model.parameters(), lr=0.01), tx, tl)


def main():
    torch = torch_or_none()
    rng = np.random.RandomState(1)
    results = {}
    for name, make_fluid, make_numpy, make_torch, data, number in [
        ("W1 fit_a_line step (13->1, batch 20, SGD)", w1_fluid, w1_numpy, w1_torch,
         (rng.uniform(-1, 1, (20, 13)).astype("float32"),
          rng.uniform(-1, 1, (20, 1)).astype("float32")), 200),
        ("W2 MLP step (784-200-200-10, batch 64, Adam)", w2_fluid, w2_numpy, w2_torch,
         (rng.uniform(-1, 1, (64, 784)).astype("float32"),
          rng.randint(0, 10, (64, 1)).astype("int64")), 20),
        ("CNN step (conv 16, pool, conv 32, pool, fc 10; batch 32 of 3x32x32, SGD)",
         cnn_fluid, cnn_numpy, cnn_torch,
         (rng.uniform(-1, 1, (32, 3, 32, 32)).astype("float32"),
          rng.randint(0, 10, (32, 1)).astype("int64")), 8),
    ]:
        print(name)
        steps = {"fluid_nb": make_fluid(*data), "NumPy (hand-written)": make_numpy(*data)}
        if torch is not None:
            steps["PyTorch eager"] = make_torch(torch, *data)
        for step in steps.values():
            for _ in range(5):
                step()
        # turns in a rotating order, each keeping its fastest round: a shared machine's
        # load moves the ratios far less than the times
        times = interleaved_best(steps, rounds=15, number=number // 4)
        reference = times["NumPy (hand-written)"]
        for label, seconds in times.items():
            row(f"  {label}", seconds * 1e6, "µs/step", reference * 1e6, "NumPy")
        results[name] = times
    results["feeding"] = feeding(rng)
    return results


def feeding(rng):
    """A minibatch as a book script's reader yields it (a list of sample tuples) turned into
    the feed: ``fluid.DataFeeder.feed`` against stacking the same samples with NumPy by
    hand, for W1's batch, W2's and a LoD batch of 32 word sequences (lengths 5-50)."""
    print("Feeding a minibatch from a reader (a list of samples)")
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.layers.data(name="x", shape=[13], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="float32")
        img = fluid.layers.data(name="img", shape=[784], dtype="float32")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        words = fluid.layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
    w1 = list(itertools.islice(fluid.dataset.uci_housing.train()(), 20))  # float64 rows
    w2 = [(rng.uniform(-1, 1, 784).astype("float32"), int(rng.randint(10))) for _ in range(64)]
    text = [(rng.randint(0, 5000, rng.randint(5, 51)).tolist(), int(rng.randint(2)))
            for _ in range(32)]
    cases = [
        ("W1 batch", fluid.DataFeeder([x, y], fluid.CPUPlace()), w1,
         lambda: (np.array([s[0] for s in w1], "float32"),
                  np.array([s[1] for s in w1], "float32"))),
        ("W2 batch", fluid.DataFeeder([img, label], fluid.CPUPlace()), w2,
         lambda: (np.array([s[0] for s in w2]),
                  np.array([s[1] for s in w2], "int64").reshape(-1, 1))),
        ("32 word sequences", fluid.DataFeeder([words, label], fluid.CPUPlace()), text,
         lambda: (np.concatenate([np.asarray(s[0], "int64") for s in text]).reshape(-1, 1),
                  np.cumsum([0] + [len(s[0]) for s in text]),
                  np.array([s[1] for s in text], "int64").reshape(-1, 1))),
    ]
    book_step = fed_step(w1_program, ["x", "y"])
    numpy_step = w1_numpy(*cases[0][3]())
    cases.append(("W1 step as the book's loop runs it", None, None, None))
    results = {}
    for label_text, feeder, batch, by_hand in cases:
        if feeder is None:  # the stacking and the step, each way
            times = interleaved_best({
                "fluid.DataFeeder + Executor.run": lambda: book_step(w1),
                "NumPy (hand-written)": lambda: (cases[0][3](), numpy_step())},
                rounds=15, number=50)
            reference = times["NumPy (hand-written)"]
            for label, seconds in times.items():
                row(f"  {label_text}: {label}", seconds * 1e6, "µs", reference * 1e6, "NumPy")
            results[label_text] = times
            continue
        times = interleaved_best({"fluid.DataFeeder": lambda: feeder.feed(batch),
                                  "NumPy (hand-written)": by_hand}, rounds=15, number=50)
        reference = times["NumPy (hand-written)"]
        for label, seconds in times.items():
            row(f"  {label_text}: {label}", seconds * 1e6, "µs", reference * 1e6, "NumPy")
        results[label_text] = times
    results["W1 epoch as the book's loop runs it"] = w1_epoch(book_step)
    results["W2 epoch as the book's loop runs it"] = w2_epoch()
    return results


def w1_epoch(book_step):
    """An epoch of fit_a_line as the book's script runs it: ``paddle.batch`` of
    ``paddle.reader.shuffle`` of ``uci_housing.train()`` (404 rows, batches of 20),
    ``DataFeeder.feed`` and ``Executor.run``; against NumPy by hand (a permutation of the
    same float64 table, each batch taken out of it as float32, then the step)."""
    train_reader = fluid.io.batch(fluid.io.shuffle(fluid.dataset.uci_housing.train(),
                                                   buf_size=500), batch_size=20)
    table = fluid.dataset.uci_housing._normalised(0.8)[0]
    rng = np.random.RandomState(0)
    numpy_step = w1_numpy_step()

    def fluid_epoch():
        for data in train_reader():
            book_step(data)

    def numpy_epoch():
        order = rng.permutation(len(table))
        for start in range(0, len(table), 20):
            rows = table[order[start:start + 20]]
            numpy_step(rows[:, :-1].astype("float32"), rows[:, -1:].astype("float32"))
    times = interleaved_best({"fluid_nb": fluid_epoch, "NumPy (hand-written)": numpy_epoch},
                             rounds=9, number=4)
    reference = times["NumPy (hand-written)"]
    print("W1 epoch as the book's loop runs it (uci_housing's 404 rows shuffled, 21 batches)")
    for label, seconds in times.items():
        row(f"  {label}", seconds * 1e6, "µs/epoch", reference * 1e6, "NumPy")
    return times


def w2_epoch(count=60000):
    """An epoch of recognize_digits' MLP as the book's script runs it: ``paddle.batch`` of
    ``paddle.reader.shuffle`` of the MNIST reader (``buf_size=500``, batches of 64) over IDX
    files of MNIST's size (``count`` made-up images, a fifth of their pixels lit),
    ``DataFeeder.feed`` and ``Executor.run``; against NumPy by hand (the images loaded once,
    each batch taken out of a permutation, then the step). The reader's first pass (the
    files' reading) is outside the timing, as NumPy's loading is."""
    import gzip
    import struct
    import tempfile
    from fluid_nb.api.dataset import mnist
    rng = np.random.RandomState(0)
    pixels = ((rng.rand(count, 784) < 0.2) * rng.randint(0, 256, (count, 784))).astype("uint8")
    labels = rng.randint(0, 10, count).astype("uint8")
    with tempfile.TemporaryDirectory() as work:
        image_file, label_file = os.path.join(work, "images.gz"), os.path.join(work, "labels.gz")
        with gzip.open(image_file, "wb", compresslevel=6) as f:
            f.write(struct.pack(">IIII", 2051, count, 28, 28) + pixels.tobytes())
        with gzip.open(label_file, "wb") as f:
            f.write(struct.pack(">II", 2049, count) + labels.tobytes())
        train_reader = fluid.io.batch(fluid.io.shuffle(
            mnist.reader_creator(image_file, label_file), buf_size=500), batch_size=64)
        book_step = fed_step(w2_program, ["img", "label"])
        images, numbers = mnist.load(image_file, label_file)
        numpy_step, order_rng = w2_by_hand_step(np), np.random.RandomState(0)

        def fluid_epoch():
            for data in train_reader():
                book_step(data)

        def numpy_epoch():
            order = order_rng.permutation(count)
            for start in range(0, count, 64):
                taken = order[start:start + 64]
                numpy_step(*w2_batch(np, images[taken], numbers[taken].astype("int64")))
        next(train_reader())
        times = interleaved_best({"fluid_nb": fluid_epoch, "NumPy (hand-written)": numpy_epoch},
                                 rounds=3, number=1)
    reference = times["NumPy (hand-written)"]
    print(f"W2 epoch as the book's loop runs it (MNIST's size: {count} images shuffled, "
          f"batches of 64)")
    for label, seconds in times.items():
        row(f"  {label}", seconds * 1e3, "ms/epoch", reference * 1e3, "NumPy")
    return times


if __name__ == "__main__":
    main()
