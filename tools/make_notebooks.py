"""Write the teaching notebooks 02-04 under notebooks/ from the cell lists below.

The notebooks are stored without outputs (the tests execute them in a real kernel), and every
cell has a fixed id, so running this script again gives byte-identical files and the tests
can find a cell's output by its id::

    python tools/make_notebooks.py            # (re)write notebooks/02..04
    python tools/make_notebooks.py --check    # exit 1 if a stored notebook differs

A cell is ``("md", text)`` or ``("code", id, source)``; markdown cells are numbered ``md-<k>``.
"""
import argparse
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"

KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}

# --- 02: the anatomy of a program -----------------------------------------------------------
PROGRAM_ANATOMY = [
    ("md", """\
# Program anatomy

A Fluid program is data: a `ProgramDesc` protobuf message made of **blocks**, each holding
**variables** and a list of **operators**. Layers such as `fc` only append ops and variables to
it; nothing runs until an `Executor` interprets the program. This notebook builds `fit_a_line`
(linear regression on the UCI housing data), takes it apart, and watches the backward and
optimizer ops appear."""),
    ("code", "build", """\
%load_ext fluid_nb
from collections import Counter

import numpy as np
import fluid_nb as fluid
import fluid_nb.viz as viz

main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.layers.data(name='x', shape=[13], dtype='float32')
    y = fluid.layers.data(name='y', shape=[1], dtype='float32')
    y_predict = fluid.layers.fc(input=x, size=1)          # mul + elementwise_add
    cost = fluid.layers.square_error_cost(input=y_predict, label=y)
    avg_cost = fluid.layers.mean(cost)

forward_types = [op.type for op in main.global_block().ops]
print(f'forward ops: {len(forward_types)} {forward_types}')"""),
    ("md", """\
## `print(program)`

The program's text form, as Paddle prints it: each block with its variables, then its ops as
`{outputs} = type(inputs={...}, attributes)`."""),
    ("code", "print-program", "print(main)"),
    ("md", """\
## Blocks, variables, operators

Block 0 is the global block. Control flow (`While`, `IfElse`, `DynamicRNN`) adds sub-blocks
whose `parent_idx` points back; `fit_a_line` has none. Parameters are persistable variables:
they outlive a run, in the scope."""),
    ("code", "anatomy", """\
for block in main.blocks:
    print(f'block {block.idx} (parent {block.parent_idx}): '
          f'{len(block.vars)} vars, {len(block.ops)} ops')
for var in main.global_block().vars.values():
    kind = 'parameter' if var.is_parameter else 'persistable' if var.persistable else ''
    print(f'  {var.name:26} shape={list(var.shape)!s:10} {kind}')
mul = main.global_block().ops[0]
print(mul.type, {slot: mul.input(slot) for slot in mul.input_names},
      '->', {slot: mul.output(slot) for slot in mul.output_names}, mul.attrs)"""),
    ("md", """\
The readable listing (`fluid_nb.viz.program_listing`) is the same program without Python
quoting, sorted attributes, and sub-blocks nested under the op that owns them."""),
    ("code", "listing", "print(viz.program_listing(main))"),
    ("md", """\
## The protobuf bytes

`serialize_to_string()` gives the `ProgramDesc` bytes Paddle writes to `__model__` or
`.pdmodel`. The first byte `0x0a` is a protobuf key: field 1 (`ProgramDesc.blocks`), wire type 2
(length-delimited); then the block's length as a varint, then the `BlockDesc` itself, whose
fields 1 and 2 are `idx = 0` and `parent_idx = -1` (a negative int32 takes ten varint
bytes). Parsing the bytes back gives the same program, byte for byte."""),
    ("code", "protobuf", """\
def varint(data, pos):
    \"\"\"The protobuf varint at data[pos:]: (value, position after it).\"\"\"
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos

data = main.serialize_to_string()
print(f'ProgramDesc: {len(data)} bytes; first 16: {data[:16].hex(" ")}')
key, pos = varint(data, 0)
size, pos = varint(data, pos)
print(f'key 0x{key:02x}: field {key >> 3}, wire type {key & 7}; block 0 is {size} bytes')
idx_key, pos = varint(data, pos)
idx, pos = varint(data, pos)
parent_key, pos = varint(data, pos)
parent, pos = varint(data, pos)
parent -= 1 << 64 if parent >= 1 << 63 else 0          # two's complement int32 in 64 bits
print(f'BlockDesc field {idx_key >> 3} (idx) = {idx}, '
      f'field {parent_key >> 3} (parent_idx) = {parent}')

again = fluid.Program.parse_from_string(data)
print('parsed back, same ops:', [op.type for op in again.global_block().ops] == forward_types)
print('parsed back, same bytes:', again.serialize_to_string() == data)"""),
    ("md", """\
## Startup program vs main program

`fc` put its parameters' **initializers** in the startup program (`uniform_random` for the
weight, `fill_constant` for the bias): run once, they create the parameters in a scope. The
main program only reads them."""),
    ("code", "startup", """\
print('startup ops:', [op.type for op in startup.global_block().ops])
print('main ops:   ', [op.type for op in main.global_block().ops])
print('parameters: ', [p.name for p in main.global_block().all_parameters()])

scope = fluid.Scope()
exe = fluid.Executor(fluid.CPUPlace())
exe.run(startup, scope=scope)
weight = scope.find_var('fc_0.w_0').value.numpy()
print('fc_0.w_0 after the startup program:', weight.shape, weight.dtype)"""),
    ("md", """\
## Backward and optimizer ops appear

`append_backward(loss)` appends, after the forward ops, a `fill_constant` for d loss/d loss =
1 and one `*_grad` op per forward op, in reverse order. The optimizer then appends one update op
per parameter (`sgd`). Each op carries its role (`op_role`), which the program model reads; it
also pairs every forward op with its gradient op."""),
    ("code", "backward", """\
def roles(program):
    \"\"\"How many ops the program has in each role.\"\"\"
    return dict(sorted(Counter(op['role'] for op in viz.program_model(program)['ops']).items()))

print('forward only:         ', roles(main))
with fluid.program_guard(main, startup):
    params_grads = fluid.backward.append_backward(avg_cost)
print('after append_backward:', roles(main))
print('gradients:', [(p.name, g.name) for p, g in params_grads])

model = viz.program_model(main)
by_id = {op['id']: op for op in model['ops']}
print('pairs:', [f"{op['type']} <-> {by_id[op['pair']]['type']}"
                 for op in model['ops'] if op['pair'] and op['role'] in ('forward', 'loss')])"""),
    ("code", "optimizer", """\
with fluid.program_guard(main, startup):
    fluid.optimizer.SGD(learning_rate=0.01).apply_gradients(params_grads)
print('after the optimizer:  ', roles(main))
print('optimize ops:', [op.type for op in main.global_block().ops][-2:])
print('startup ops now:', [op.type for op in startup.global_block().ops])"""),
    ("md", """\
## It trains

Same program, same scope: the startup program made a new variable (the learning rate), so it
runs again before the loop."""),
    ("code", "train", """\
exe.run(startup, scope=scope)
feeder = fluid.DataFeeder(feed_list=[x, y], place=fluid.CPUPlace())
reader = fluid.io.batch(fluid.dataset.uci_housing.train(), batch_size=20)
losses = []
for epoch in range(3):
    for batch in reader():
        loss, = exe.run(main, feed=feeder.feed(batch), fetch_list=[avg_cost], scope=scope)
        losses.append(float(loss))
print(f'{len(losses)} steps; loss {losses[0]:.3f} -> {losses[-1]:.3f}')"""),
    ("md", """\
## Displaying a program

A program as a cell's result is a MIME bundle: `application/vnd.fluid-nb.program+json` (the
program model, drawn as an interactive graph in JupyterLab with the fluid_nb extension, also in
saved and untrusted notebooks), with the readable listing as `text/html` and `text/plain` for
frontends without it."""),
    ("code", "mime", "print(sorted(main._repr_mimebundle_()))"),
    ("code", "display", "main"),
    ("md", """\
## A ProgramView that grows cell by cell

In live mode (`%%fluid` cells) every op runs as it is appended. A `ProgramView` of the live
program follows it: after each `%%fluid` cell it receives only what the cell changed (a delta),
highlights the new ops, and `view.diff()` says what was added. Click an op in the graph for its
attributes, kernel and run time, or a variable for its value."""),
    ("code", "live-data", """\
%%fluid
np.random.seed(0)
x_sample = np.random.rand(8, 13).astype('float32')
y_sample = x_sample.sum(axis=1, keepdims=True)
live_x = fluid.layers.data(name='x', shape=[13], dtype='float32', value=x_sample)
live_y = fluid.layers.data(name='y', shape=[1], dtype='float32', value=y_sample)"""),
    ("code", "view", """\
from fluid_nb.widgets import ProgramView

view = ProgramView()
view"""),
    ("code", "live-fc", """\
%%fluid
hidden = fluid.layers.fc(input=live_x, size=16, act='relu')
live_predict = fluid.layers.fc(input=hidden, size=1)"""),
    ("code", "diff-fc", "view.diff()"),
    ("code", "live-loss", """\
%%fluid
live_cost = fluid.layers.mean(fluid.layers.square_error_cost(input=live_predict, label=live_y))
update_ops, live_params_grads = fluid.optimizer.SGD(learning_rate=0.01).minimize(live_cost)"""),
    ("code", "diff-loss", """\
print(repr(view.diff()).splitlines()[0])
print(view)"""),
]

# --- 03: LoD tensors ------------------------------------------------------------------------
LOD_TENSORS = [
    ("md", """\
# LoD tensors: sequences without padding

A batch of variable-length sequences is **one** tensor: the rows of all sequences stacked, plus
the **LoD** (level of detail), offsets saying where each sequence starts. The design documents'
figure (a) is 4 sentences of 5, 3, 2 and 4 words, 14 word rows in all:

```
[0, 5, 8, 10, 14]
```"""),
    ("code", "one-level", """\
import numpy as np
import fluid_nb as fluid
from fluid_nb.viz import lod_model
from fluid_nb.widgets import TensorView

place = fluid.CPUPlace()
words = np.arange(14, dtype='float32').reshape(14, 1)     # word i is the number i
sentences = fluid.create_lod_tensor(words, [[5, 3, 2, 4]], place)   # lengths in ...
print('lod:', sentences.lod())                                      # ... offsets out
print('lengths:', sentences.recursive_sequence_lengths())
offsets = sentences.lod()[0]
for i in range(len(offsets) - 1):
    print(f'sentence {i}: rows {offsets[i]}..{offsets[i + 1]} ->',
          words[offsets[i]:offsets[i + 1], 0].astype(int).tolist())"""),
    ("md", """\
`fluid_nb.viz.lod_model` is what the views draw: every level with its offsets and lengths side by
side, and the sequences as nested boxes over row ranges. `TensorView` draws it (one colour per
sentence); `boxes` below writes the same nesting as brackets."""),
    ("code", "boxes", """\
def boxes(model, values):
    \"\"\"The model's sequences as nested brackets around the rows they hold.\"\"\"
    def box(node):
        if node['children']:
            return '[' + ' '.join(box(child) for child in node['children']) + ']'
        start, end = node['rows']
        return '[' + ' '.join(str(int(v)) for v in values[start:end, 0]) + ']'
    return ' '.join(box(node) for node in model['sequences'])

one = lod_model(sentences)
for level in one['levels']:
    print(f"level {level['level']}: offsets {level['offsets']} lengths {level['lengths']}")
print(boxes(one, words))"""),
    ("code", "one-level-view", "TensorView(sentences)"),
    ("md", """\
## Two levels: paragraphs of sentences

Figure (b) of the design documents groups the same 14 words into 8 sentences and the sentences
into 4 paragraphs, and draws both levels in rows:

```
[[0, 5, 8, 10, 14] /*level=1*/, [0, 2, 3, 5, 7, 8, 10, 13, 14] /*level=2*/]
```

Paddle stores every level but the last in units of the level below (paragraph 0 is sentences
0..3, not rows 0..5); `fluid.lod_from_row_offsets` converts the figure's notation."""),
    ("code", "two-level", """\
lod = fluid.lod_from_row_offsets([[0, 5, 8, 10, 14], [0, 2, 3, 5, 7, 8, 10, 13, 14]])
print('lod:', lod)
paragraphs = fluid.LoDTensor()
paragraphs.set(words, place)
paragraphs.set_lod(lod)
print('lengths:', paragraphs.recursive_sequence_lengths())
two = lod_model(paragraphs)
for level in two['levels']:
    print(f"level {level['level']}: offsets {level['offsets']} lengths {level['lengths']} "
          f"rows {level['row_offsets']}")
print(boxes(two, words))"""),
    ("code", "two-level-view", "TensorView(paragraphs)"),
    ("md", """\
## Sequence ops

Sequence ops work per sequence of the last LoD level, with no padding anywhere:
`sequence_pool` reduces each sentence to one row (`sum`, `max`, `last`, ...),
`sequence_expand` repeats row *i* of its input once per row of sequence *i* of its reference,
and `sequence_softmax` normalises within each sentence."""),
    ("code", "sequence-ops", """\
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    seq = fluid.layers.data(name='seq', shape=[1], dtype='float32', lod_level=1)
    pooled = {kind: fluid.layers.sequence_pool(seq, kind) for kind in ('sum', 'max', 'last')}
    expanded = fluid.layers.sequence_expand(pooled['max'], seq)
    softmax = fluid.layers.sequence_softmax(seq)
exe = fluid.Executor(place)
exe.run(startup)

def run(tensor):
    \"\"\"The sequence ops on ``tensor``: {name: (values, lod)}.\"\"\"
    names = list(pooled) + ['expand', 'softmax']
    found = exe.run(main, feed={'seq': tensor}, return_numpy=False,
                    fetch_list=list(pooled.values()) + [expanded, softmax])
    return {name: ([round(float(v), 3) for v in np.asarray(t)[:, 0]], t.lod())
            for name, t in zip(names, found)}

for name, (values, out_lod) in run(sentences).items():
    print(f'{name:8} {values} lod {out_lod}')"""),
    ("md", """\
On two levels, `sequence_pool` reduces the last level (words to sentences) and keeps the
levels above: the result is a one-level LoD tensor of paragraphs of sentence sums, which a
second `sequence_pool` reduces to paragraphs."""),
    ("code", "two-level-ops", """\
nested, nested_startup = fluid.Program(), fluid.Program()
with fluid.program_guard(nested, nested_startup):
    doc = fluid.layers.data(name='doc', shape=[1], dtype='float32', lod_level=2)
    sentence_sums = fluid.layers.sequence_pool(doc, 'sum')
    paragraph_sums = fluid.layers.sequence_pool(sentence_sums, 'sum')
per_sentence, per_paragraph = exe.run(nested, feed={'doc': paragraphs}, return_numpy=False,
                                      fetch_list=[sentence_sums, paragraph_sums])
print('sentence sums: ', np.asarray(per_sentence)[:, 0].tolist(), 'lod', per_sentence.lod())
print('paragraph sums:', np.asarray(per_paragraph)[:, 0].tolist(), 'lod', per_paragraph.lod())"""),
    ("md", """\
## An empty sequence

Offsets may repeat: `[0, 2, 2, 5]` is three sequences of 2, 0 and 3 rows. The model lists the
empty one (`empty`) and the views draw it as a zero-width box; `sequence_pool` gives it its
`pad_value` (0), `sequence_softmax` has nothing to normalise there."""),
    ("code", "empty", """\
gappy = fluid.create_lod_tensor(np.arange(5, dtype='float32').reshape(5, 1), [[2, 0, 3]], place)
gappy_model = lod_model(gappy)
level = gappy_model['levels'][0]
print('offsets', level['offsets'], 'lengths', level['lengths'], 'empty', level['empty'])
print(boxes(gappy_model, np.asarray(gappy)))
for name, (values, out_lod) in run(gappy).items():
    print(f'{name:8} {values} lod {out_lod}')"""),
    ("code", "empty-view", "TensorView(gappy)"),
]

# --- 04: DynamicRNN -------------------------------------------------------------------------
DYNAMIC_RNN = [
    ("md", """\
# DynamicRNN, step by step

The design documents' worked example: an RNN encoder-decoder for translation on one batch of
four sentence pairs, with no padding. The source sentences have 10, 8, 5 and 7 words (word ids
1..30), the target sentences 5, 7, 4 and 6 (ids 1..22).

A `DynamicRNN` is a `while` op plus the machinery around it: `lod_rank_table` sorts the
sequences by length (longest first), `lod_tensor_to_array` cuts the batch into one tensor per
time step, holding only the sequences still running, `shrink_rnn_memory` shrinks the memory to
that batch, and `array_to_lod_tensor` puts the outputs back in the input order."""),
    ("code", "data", """\
import numpy as np
import fluid_nb as fluid
from fluid_nb.viz import trace_while

place = fluid.CPUPlace()
source_lengths, target_lengths = [10, 8, 5, 7], [5, 7, 4, 6]
source_ids = np.arange(1, 31, dtype='int64').reshape(-1, 1)
target_ids = np.arange(1, 23, dtype='int64').reshape(-1, 1)
feed = {'source': fluid.create_lod_tensor(source_ids, [source_lengths], place),
        'target': fluid.create_lod_tensor(target_ids, [target_lengths], place)}

def rows(ids, lengths, order=None):
    \"\"\"The sequences of ``ids`` one per line (in ``order``), as the documents draw them.\"\"\"
    starts = np.concatenate([[0], np.cumsum(lengths)])
    for i in (range(len(lengths)) if order is None else order):
        print('  ' + ' '.join(f'{v:2d}' for v in ids[starts[i]:starts[i + 1], 0]))

print('source word sequences:'); rows(source_ids, source_lengths)
print('target word sequences:'); rows(target_ids, target_lengths)"""),
    ("md", """\
## The model

The encoder is a DynamicRNN over the source words; its last state starts the decoder's memory,
and all its states are the decoder's **static input** (the external memory the attention reads
at every step). The decoder is a DynamicRNN over the target words, as in the documents:

```python
rnn = fluid.layers.DynamicRNN()
with rnn.block():
    current_word = rnn.step_input(trg_embedding)
    mem = rnn.memory(init=encoder_out)
    fc1 = fluid.layers.fc(input=[current_word, mem], size=decoder_size, act='tanh')
    out = fluid.layers.fc(input=fc1, size=target_dict_dim, act='softmax')
    rnn.update_memory(mem, fc1)
    rnn.output(out)
```"""),
    ("code", "build", """\
EMBED, HIDDEN = 4, 4
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    source = fluid.layers.data(name='source', shape=[1], dtype='int64', lod_level=1)
    target = fluid.layers.data(name='target', shape=[1], dtype='int64', lod_level=1)

    # the embeddings are computed before the loops: a step input comes from outside the step
    source_embedding = fluid.layers.embedding(source, size=[31, EMBED])
    target_embedding = fluid.layers.embedding(target, size=[23, EMBED])

    encoder = fluid.layers.DynamicRNN()
    with encoder.block():
        word = encoder.step_input(source_embedding)
        state = encoder.memory(shape=[HIDDEN], value=0.0)
        new_state = fluid.layers.fc(input=[word, state], size=HIDDEN, act='tanh')
        encoder.update_memory(state, new_state)
        encoder.output(new_state)
    encoder_out = encoder()                                   # one state per source word
    encoder_last = fluid.layers.sequence_last_step(encoder_out)

    decoder = fluid.layers.DynamicRNN()
    with decoder.block():
        current_word = decoder.step_input(target_embedding)
        encoder_states = decoder.static_input(encoder_out)    # the external memory
        mem = decoder.memory(init=encoder_last, need_reorder=True)
        # attention: score every source state against the decoder state, softmax per sentence
        expanded = fluid.layers.sequence_expand(mem, encoder_states)
        score = fluid.layers.fc(input=[encoder_states, expanded], size=1, act='tanh',
                                bias_attr=False)
        weight = fluid.layers.sequence_softmax(score)
        context = fluid.layers.sequence_pool(
            fluid.layers.elementwise_mul(encoder_states, weight, axis=0), 'sum')
        fc1 = fluid.layers.fc(input=[current_word, mem, context], size=HIDDEN, act='tanh')
        out = fluid.layers.fc(input=fc1, size=23, act='softmax')
        decoder.update_memory(mem, fc1)
        decoder.output(out)
    prediction = decoder()

machinery = ('lod_rank_table', 'lod_tensor_to_array', 'reorder_lod_tensor_by_rank', 'while',
             'array_to_lod_tensor')
top = [op.type for op in main.global_block().ops]
print('block 0:', {kind: top.count(kind) for kind in machinery})
for block in main.blocks[1:]:
    types = [op.type for op in block.ops]
    print(f'block {block.idx} (a while body): {len(types)} ops,',
          types.count('shrink_rnn_memory'), 'shrink_rnn_memory')

exe = fluid.Executor(place)
scope = fluid.Scope()
exe.run(startup, scope=scope)
result, = exe.run(main, feed=feed, fetch_list=[prediction], scope=scope, return_numpy=False)
print('prediction:', np.asarray(result).shape, 'lod', result.lod())"""),
    ("md", """\
## The encoder, step by step

`trace_while` runs the program once and records the loop iteration by iteration: the rank
table, the sequences in each step's batch, the memory before and after `shrink_rnn_memory`,
and where each output sequence came from. Sorted by length the sources are 10, 8, 7, 5 words,
so the batch is 4 sequences for 5 steps, then 3, 3, 2, 1, 1."""),
    ("code", "encoder-trace", """\
encoder_trace = trace_while(exe, main, feed=feed, scope=scope, while_op=0)
rnn = encoder_trace['dynamic_rnn']
table = rnn['rank_table']['items']
print('rank table (index, length):', [(it['index'], it['length']) for it in table])
print('sorted lengths:', rnn['sorted_lengths'])
print('encoder batch per step:', rnn['batch_sizes'])
source_starts = np.concatenate([[0], np.cumsum(source_lengths)])
for step in rnn['steps']:
    memory = step['memories'][0]
    read = [int(source_ids[source_starts[i] + step['step'], 0]) for i in step['sequences']]
    print(f"step {step['step']}: batch {step['batch_size']}, sequences {step['sequences']}, "
          f"words {read}, memory {memory['before']} -> {memory['after']}")"""),
    ("md", """\
## The decoder: the external memory sorted by the step input's rank table

The decoder's rank table comes from its step input, the target words: lengths 5, 7, 4, 6 sort
as sequences 1, 3, 0, 2. Its static input, the encoder states, is reordered the same way
(`reorder_lod_tensor_by_rank`), which is the documents' "external memory is sorted according
to LoDRankTable created from the step input": source rows 11-18, 24-30, 1-10, 19-23. At each
step `shrink_rnn_memory` keeps the encoder states of the target sentences still running."""),
    ("code", "decoder-trace", """\
decoder_trace = trace_while(exe, main, feed=feed, scope=scope, while_op=1)
rnn = decoder_trace['dynamic_rnn']
order = [it['index'] for it in rnn['rank_table']['items']]
print('rank table order:', order, 'sorted lengths:', rnn['sorted_lengths'])
print('external memory, sorted:'); rows(source_ids, source_lengths, order)
print('step input, sorted:'); rows(target_ids, target_lengths, order)
print('decoder batch per step:', rnn['batch_sizes'])
for step in rnn['steps']:
    shrunk = {m['kind']: m for m in step['memories']}
    static = shrunk['static_input']
    print(f"step {step['step']}: batch {step['batch_size']}, memory "
          f"{shrunk['memory']['before']} -> {shrunk['memory']['after']}, encoder states "
          f"{static['after'][0]} rows, lod {static['after_lod']}")"""),
    ("md", """\
## Outputs back in input order

Each step wrote its outputs (one row per running sequence, in rank order) to a tensor array;
`array_to_lod_tensor` reassembles them per sequence in the **input** order, so the prediction
has the target's LoD."""),
    ("code", "restore", """\
output = rnn['outputs'][0]
print('output steps:', output['steps'])
for item in output['order']:
    print(f"sequence {item['sequence']} (rank {item['rank']}, {item['length']} steps) -> "
          f"rows {item['rows'][0]}..{item['rows'][1]}")
print('prediction lod:', result.lod(), '== target lod:', result.lod() == feed['target'].lod())"""),
    ("md", """\
## Iteration by iteration

Every iteration of the `while` op: the condition after it (False ends the loop) and the tensor
array slots it wrote."""),
    ("code", "iterations", """\
for it in decoder_trace['iterations']:
    wrote = ', '.join(f"{w['array']}[{w['slot']}]" for w in it['writes'])
    print(f"iteration {it['index']}: condition {it['condition']}, {it['ops']} ops, "
          f"wrote {wrote}")"""),
    ("md", """\
## The stepper

`StepperView` plays the trace: a slider over the iterations, and for a DynamicRNN the
rank-table order, the batch at each step shrinking, the memory shrunk and the outputs restored.
Move the slider, or set `stepper.step` from Python."""),
    ("code", "stepper", """\
from fluid_nb.widgets import StepperView

stepper = StepperView(encoder_trace)
stepper"""),
    ("code", "stepper-step", """\
stepper.step = 7
print(stepper.step, stepper.batch_sizes()[stepper.step])"""),
    ("code", "decoder-stepper", "StepperView(decoder_trace)"),
]

NOTEBOOKS = {
    "02_program_anatomy.ipynb": PROGRAM_ANATOMY,
    "03_lod_tensors.ipynb": LOD_TENSORS,
    "04_dynamic_rnn.ipynb": DYNAMIC_RNN,
}


def build(cells):
    """A notebook (nbformat 4.5, no outputs) of ``cells``; the same cells give the same
    notebook, ids included."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    markdown = 0
    for cell in cells:
        if cell[0] == "md":
            markdown += 1
            made = nbformat.v4.new_markdown_cell(cell[1])
            made.id = f"md-{markdown}"
        else:
            _, cell_id, source = cell
            made = nbformat.v4.new_code_cell(source)
            made.id = cell_id
        nb.cells.append(made)
    nbformat.validate(nb)
    return nb


def text_of(nb):
    """What the notebook file holds (nbformat's own writer)."""
    return nbformat.writes(nb) + "\n"


def write_or_check(name, cells, argv=None, description=""):
    """The command line of a one-notebook generator: write ``notebooks/<name>`` from
    ``cells``, or with ``--check`` exit 1 when the stored file differs."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="compare; write nothing")
    args = parser.parse_args(argv)
    path = NOTEBOOK_DIR / name
    text = text_of(build(cells))
    if args.check:
        same = path.is_file() and path.read_text(encoding="utf-8") == text
        print(f"{path.relative_to(ROOT)}: {'up to date' if same else 'differs'}")
        return 0 if same else 1
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare the stored notebooks with the cell lists; write nothing")
    args = parser.parse_args(argv)
    stale = []
    for name, cells in NOTEBOOKS.items():
        path = NOTEBOOK_DIR / name
        text = text_of(build(cells))
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("differ from tools/make_notebooks.py:", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
