"""The headless demo: fit a line on UCI housing, print the program and the losses, and write
an HTML page with the interactive program graph.

It is the first chapter of the PaddlePaddle book (``examples/fit_a_line.py``): one fully
connected layer from 13 features to a price, squared error, SGD. ``fluid-nb demo`` runs it::

    from fluid_nb.cli.demo import run_demo
    result = run_demo("fit_a_line.html", steps=50)
    result["losses"][-1] < result["losses"][0]   # True: it learns
"""
import os
import time

import numpy as np

BATCH_SIZE = 20
LEARNING_RATE = 0.01


def build_fit_a_line(seed=90):
    """The fit_a_line main and startup programs; returns ``(main, startup, [x, y], loss)``.

    The main program holds the forward ops, the backward ops and the SGD updates."""
    import fluid_nb as fluid
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[13], dtype="float32")
        y = fluid.layers.data(name="y", shape=[1], dtype="float32")
        y_predict = fluid.layers.fc(input=x, size=1, act=None)
        cost = fluid.layers.square_error_cost(input=y_predict, label=y)
        loss = fluid.layers.mean(cost)
        fluid.optimizer.SGD(learning_rate=LEARNING_RATE).minimize(loss)
    return main, startup, [x, y], loss


def train(main, startup, feed_vars, loss, steps, progress=False, seed=90):
    """Run ``steps`` SGD steps over shuffled UCI housing batches (cycling through epochs);
    return the loss of each step. ``progress`` shows a progress bar (on stderr) with the
    current loss."""
    import fluid_nb as fluid
    rng = np.random.default_rng(seed)
    data = fluid.dataset.uci_housing.load_data()[0]
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    losses = []
    order, cursor = rng.permutation(len(data)), 0
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=steps, desc="fit_a_line", unit="step", leave=False)
    for step in range(steps):
        if cursor + BATCH_SIZE > len(order):
            order, cursor = rng.permutation(len(data)), 0
        batch = data[order[cursor:cursor + BATCH_SIZE]]
        cursor += BATCH_SIZE
        value, = exe.run(main, feed={feed_vars[0].name: batch[:, :-1],
                                     feed_vars[1].name: batch[:, -1:]},
                         fetch_list=[loss], scope=scope)
        losses.append(float(np.asarray(value).reshape(-1)[0]))
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{losses[-1]:.4f}", refresh=False)
    if bar is not None:
        bar.close()
    return losses


def run_demo(out="fluid_nb_demo.html", steps=100, log=print, progress=False):
    """Build fit_a_line, log its listing, train ``steps`` steps (with a progress bar when
    ``progress``), log a summary of the losses, and write the program's interactive graph
    page to ``out``.

    Returns ``{"path": out, "losses": [...], "listing": text}``. Raises NotFound (before
    training) when the front-end viewer bundle is not built."""
    from ..viz import html_page, program_listing, program_model
    from ..viz.html_page import viewer_js
    viewer_js()  # fail early, before the training, when the page cannot be written
    main, startup, feed_vars, loss = build_fit_a_line()
    listing = program_listing(main)
    log("fit_a_line: the main program (forward, backward and SGD ops)")
    log(listing)
    started = time.perf_counter()
    losses = train(main, startup, feed_vars, loss, steps, progress=progress)
    seconds = time.perf_counter() - started
    low = int(np.argmin(losses))
    log(f"trained {steps} SGD steps (batch {BATCH_SIZE}) in {seconds:.2f} s: loss "
        f"{losses[0]:.4f} at step 0 -> {losses[-1]:.4f} at step {steps - 1} "
        f"(lowest {losses[low]:.4f} at step {low})")
    page = html_page(program_model(main, title="fit_a_line"), "fit_a_line: main program")
    folder = os.path.dirname(os.path.abspath(out))
    os.makedirs(folder, exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write(page)
    log(f"wrote {os.path.abspath(out)} ({len(page)} bytes): open it in a browser for the "
        f"program graph")
    return {"path": out, "losses": losses, "listing": listing}
