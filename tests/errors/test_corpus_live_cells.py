"""Bad-input corpus, live cells: a failing cell (a ``with fluid.live(...)`` block) after
feeds, after minimize and after an earlier failure restores the session exactly (programs,
scope values, data samples) and its error reaches the user."""
import itertools
import random

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.live import feed, live, live_session

from .corpus import Case, check, state_of

L = fluid.layers
X = np.arange(6, dtype="float32").reshape(2, 3)
_names = itertools.count()


class _Session:
    """A live session with a small net, optionally fed again and minimized."""

    def __init__(self, refeed, minimize):
        self.name = f"corpus_live_{next(_names)}"
        with live(self.name) as s:
            self.x = L.data(name="x", shape=[3], dtype="float32", value=X)
            self.h = L.fc(self.x, size=4)
            loss = L.mean(self.h)
            if minimize:
                fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
        self.session = s
        if refeed:
            feed(self.x, X * 2)
        self.snapshot = state_of(s.program, s.startup_program, scope=s.scope)

    def state(self):
        return self.snapshot(), np.asarray(self.x._sample_value).tobytes()

    def cell(self, body):
        def act():
            with live(self.name):
                body(self)
        return act


FAILING_BODIES = {
    "bad_fc_size": lambda c: L.fc(c.x, size="a"),
    "bad_act": lambda c: L.fc(c.x, size=2, act="nope"),
    "shape_mismatch": lambda c: L.elementwise_add(L.fc(c.x, size=5), c.h),
    "feed_then_bad_layer": lambda c: (feed(c.x, X * 3), L.scale(c.x, scale="s")),
    "feed_ragged": lambda c: feed(c.x, [[1.0, 2.0], [3.0]]),
    "feed_wrong_dtype_then_layer": lambda c: (feed(c.x, X + 1), L.dropout(c.x, 2.0)),
    "new_params_then_bad_clip": lambda c: (L.fc(c.h, size=3), L.clip(c.h, "a", 1.0)),
    "feed_none": lambda c: feed(c.x, None),
}


def _live_cases():
    rng = random.Random(3)
    for refeed, minimize in itertools.product([False, True], [False, True]):
        for name, body in FAILING_BODIES.items():
            env = _Session(refeed, minimize)
            label = f"{'fed' if refeed else 'sampled'}_{'trained' if minimize else 'plain'}"
            yield Case("live_cells", f"{label}:{name}", env.cell(body), env.state, True)
    for i in range(8):  # a failure after a failure: each restores the state before it
        env = _Session(rng.random() < 0.5, rng.random() < 0.5)
        first, second = rng.sample(sorted(FAILING_BODIES), 2)

        def twice(env=env, first=first, second=second):
            try:
                env.cell(FAILING_BODIES[first])()
            except fluid.errors.FluidError:
                pass
            env.cell(FAILING_BODIES[second])()
        yield Case("live_cells", f"after_failure_{i}:{first}+{second}", twice, env.state, True)


CASES = list(_live_cases())


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_live_cell_corpus(case):
    check(case)


def test_failing_cell_after_feed_restores_values_and_raises_the_users_error():
    env = _Session(refeed=True, minimize=False)
    before = env.h.numpy().copy()

    def body(c):
        feed(c.x, X * 5)
        raise ZeroDivisionError("the user's own mistake")
    with pytest.raises(ZeroDivisionError, match="the user's own mistake"):
        env.cell(body)()
    np.testing.assert_array_equal(env.h.numpy(), before)
    np.testing.assert_array_equal(env.x._sample_value, X * 2)
    np.testing.assert_array_equal(np.asarray(live_session(env.name).scope.find_var("x").value),
                                  X * 2)
