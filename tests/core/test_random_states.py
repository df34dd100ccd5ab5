"""Where a random op's numbers come from: a seed (the op's, or the program's advanced per
draw) gives exactly what ``np.random.RandomState(seed)`` gives, whatever was drawn before;
without one each draw goes on from a stream seeded from entropy, so draws differ from one
another, from thread to thread and from a forked process to its parent."""
import multiprocessing
import threading

import numpy as np
import pytest

import fluid_nb as fluid


def _draw_program(seed=0, program_seed=0, shape=(3, 4)):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = program_seed
    with fluid.program_guard(main, startup):
        out = fluid.layers.uniform_random(list(shape), min=-1.0, max=1.0, seed=seed)
    return main, out


def _draw(program, out, scope=None):
    exe = fluid.Executor(fluid.CPUPlace())
    return exe.run(program, fetch_list=[out], scope=scope or fluid.Scope())[0]


def _expected(seed, shape=(3, 4)):
    return np.random.RandomState(seed).uniform(-1.0, 1.0, shape).astype("float32")


def test_an_op_seed_draws_what_numpy_s_random_state_of_that_seed_draws():
    seeded = _draw_program(seed=7)
    unseeded = _draw_program()
    for _ in range(3):  # the same, run after run, whatever was drawn in between
        np.testing.assert_array_equal(_draw(*seeded), _expected(7))
        _draw(*unseeded)


def test_a_program_seed_gives_each_draw_the_next_seed_and_repeats_from_a_fresh_program():
    first = _draw(*_draw_program(program_seed=11))
    program, out = _draw_program(program_seed=11)
    scope = fluid.Scope()  # (runs in one scope: one run program, counting its draws)
    draws = [_draw(program, out, scope) for _ in range(3)]
    np.testing.assert_array_equal(draws[0], first)
    np.testing.assert_array_equal(draws[0], _expected(11 * 1000003 % 2 ** 32))
    np.testing.assert_array_equal(draws[2], _expected((11 * 1000003 + 2) % 2 ** 32))
    assert not np.array_equal(draws[0], draws[1])


def test_unseeded_draws_differ_from_each_other():
    program, out = _draw_program(shape=(64,))
    draws = [_draw(program, out) for _ in range(4)]
    assert len({d.tobytes() for d in draws}) == 4


def test_threads_drawing_at_once_each_get_their_seed_s_numbers():
    program, out = _draw_program(seed=5, shape=(200,))
    results, errors = [], []

    def work():
        try:
            for _ in range(20):
                results.append(_draw(program, out))
        except Exception as exc:  # (reported below)
            errors.append(exc)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and len(results) == 80
    for values in results:
        np.testing.assert_array_equal(values, _expected(5, (200,)))


def _child_draw(queue):
    queue.put(_draw(*_draw_program(shape=(64,))))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="needs fork")
def test_a_forked_process_does_not_draw_what_its_parent_draws():
    _draw(*_draw_program(shape=(64,)))  # the parent's stream exists before the fork
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_draw, args=(queue,))
    child.start()
    theirs = queue.get(timeout=120)
    child.join(timeout=120)
    ours = _draw(*_draw_program(shape=(64,)))
    assert child.exitcode == 0 and not np.array_equal(theirs, ours)
