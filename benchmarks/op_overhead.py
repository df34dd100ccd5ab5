"""Executor overhead: one run of a 1,000-op elementwise_add chain, per op, against NumPy.

    python benchmarks/op_overhead.py

Prints µs per op for 1x1 and 64x64 float32 chains through ``Executor.run``, NumPy's
``np.add`` per op in the same process (and PyTorch eager where installed), and the fixed
cost of ``run`` on a one-op program.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fluid_nb as fluid  # noqa: E402
from _timing import best_time, row, torch_or_none  # noqa: E402

N_OPS = 1000


def chain_program(n_ops, shape):
    program = fluid.Program()
    block = program.global_block()
    block.create_var(name="x0", shape=(-1,) + shape[1:], dtype="float32")
    block.create_var(name="y", shape=shape, dtype="float32", persistable=True)
    for i in range(n_ops):
        block.append_op(type="elementwise_add", inputs={"X": f"x{i}", "Y": "y"},
                        outputs={"Out": f"x{i + 1}"})
    return program


def main():
    torch = torch_or_none()
    print(f"fluid_nb executor overhead, {N_OPS}-op elementwise_add chain, float32")
    results = {}
    for shape in [(1, 1), (64, 64)]:
        program = chain_program(N_OPS, shape)
        scope = fluid.Scope()
        y = np.full(shape, 0.5, "float32")
        scope.var("y").get_tensor().set(y)
        x = np.ones(shape, "float32")
        exe = fluid.Executor(fluid.CPUPlace())
        feed = {"x0": x}
        fetch = [f"x{N_OPS}"]
        exe.run(program, feed=feed, fetch_list=fetch, scope=scope)  # plan once

        t_fluid = best_time(lambda: exe.run(program, feed=feed, fetch_list=fetch, scope=scope),
                            repeat=9) / N_OPS

        def numpy_chain():
            v = x
            for _ in range(N_OPS):
                v = np.add(v, y)
            return v
        t_numpy = best_time(numpy_chain, repeat=9) / N_OPS
        label = "x".join(map(str, shape))
        row(f"fluid_nb Executor.run, {label}", t_fluid * 1e6, "µs/op", t_numpy * 1e6, "NumPy")
        row(f"NumPy np.add, {label}", t_numpy * 1e6, "µs/op")
        if torch is not None:
            tx, ty = torch.from_numpy(x), torch.from_numpy(y)

            def torch_chain():
                v = tx
                for _ in range(N_OPS):
                    v = torch.add(v, ty)
                return v
            t_torch = best_time(torch_chain, repeat=9) / N_OPS
            row(f"PyTorch eager torch.add, {label}", t_torch * 1e6, "µs/op", t_numpy * 1e6, "NumPy")
        results[label] = (t_fluid, t_numpy)

    program = chain_program(1, (1, 1))
    scope = fluid.Scope()
    scope.var("y").get_tensor().set(np.ones((1, 1), "float32"))
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {"x0": np.ones((1, 1), "float32")}
    exe.run(program, feed=feed, fetch_list=["x1"], scope=scope)
    t_one = best_time(lambda: exe.run(program, feed=feed, fetch_list=["x1"], scope=scope),
                      repeat=9, number=200)
    row("fixed cost of Executor.run (1-op program)", t_one * 1e6, "µs/run")
    ratio = results["1x1"][0] / results["1x1"][1]
    print(f"\n1x1 chain: {ratio:.2f}x NumPy per op (target <= 7x); run fixed cost "
          f"{t_one * 1e6:.1f} µs (target < 30 µs)")


if __name__ == "__main__":
    main()
