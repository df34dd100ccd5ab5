"""Write notebooks/08_memory.ipynb (the host memory arena, explained on itself) from the cell
list below, the way ``tools/make_notebooks.py`` writes 02-04: no outputs, fixed cell ids::

    python tools/make_memory_notebook.py            # (re)write it
    python tools/make_memory_notebook.py --check    # exit 1 if the stored notebook differs
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_notebooks  # noqa: E402  (the cell format all the notebook generators share)

NAME = "08_memory.ipynb"

CELLS = [
    ("md", """\
# Memory: the arena tensors live in

Paddle's developer guide describes its CPU allocator as a **buddy allocator** over big chunks:
`Alloc(place, size)` rounds the request up to a power of two, takes the smallest free block that
fits and **splits** it into halves ("buddies") until it is the right size; `Free` gives the block
back and **merges** it with its buddy whenever the buddy is free too, so the chunk ends up whole
again. fluid_nb keeps every tensor of a run (and of a live cell) in such an arena; NumPy
allocates from it while fluid_nb runs. `fluid.memory` reads it and `MemoryView` draws it."""),
    ("code", "setup", """\
import gc

import numpy as np
import fluid_nb as fluid
from fluid_nb.widgets import MemoryView

# 16 MiB chunks instead of the default 256 MiB: the same allocator, easier to look at
fluid.set_flags({'FLAGS_initial_cpu_memory_in_mb': 17})
place = fluid.CPUPlace()
stats = fluid.memory.stats(place)
print('chunk size:', stats['chunk_size'], 'smallest block:', stats['min_block'])
print('used:', fluid.memory.used(place), 'chunks:', stats['chunks'])"""),
    ("md", """\
## Alloc: splitting

Three requests: 1,000 bytes (a 1 KiB block), 3,000 bytes (4 KiB) and 200 bytes (the smallest
block, 256 bytes). The first request splits the whole chunk in halves again and again down to
1 KiB; the next ones take the free buddies that splitting left. The event log says so."""),
    ("code", "alloc", """\
fluid.memory.record_events(place)
a = fluid.memory.alloc(place, 1000)
b = fluid.memory.alloc(place, 3000)
c = fluid.memory.alloc(place, 200)
events = fluid.memory.events(place)
print('splits:', sum(e.kind == 'split' for e in events),
      'allocs:', [(e.requested, e.size) for e in events if e.kind == 'alloc'])
print('used:', fluid.memory.used(place))
print('blocks in the first 16 KiB (offset, size, state):')
for chunk, offset, size, state in fluid.memory.blocks(place):
    if offset < 16384:
        print(f'  {offset:6d} {size:6d} {state}')"""),
    ("code", "alloc-view", "MemoryView(place, title='three blocks')"),
    ("md", """\
## Free: merging

Freeing the three blocks merges each with its buddy as soon as both are free, up the sizes,
until the chunk is one free block again: no fragmentation left."""),
    ("code", "free", """\
for address in (a, b, c):
    fluid.memory.free(place, address)
events = fluid.memory.events(place)
fluid.memory.record_events(place, False)
print('frees:', sum(e.kind == 'free' for e in events),
      'merges:', sum(e.kind == 'merge' for e in events))
print('blocks:', fluid.memory.blocks(place))
stats = fluid.memory.stats(place)
print('used:', stats['used'], 'largest free:', stats['largest_free'],
      'fragmentation:', stats['fragmentation'])"""),
    ("md", """\
## A training step's memory

The MLP of the recognize-digits chapter (784-200-200-10, softmax), trained with Adam on a batch
of 64. `view.record(...)` turns the event log on for one run and draws the used bytes op by op;
the red dot is the peak. Hover an op in the widget to see the variables alive after it. The
block map shows where the parameters and Adam's two moments per parameter ended up."""),
    ("code", "mlp", """\
def mlp(optimize=False):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        image = fluid.data('image', [None, 784], 'float32')
        label = fluid.data('label', [None, 1], 'int64')
        hidden = fluid.layers.fc(image, 200, act='relu')
        hidden = fluid.layers.fc(hidden, 200, act='relu')
        prediction = fluid.layers.fc(hidden, 10, act='softmax')
        loss = fluid.layers.mean(fluid.layers.cross_entropy(prediction, label))
        fluid.optimizer.Adam(0.001).minimize(loss)
    if optimize:
        fluid.memory_optimize(main)
    return main, startup, loss

rng = np.random.RandomState(0)
feed = {'image': rng.rand(64, 784).astype('float32'),
        'label': rng.randint(0, 10, (64, 1)).astype('int64')}

def training_step(optimize=False):
    \"\"\"A fresh MLP: one step to warm up, then one step recorded by a MemoryView.\"\"\"
    main, startup, loss = mlp(optimize)
    scope, exe = fluid.Scope(), fluid.Executor(place)
    exe.run(startup, scope=scope)
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    gc.collect()  # free earlier programs now, not in the middle of the recorded step
    view = MemoryView(place, scope, title='MLP 784-200-200-10, Adam, batch 64')
    view.record(exe.run, main, feed=feed, fetch_list=[loss], scope=scope)
    return view, main, scope

view, main, scope = training_step()
line = view.timeline
print('ops recorded:', len(line['points']), 'events:', line['events'])
print('before the step:', line['start'], 'after:', line['end'])
print('peak:', view.peak, 'during', view.peak_op)
print('the step needs at most', view.peak - line['start'], 'bytes more than it starts with')
view"""),
    ("md", """\
The cell below prints the op during which the step peaked and the named variables alive after
it. The table lists every variable the step allocated, with the op that did it, and the
parameters and optimizer state that the arena holds for the scope (the 784×200 weight and its
moments are 627,200 bytes each, in 1 MiB blocks)."""),
    ("code", "peak", """\
point = line['points'][line['peak']['index']]
print('alive after', point['label'], ':', point['alive_count'], 'named variables')
for name, size in point['alive'][:6]:
    print(f'  {name:24} {size:>8}')
for row in view._model['variables'][:4]:
    print(row['name'], row['bytes'], row['block'], row['op'])"""),
    ("md", """\
## Eager deletion and `memory_optimize`

The executor frees each temporary right after its last use (Paddle's eager deletion,
`FLAGS_eager_delete_tensor_gb = 0.0`, the default). Below 0 it keeps a run's temporaries to the
end of the run. Fluid 1.x's `memory_optimize` transpiler instead renames a later temporary to
a dead one's name so that both share one variable. Here are the step's peaks (above what it
starts with) for the four combinations:"""),
    ("code", "compare", """\
def step_peak(optimize):
    \"\"\"The bytes a fresh MLP's second training step needs above what it starts with, read
    from the event log directly (the numbers MemoryView draws).\"\"\"
    program, startup, loss = mlp(optimize)
    step_scope, exe = fluid.Scope(), fluid.Executor(place)
    exe.run(startup, scope=step_scope)
    exe.run(program, feed=feed, fetch_list=[loss], scope=step_scope)
    gc.collect()  # free earlier programs now, not in the middle of the measured step
    start = fluid.memory.used(place)
    fluid.memory.events(place)  # drop older events
    fluid.memory.record_events(place)
    exe.run(program, feed=feed, fetch_list=[loss], scope=step_scope)
    fluid.memory.record_events(place, False)
    return max(e.used for e in fluid.memory.events(place)) - start, program

peaks = {}
for keep in (0.0, -1.0):
    fluid.set_flags({'FLAGS_eager_delete_tensor_gb': keep})
    for optimize in (False, True):
        extra, program = step_peak(optimize)
        reused = len(getattr(program, '_memory_optimize_log', []) or [])
        peaks[keep, optimize] = extra
        print(f'eager_delete_tensor_gb={keep:4}  memory_optimize={optimize!s:5}  '
              f'peak +{extra:>9,} bytes  ({reused} reuses)')
fluid.set_flags({'FLAGS_eager_delete_tensor_gb': 0.0})
print('keeping temporaries costs', peaks[-1.0, False] - peaks[0.0, False], 'bytes at the peak')"""),
    ("md", """\
Eager deletion already frees each value after its last use, so renaming has the most room
where values are kept to the end of the run."""),
    ("md", """\
## A DynamicRNN's step scopes

A `while` loop (here a `DynamicRNN` over sequences of 10, 8, 5 and 7 steps, trained with SGD)
keeps each iteration's values in a step scope, because `while_grad` reads them backwards.
During the run the timeline climbs through the forward loop (block 1) as the step scopes fill,
and falls through the backward loop (block 2) as `while_grad` releases them; after the run
the arena holds the parameters only, as before it."""),
    ("code", "rnn", """\
LENGTHS = [10, 8, 5, 7]
rnn_main, rnn_startup = fluid.Program(), fluid.Program()
with fluid.program_guard(rnn_main, rnn_startup), fluid.unique_name.guard():
    x = fluid.layers.data('x', [32], dtype='float32', lod_level=1)
    rnn = fluid.layers.DynamicRNN()
    with rnn.block():
        word = rnn.step_input(x)
        state = rnn.memory(shape=[64], value=0.0)
        new_state = fluid.layers.fc(input=[word, state], size=64, act='tanh')
        rnn.update_memory(state, new_state)
        rnn.output(new_state)
    last = fluid.layers.sequence_last_step(rnn())
    rnn_loss = fluid.layers.mean(fluid.layers.fc(last, 1))
    fluid.optimizer.SGD(0.1).minimize(rnn_loss)
rnn_scope, exe = fluid.Scope(), fluid.Executor(place)
exe.run(rnn_startup, scope=rnn_scope)
rows = sum(LENGTHS)
rnn_feed = {'x': fluid.create_lod_tensor(
    np.random.RandomState(1).rand(rows, 32).astype('float32'), [LENGTHS], place)}
exe.run(rnn_main, feed=rnn_feed, fetch_list=[rnn_loss], scope=rnn_scope)
gc.collect()
rnn_view = MemoryView(place, rnn_scope, title='DynamicRNN, lengths 10, 8, 5, 7')
rnn_view.record(exe.run, rnn_main, feed=rnn_feed, fetch_list=[rnn_loss], scope=rnn_scope)
points = rnn_view.timeline['points']
forward = [p for p in points if p['op'] and p['op'][1] == 1]
backward = [p for p in points if p['op'] and p['op'][1] == 2]
print('ops run in the forward loop:', len(forward), 'in the backward loop:', len(backward))
end_of_forward = points.index(forward[-1])
print('used: before', rnn_view.timeline['start'], 'end of the forward loop',
      points[end_of_forward]['used'], 'after', rnn_view.timeline['end'])
print('peak', rnn_view.peak, 'during', rnn_view.peak_op)
rnn_view"""),
]


def text():
    """The notebook file's text."""
    return make_notebooks.text_of(make_notebooks.build(CELLS))


def main(argv=None):
    return make_notebooks.write_or_check(NAME, CELLS, argv, __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
