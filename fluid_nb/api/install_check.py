"""``fluid.install_check.run_check()``: a one-minute check that fluid_nb works here."""
import numpy as np

__all__ = ["run_check"]


def run_check():
    """Build a small network, train it a few steps on the CPU (and on the GPU when one is
    usable), and say that the installation works; raises if a step fails."""
    from ..exec import CPUPlace, Executor, Scope
    from ..framework import Program, program_guard
    from . import layers, optimizer
    from ..tensor.place import CUDAPlace, is_compiled_with_cuda
    places = [CPUPlace()] + ([CUDAPlace(0)] if is_compiled_with_cuda() else [])
    rng = np.random.RandomState(0)
    x_value = rng.rand(8, 2).astype("float32")
    for place in places:
        main, startup = Program(), Program()
        with program_guard(main, startup):
            x = layers.data(name="x", shape=[2], dtype="float32")
            loss = layers.mean(layers.fc(input=x, size=1))
            optimizer.SGD(learning_rate=0.01).minimize(loss)
        exe, scope = Executor(place), Scope()
        exe.run(startup, scope=scope)
        for _ in range(3):
            exe.run(main, feed={"x": x_value}, fetch_list=[loss], scope=scope)
        print(f"Running verify fluid_nb program on {place} ... ok")
    print("Your fluid_nb works well on this machine. Now start deep learning with fluid_nb.")
