"""A GPU's arena: the host's buddy core over cudaMalloc, which CuPy allocates from during a
run on a CUDAPlace. Its layout follows Paddle's GPU flags; on a GPU (tests marked ``gpu``),
a training step's tensors lie in its chunks and the memory API and views read it."""
import gc

import numpy as np
import pytest

import fluid_nb as fluid
from fluid_nb.errors import InvalidArgument
from fluid_nb.memory.device import DEFAULT_CHUNK, MIN_BLOCK, device_layout

from tests.testing import test_models_on_strict_device as models

GIB = 1 << 30


@pytest.fixture
def gpu_flags():
    names = ["FLAGS_fraction_of_gpu_memory_to_use", "FLAGS_initial_gpu_memory_in_mb"]
    saved = fluid.get_flags(names)
    yield
    fluid.set_flags(saved)


def test_the_layout_follows_paddles_gpu_flags(gpu_flags):
    assert device_layout(80 * GIB) == (DEFAULT_CHUNK, int(0.92 * 80 * GIB))
    fluid.set_flags({"FLAGS_initial_gpu_memory_in_mb": 1000,
                     "FLAGS_fraction_of_gpu_memory_to_use": 0.5})
    assert device_layout(16 * GIB) == (512 << 20, 8 * GIB)  # 1000 MiB rounded down to 2**k
    fluid.set_flags({"FLAGS_initial_gpu_memory_in_mb": 4096,
                     "FLAGS_fraction_of_gpu_memory_to_use": 0.1})
    assert device_layout(8 * GIB) == (512 << 20, int(0.1 * 8 * GIB))  # no chunk past the limit
    assert MIN_BLOCK == 512


@pytest.mark.parametrize("name, value, words", [
    ("FLAGS_fraction_of_gpu_memory_to_use", 0.0, "a fraction in (0, 1]"),
    ("FLAGS_fraction_of_gpu_memory_to_use", 1.5, "a fraction in (0, 1]"),
    ("FLAGS_initial_gpu_memory_in_mb", -1, "an int >= 0"),
])
def test_bad_gpu_flags_are_named(gpu_flags, name, value, words):
    before = fluid.get_flags([name])
    with pytest.raises(InvalidArgument, match=name) as info:
        fluid.set_flags({name: value})  # refused where it is set, and left as it was
    assert words in str(info.value)
    assert fluid.get_flags([name]) == before
    device_layout(8 * GIB)


@pytest.mark.gpu
def test_a_training_steps_tensors_live_in_the_device_arena():
    import cupy
    place = fluid.CUDAPlace(0)
    rng = np.random.RandomState(0)
    feed = {"img": rng.rand(64, 784).astype("float32"),
            "label": rng.randint(0, 10, (64, 1)).astype("int64")}
    losses, _, scope = models.train(models.mlp, feed, place)
    assert losses[-1] < losses[0]
    arena = fluid.memory.arena_of(place)
    bases, size = arena.chunks(), arena.chunk_size
    weight = scope.find_var("fc_0.w_0").get_tensor().array
    assert isinstance(weight, cupy.ndarray)
    assert any(base <= weight.data.ptr < base + size for base in bases)
    assert fluid.memory.used(place) >= weight.nbytes
    names = {name for name, _ in fluid.memory.holders(place, scope)}
    assert {"fc_0.w_0", "fc_1.w_0", "fc_2.w_0"} <= names
    stats = fluid.memory.stats(place)
    assert stats["chunk_size"] == DEFAULT_CHUNK and stats["used"] <= stats["system_bytes"]


@pytest.mark.gpu
def test_blocks_go_back_when_their_arrays_die():
    place = fluid.CUDAPlace(0)
    gc.collect()  # what earlier tests left to the collector
    before = fluid.memory.used(place)
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.layers.data(name="x", shape=[1024], dtype="float32")
        y = fluid.layers.scale(x, scale=2.0)
    out, = fluid.Executor(place).run(main, feed={"x": np.ones((256, 1024), "float32")},
                                     fetch_list=[y], scope=fluid.Scope())
    assert out.shape == (256, 1024) and float(out[0, 0]) == 2.0
    gc.collect()  # the run's scope, its plan (they refer to each other) and its values go
    assert fluid.memory.used(place) == before
