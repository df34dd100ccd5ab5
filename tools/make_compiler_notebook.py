"""Write notebooks/09_compiler.ipynb (the native code generator, on the seeds' example and
the book's models) from the cell list below, the way ``tools/make_notebooks.py`` writes
02-04: no outputs, fixed cell ids::

    python tools/make_compiler_notebook.py            # (re)write it
    python tools/make_compiler_notebook.py --check    # exit 1 if the stored notebook differs
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_notebooks  # noqa: E402  (the cell format all the notebook generators share)

NAME = "09_compiler.ipynb"

CELLS = [
    ("md", """\
# The Fluid compiler: a program as native code

The design's compiler note ("Fluid: Towards a Compiled Programming Language") describes a
transpiler that takes a ProgramDesc and writes a `.cc` (or `.cu`) file in which **each op is a
function that runs its kernel** and a main calls them in order. `fluid_nb.rewriters.native` is that
generator: the interpreter stays the specification, and the compiled program is checked
against it."""),
    ("code", "seeds", """\
import time

import numpy as np
import fluid_nb as fluid
from fluid_nb.rewriters import native

# the seeds' example: X read (here: fed), W assigned, Y = mult(X, W)
program = fluid.Program()
block = program.global_block()
block.create_var(name='X', shape=[4, 3], dtype='float32')
block.create_var(name='w_init', shape=[3, 2], dtype='float32', persistable=True)
block.create_var(name='W', shape=[3, 2], dtype='float32')
block.create_var(name='Y', shape=[4, 2], dtype='float32')
block.append_op(type='assign', inputs={'X': ['w_init']}, outputs={'Out': ['W']})
block.append_op(type='mul', inputs={'X': ['X'], 'Y': ['W']}, outputs={'Out': ['Y']})
scope = fluid.Scope()
scope.var('w_init').get_tensor().set(np.arange(6, dtype='float32').reshape(3, 2))
x = np.ones((4, 3), 'float32')
source = native.generate(program, feed={'X': x}, fetch=['Y'], scope=scope)
print(source.source[source.source.index('// op 0'):])"""),
    ("md", """\
Each function takes the program's variables as one array of pointers and calls a kernel of
the runtime header (`fluid_native.h`); sizes are literals because the code is specialised on
the shapes of the feeds. `compile` builds it with the system's C++ compiler and gives a
program `Executor.run` accepts in place of the original:"""),
    ("code", "seeds-run", """\
compiled = native.compile(program, {'X': x}, ['Y'], scope=scope)
y, = fluid.Executor(fluid.CPUPlace()).run(compiled, feed={'X': x}, fetch_list=['Y'],
                                          scope=scope)
print(y)
print('equal to X @ W:', np.array_equal(y, x @ np.arange(6, dtype='float32').reshape(3, 2)))"""),
    ("md", """\
## Training compiled: fit_a_line

The forward ops, their gradients and the SGD updates all compile; the parameters stay in the
scope and the compiled `sgd` updates them in place, so one line switches the training loop."""),
    ("code", "train", """\
def fit_a_line():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name='x', shape=[13], dtype='float32')
        y = fluid.layers.data(name='y', shape=[1], dtype='float32')
        predict = fluid.layers.fc(input=x, size=1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(input=predict, label=y))
        fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return main, startup, loss

main, startup, loss = fit_a_line()
rng = np.random.RandomState(0)
feed = {'x': rng.rand(20, 13).astype('float32'), 'y': rng.rand(20, 1).astype('float32')}
exe = fluid.Executor(fluid.CPUPlace())
interpreted, native_scope = fluid.Scope(), fluid.Scope()
exe.run(startup, scope=interpreted)
exe.run(startup, scope=native_scope)
fast = native.compile(main, feed, [loss], scope=native_scope)
print('ops compiled:', len(fast.source.functions), 'fallbacks:', fast.source.fallbacks)

want = [float(exe.run(main, feed=feed, fetch_list=[loss], scope=interpreted)[0][0])
        for _ in range(50)]
got = [float(exe.run(fast, feed=feed, fetch_list=[loss], scope=native_scope)[0][0])
       for _ in range(50)]
print('loss after 1, 10, 50 steps, interpreted:', [round(want[i], 5) for i in (0, 9, 49)])
print('loss after 1, 10, 50 steps, compiled:   ', [round(got[i], 5) for i in (0, 9, 49)])
print('largest relative difference over 50 steps:',
      max(abs(a - b) / abs(a) for a, b in zip(want, got)))"""),
    ("code", "speed", """\
def per_step(program, scope, steps=2000):
    exe.run(program, feed=feed, fetch_list=[loss], scope=scope)
    start = time.perf_counter()
    for _ in range(steps):
        exe.run(program, feed=feed, fetch_list=[loss], scope=scope)
    return (time.perf_counter() - start) / steps

interpreter, compiled_step = per_step(main, interpreted), per_step(fast, native_scope)
print(f'interpreter {interpreter * 1e6:.1f} us/step, compiled {compiled_step * 1e6:.1f} us/step, '
      f'speed-up {interpreter / compiled_step:.1f}x')"""),
    ("md", """\
The compiled program's graph is the program view: click an op, and its details end with the
function generated for it (an op left to the interpreter says why)."""),
    ("code", "graph", """\
from fluid_nb.widgets import ProgramView
ProgramView(fast, title='fit_a_line, compiled')"""),
    ("md", """\
## A multi-block program: the DynamicRNN

A `while` loop compiles to a C++ loop calling its body's function; the step records that
`while_grad` reads are kept, and sizes that follow the LoD (the batch of each step, the
number of steps) are read at run time, so one build trains on batches of any LoD."""),
    ("code", "rnn", """\
def tanh_rnn():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7  # both scopes start from the same weights
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name='x', shape=[8], dtype='float32', lod_level=1)
        rnn = fluid.layers.DynamicRNN()
        with rnn.block():
            step = rnn.step_input(x)
            prev = rnn.memory(shape=[16], value=0.0)
            h = fluid.layers.fc(input=[step, prev], size=16, act='tanh')
            rnn.update_memory(prev, h)
            rnn.output(h)
        loss = fluid.layers.mean(fluid.layers.sequence_last_step(rnn()))
        fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
    return main, startup, loss

main, startup, rnn_loss = tanh_rnn()
rng = np.random.RandomState(3)
batches = []
for _ in range(5):
    lengths = rng.randint(1, 10, 6).tolist()
    rows = rng.uniform(-1, 1, (sum(lengths), 8)).astype('float32')
    batches.append({'x': fluid.create_lod_tensor(rows, [lengths], fluid.CPUPlace())})
rnn_interpreted, rnn_native = fluid.Scope(), fluid.Scope()
exe.run(startup, scope=rnn_interpreted)
exe.run(startup, scope=rnn_native)
compiled_rnn = native.compile(main, batches[0], [rnn_loss], scope=rnn_native)
print('blocks:', len(main.blocks), '· ops compiled:', len(compiled_rnn.source.functions),
      '· fallbacks:', compiled_rnn.source.fallbacks)
want = [float(exe.run(main, feed=b, fetch_list=[rnn_loss], scope=rnn_interpreted)[0][0])
        for b in batches]
got = [float(exe.run(compiled_rnn, feed=b, fetch_list=[rnn_loss], scope=rnn_native)[0][0])
       for b in batches]
print('losses over 5 batches of different LoD, one build:')
print('  interpreted', [round(v, 6) for v in want])
print('  compiled   ', [round(v, 6) for v in got])
loop = compiled_rnn.source.source
start = loop.index('while (condition(')
print(loop[loop.rfind('\\n', 0, start - 200):start + 300])"""),
    ("md", """\
## Inference: the book's LeNet

`conv2d`, `pool2d` and `batch_norm` compile for inference (NCHW); a saved inference model
compiles whole. An op the generator has no code for is named with the reason, and runs in the
interpreter between the compiled runs around it."""),
    ("code", "lenet", """\
main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = 7
with fluid.program_guard(main, startup), fluid.unique_name.guard():
    img = fluid.layers.data(name='img', shape=[1, 28, 28], dtype='float32')
    hidden = fluid.nets.simple_img_conv_pool(input=img, filter_size=5, num_filters=20,
                                             pool_size=2, pool_stride=2, act='relu')
    hidden = fluid.layers.batch_norm(hidden)
    hidden = fluid.nets.simple_img_conv_pool(input=hidden, filter_size=5, num_filters=50,
                                             pool_size=2, pool_stride=2, act='relu')
    prediction = fluid.layers.fc(input=hidden, size=10, act='softmax')
lenet_scope = fluid.Scope()
exe.run(startup, scope=lenet_scope)
test_program = main.clone(for_test=True)
images = np.random.RandomState(1).rand(16, 1, 28, 28).astype('float32')
lenet = native.compile(test_program, {'img': images}, [prediction], scope=lenet_scope)
print('ops:', [function for _, function in lenet.source.functions])
want, = exe.run(test_program, feed={'img': images}, fetch_list=[prediction], scope=lenet_scope)
got, = exe.run(lenet, feed={'img': images}, fetch_list=[prediction], scope=lenet_scope)
print('same classes:', bool((want.argmax(1) == got.argmax(1)).all()),
      'largest difference:', float(np.abs(want - got).max()))"""),
    ("code", "fallback", """\
main, startup = fluid.Program(), fluid.Program()
main.random_seed = startup.random_seed = 7
with fluid.program_guard(main, startup), fluid.unique_name.guard():
    x = fluid.layers.data(name='x', shape=[4], dtype='float32')
    y = fluid.layers.fc(input=fluid.layers.cumsum(x), size=2)
other_scope = fluid.Scope()
exe.run(startup, scope=other_scope)
ones = {'x': np.ones((3, 4), 'float32')}
report = native.generate(main, feed=ones, fetch=[y], scope=other_scope)
print('not compiled:', report.fallbacks)
print('runs:', [(kind, indices) for kind, _, indices in report.segments])
split = native.compile(main, ones, [y], scope=other_scope)  # cumsum runs in the interpreter
# (to float32's rounding of a sum: the compiled product adds in another order than NumPy's)
print("split run gives the interpreter's values:", np.allclose(
    exe.run(split, feed=ones, fetch_list=[y], scope=other_scope)[0],
    exe.run(main, feed=ones, fetch_list=[y], scope=other_scope)[0], rtol=1e-5, atol=1e-6))"""),
    ("md", """\
## The same programs as ONNX

The design's other converter: the ProgramDesc as an ONNX graph (`fluid.onnx.export`), one
converter per op type and a report row per op. onnxruntime runs the exported LeNet on the
same images:"""),
    ("code", "onnx-lenet", """\
import os
import tempfile

import onnxruntime

folder = tempfile.mkdtemp()
report = fluid.onnx.export(test_program, os.path.join(folder, 'lenet.onnx'),
                           feed=['img'], fetch=[prediction], scope=lenet_scope)
print(report)
session = onnxruntime.InferenceSession(os.path.join(folder, 'lenet.onnx'),
                                       providers=['CPUExecutionProvider'])
onnx_out, = session.run(None, {'img': images})
print('largest difference from the executor:', float(np.abs(onnx_out - want).max()))"""),
    ("md", """\
ONNX has no LoD: a sequence input is exported padded, with its lengths beside it, and the
report says so. A DynamicRNN's `while` loop becomes an ONNX `Loop` over the padded batch's
time steps (memories frozen past each sequence's end):"""),
    ("code", "onnx-lod", """\
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup), fluid.unique_name.guard():
    words = fluid.layers.data(name='words', shape=[1], dtype='int64', lod_level=1)
    emb = fluid.layers.embedding(input=words, size=[30, 8])
    hidden, _ = fluid.layers.dynamic_lstm(input=fluid.layers.fc(input=emb, size=24), size=24)
    scores = fluid.layers.fc(input=fluid.layers.sequence_pool(hidden, 'max'), size=2,
                             act='softmax')
    rnn = fluid.layers.DynamicRNN()
    with rnn.block():
        step = rnn.step_input(emb)
        memory = rnn.memory(shape=[8], value=0.0)
        new = fluid.layers.fc(input=[step, memory], size=8, act='tanh')
        rnn.update_memory(memory, new)
        rnn.output(new)
    last = fluid.layers.sequence_last_step(rnn())
text_scope = fluid.Scope()
exe.run(startup, scope=text_scope)
lstm_report = fluid.onnx.export(main, os.path.join(folder, 'text.onnx'), feed=['words'],
                                fetch=[scores], scope=text_scope)
print(lstm_report.conventions[0])
print('text classifier: all converted:', lstm_report.complete)
rnn_report = fluid.onnx.export(main, os.path.join(folder, 'rnn.onnx'), feed=['words'],
                               fetch=[last], scope=text_scope)
print('DynamicRNN: all converted:', rnn_report.complete)
lengths = [3, 5, 2, 4]
ids = np.random.RandomState(2).randint(0, 30, (sum(lengths), 1)).astype('int64')
padded = np.zeros((4, 5, 1), 'int64')
for row, start, n in zip(range(4), np.cumsum([0] + lengths[:-1]), lengths):
    padded[row, :n] = ids[start:start + n]
want_last, = exe.run(main, feed={'words': fluid.create_lod_tensor(ids, [lengths], fluid.CPUPlace())},
                     fetch_list=[last], scope=text_scope)
onnx_last, = onnxruntime.InferenceSession(
    os.path.join(folder, 'rnn.onnx'), providers=['CPUExecutionProvider']).run(
    None, {'words': padded, 'words_lengths': np.array(lengths, 'int64')})
print('DynamicRNN in onnxruntime, largest difference:', float(np.abs(onnx_last - want_last).max()))"""),
    ("md", """\
Control flow exports too: `cond` (two `conditional_block`s and a `select_input`) becomes
ONNX `If` nodes, a `While` loop a `Loop`. And an ONNX model reads back as a program
(`fluid.onnx.to_program`), so the program view draws it, the `Loop`'s body as a sub-block
(a `.onnx` file opened from JupyterLab's file browser shows the same graph):"""),
    ("code", "onnx-control-flow", """\
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup), fluid.unique_name.guard():
    x = fluid.layers.data(name='x', shape=[3], dtype='float32')
    positive = fluid.layers.greater_than(fluid.layers.reduce_sum(x),
                                         fluid.layers.fill_constant([1], 'float32', 0.0))
    y = fluid.layers.cond(positive, lambda: fluid.layers.scale(x, 2.0),
                          lambda: fluid.layers.relu(x) - 1.0)
    i = fluid.layers.fill_constant([1], 'int64', 0)
    three = fluid.layers.fill_constant([1], 'int64', 3)
    condition = fluid.layers.less_than(i, three)
    loop = fluid.layers.While(condition)
    with loop.block():
        fluid.layers.assign(fluid.layers.tanh(y) + x, y)
        fluid.layers.increment(i, in_place=True)
        fluid.layers.less_than(i, three, cond=condition)
flow_report = fluid.onnx.export(main, os.path.join(folder, 'flow.onnx'), feed=['x'],
                                fetch=[y], scope=fluid.Scope())
print(flow_report)
flow_session = onnxruntime.InferenceSession(os.path.join(folder, 'flow.onnx'),
                                            providers=['CPUExecutionProvider'])
for sample in (np.ones((2, 3), 'float32'), -np.ones((2, 3), 'float32')):
    want_y, = exe.run(main, feed={'x': sample}, fetch_list=[y], scope=fluid.Scope())
    got_y, = flow_session.run(None, {'x': sample})
    print('sum', float(sample.sum()), 'largest difference:', float(np.abs(got_y - want_y).max()))
from fluid_nb.widgets import ProgramView
ProgramView(fluid.onnx.to_program(os.path.join(folder, 'flow.onnx')), title='flow.onnx')"""),
]


def text():
    """The notebook file's text."""
    return make_notebooks.text_of(make_notebooks.build(CELLS))


def main(argv=None):
    return make_notebooks.write_or_check(NAME, CELLS, argv, __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
