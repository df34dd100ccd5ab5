"""Cells of notebooks/15_machine_translation.ipynb (the book's chapter 08)."""

CELLS = [
    ("md", """\
# Machine translation: an encoder-decoder with beam search

The PaddlePaddle book, chapter 08, in its Fluid 1.x form: translate French into English
(WMT-14). An **encoder** reads the source sentence (an embedding, an `fc` and a
`dynamic_lstm`) and keeps the LSTM's state after the last word. A **decoder** starts from
that state and produces the target one word at a time. Training runs the decoder as a
`DynamicRNN` over the target words (each step is given the true previous word); translating
runs it as a `While` loop that feeds back its own guesses and keeps the `beam_size` best
partial sentences with `beam_search`, and `beam_search_decode` backtracks the finished
ones. The code is the book's, with `import fluid_nb as fluid`.
`examples/book/machine_translation.py` is the later version of the chapter (a GRU encoder
and attention) as a script."""),
    ("code", "setup", """\
%load_ext fluid_nb
import random, tempfile
from collections import Counter

import numpy as np
import fluid_nb.paddle as paddle     # the book: import paddle
import fluid_nb as fluid             # the book: import paddle.fluid as fluid
import fluid_nb.layers as pd         # the book: import paddle.fluid.layers as pd
from fluid_nb.dataset import samples

random.seed(90)                      # paddle.reader.shuffle draws from `random`
place = fluid.CPUPlace()
exe = fluid.Executor(place)"""),
    ("md", """\
## The data: `wmt14`

`paddle.dataset.wmt14` reads `wmt14.tgz`: a source and a target dictionary (the first three
words are `<s>`, `<e>` and `<unk>`) and sentence pairs. A sample is three id lists:
`[<s>] + source + [<e>]`, the decoder's input `[<s>] + target`, and what it should predict
at each step, `target + [<e>]`. Without the real tarball in the cache,
`samples.use_samples('wmt14')` writes a small one: made-up French words, each standing for
one English word in the same place."""),
    ("code", "data", """\
REAL_DATA = samples.is_cached('wmt14')
print('WMT-14 in the dataset cache:', REAL_DATA)
if not REAL_DATA:
    samples.use_samples('wmt14')
src_dict, trg_dict = paddle.dataset.wmt14.get_dict(1000)
dict_size = min(len(src_dict), len(trg_dict))
source_dict_dim = target_dict_dim = dict_size
hidden_dim = 32
word_dim = 16
batch_size = 16
max_length = 8
beam_size = 3
decoder_size = hidden_dim
START, END = 0, 1                    # <s> and <e> in both dictionaries

train_samples = list(paddle.reader.firstn(paddle.dataset.wmt14.train(dict_size), 320)())
test_samples = list(paddle.dataset.wmt14.test(dict_size)())
print('dictionary sizes:', len(src_dict), len(trg_dict), '-> dict_size', dict_size)
print('training pairs:', len(train_samples), ' test pairs:', len(test_samples))
src_ids, trg_ids, trg_ids_next = train_samples[0]
print('src_ids     ', src_ids, ' '.join(src_dict[i] for i in src_ids))
print('trg_ids     ', trg_ids, ' '.join(trg_dict[i] for i in trg_ids))
print('trg_ids_next', trg_ids_next, ' '.join(trg_dict[i] for i in trg_ids_next))"""),
    ("md", """\
## The encoder

The source words, a LoD tensor of one column (`lod_level=1`), are embedded (the table is
named `vemb` and shared with the decoder, as in the book), projected by an `fc` to the four
gates' width and run through `dynamic_lstm`, one op for the whole recurrence.
`sequence_last_step` keeps one row per sentence: the context the decoder starts from."""),
    ("code", "encoder", """\
def encoder(is_sparse):
    src_word_id = pd.data(name='src_word_id', shape=[1], dtype='int64', lod_level=1)
    src_embedding = pd.embedding(input=src_word_id, size=[dict_size, word_dim], dtype='float32',
                                 is_sparse=is_sparse, param_attr=fluid.ParamAttr(name='vemb'))

    fc1 = pd.fc(input=src_embedding, size=hidden_dim * 4, act='tanh')
    lstm_hidden0, lstm_0 = pd.dynamic_lstm(input=fc1, size=hidden_dim * 4)
    encoder_out = pd.sequence_last_step(input=lstm_hidden0)
    return encoder_out"""),
    ("md", """\
## The training decoder: a `DynamicRNN`

Inside `rnn.block()` the layers describe one step: `step_input` is the current target
word's embedding (one row per sentence still running), `memory(init=context)` the state
carried from the previous step, starting at the encoder's context. The new state is a
`tanh` `fc` of the word and the state; a softmax `fc` scores every target word. Fluid turns
the block into a `while` loop over the time steps, the sentences sorted by length and the
batch shrinking as they end.

Because the loop works on the sentences **sorted by length**, a memory's initial rows
must be sorted the same way: `need_reorder=True` adds a `reorder_lod_tensor_by_rank` op
that puts the context rows in the rank table's order. The book's listing of this version
leaves it out, and then each target sentence starts from the context of whichever source
sat at its rank's place in the batch: the decoder learns to ignore the source and its
translations come out the same for every sentence. The chapter's later version (the
script in `examples/book`) sets it, as here."""),
    ("code", "decoder-train", """\
def decoder_train(context, is_sparse):
    trg_language_word = pd.data(name='target_language_word', shape=[1], dtype='int64', lod_level=1)
    trg_embedding = pd.embedding(input=trg_language_word, size=[dict_size, word_dim],
                                 dtype='float32', is_sparse=is_sparse,
                                 param_attr=fluid.ParamAttr(name='vemb'))

    rnn = pd.DynamicRNN()
    with rnn.block():
        current_word = rnn.step_input(trg_embedding)
        # the book: rnn.memory(init=context); see the note below
        pre_state = rnn.memory(init=context, need_reorder=True)
        # the book: input=[current_word, pre_state]; see "Decoding" below for the order
        current_state = pd.fc(input=[pre_state, current_word], size=decoder_size, act='tanh')

        current_score = pd.fc(input=current_state, size=target_dict_dim, act='softmax')
        rnn.update_memory(pre_state, current_state)
        rnn.output(current_score)

    return rnn()"""),
    ("md", """\
The cost is the cross entropy of each step's scores against the next target word. The book
trains with `Adagrad` and an L2 penalty; its learning rate (1e-4) and penalty (0.1) are for
days on the full corpus, so the few passes here use 0.2 and 1e-4."""),
    ("code", "program", """\
main_program = fluid.default_main_program()
startup_program = fluid.default_startup_program()
main_program.random_seed = startup_program.random_seed = 90

context = encoder(is_sparse=True)
rnn_out = decoder_train(context, is_sparse=True)
label = pd.data(name='target_language_next_word', shape=[1], dtype='int64', lod_level=1)
cost = pd.cross_entropy(input=rnn_out, label=label)
avg_cost = pd.mean(cost)

optimizer = fluid.optimizer.Adagrad(   # the book: learning_rate=1e-4, regularization_coeff=0.1
    learning_rate=0.2,
    regularization=fluid.regularizer.L2DecayRegularizer(regularization_coeff=1e-4))
optimizer.minimize(avg_cost)

for block in main_program.blocks:
    print(f'block {block.idx} (parent {block.parent_idx}): {len(block.ops)} ops,',
          dict(Counter(op.type for op in block.ops).most_common(6)))
print('parameters:', {p.name: list(p.shape) for p in main_program.global_block().all_parameters()})
print('rnn_out:', list(rnn_out.shape), 'lod_level', rnn_out.lod_level)
print('context put in rank order:', any(op.type == 'reorder_lod_tensor_by_rank'
                                        for op in main_program.global_block().ops))"""),
    ("md", """\
The training program: the encoder, the `while` op holding the decoder step (block 1), the
loss, and the gradients, with `while_grad` running the step's gradient ops (block 2)
backwards through the iterations; then an `adagrad` update per parameter."""),
    ("code", "graph", "from fluid_nb import viz\n\n# opened at the decoder: the DynamicRNN's while loop and its step block\nviz.show(main_program, reveal='while')"),
    ("md", """\
## Training

Thirty passes over 300 sentence pairs in batches of 16, fed as three LoD tensors (the
`DataFeeder` builds their offsets from the lists' lengths). The cost falls below that of a
uniform guess. A decoder that sees the source only through the encoder's last state
learns slowly: after these few seconds of training the beams below get the first words
of a translation right more often than the rest. The parameters are saved with `save_params` at the end,
as the book does, for the inference program to load."""),
    ("code", "train", """\
feed_order = ['src_word_id', 'target_language_word', 'target_language_next_word']
feeder = fluid.DataFeeder([main_program.global_block().var(n) for n in feed_order], place)
train_reader = paddle.batch(paddle.reader.shuffle(lambda: iter(train_samples), buf_size=1000),
                            batch_size=batch_size)
exe.run(startup_program)
first = feeder.feed(next(train_reader()))
print('a batch: src_word_id lod', first['src_word_id'].lod()[0][:5], '...  shape',
      np.array(first['src_word_id']).shape)

pass_costs = []
for pass_id in range(30):
    costs = [float(exe.run(main_program, feed=feeder.feed(data), fetch_list=[avg_cost])[0][0])
             for data in train_reader()]
    pass_costs.append(float(np.mean(costs)))
    if pass_id % 5 == 0 or pass_id == 29:
        print(f'pass {pass_id}: {len(costs)} batches, cost {pass_costs[-1]:.3f}')
print('cost per pass:', [round(c, 3) for c in pass_costs])
print(f'uniform guess over the {dict_size} words: cost {np.log(dict_size):.3f}')

params_dirname = tempfile.mkdtemp(prefix='machine_translation_')
fluid.io.save_params(exe, params_dirname, main_program=main_program)"""),
    ("md", """\
## Decoding with beam search in a `While` loop

The inference program reuses `encoder` and builds the decoder by hand. Tensor arrays hold,
for every step, the selected word ids, their accumulated log-probabilities and the
decoder states. The ids and scores are **two-level** LoD tensors: level 0 groups the
hypotheses by source sentence, level 1 groups the candidate words by the hypothesis they
extend. Each iteration of the `While` block:

1. reads the previous step's ids, scores and states, and expands the states to one row per
   hypothesis (`sequence_expand`);
2. runs the decoder step and the softmax;
3. takes each hypothesis's `topk` words and adds their log-probabilities to its score;
4. `beam_search` keeps the `beam_size` best continuations of each source sentence and drops
   the hypotheses that ended with `<e>`;
5. writes the selection to the arrays and stops when the length reaches `max_length` or
   no hypothesis is left (`is_empty`).

`beam_search_decode` then follows the arrays backwards from each finished hypothesis and
gives the sentences, again a two-level LoD tensor: sources, then sentences."""),
    ("code", "decoder-decode", """\
def decoder_decode(context, is_sparse):
    init_state = context
    array_len = pd.fill_constant(shape=[1], dtype='int64', value=max_length)
    counter = pd.zeros(shape=[1], dtype='int64', force_cpu=True)

    # fill the first element with init_state
    state_array = pd.create_array('float32')
    pd.array_write(init_state, array=state_array, i=counter)

    # ids, scores as memory
    ids_array = pd.create_array('int64')
    scores_array = pd.create_array('float32')

    init_ids = pd.data(name='init_ids', shape=[1], dtype='int64', lod_level=2)
    init_scores = pd.data(name='init_scores', shape=[1], dtype='float32', lod_level=2)

    pd.array_write(init_ids, array=ids_array, i=counter)
    pd.array_write(init_scores, array=scores_array, i=counter)

    cond = pd.less_than(x=counter, y=array_len)

    while_op = pd.While(cond=cond)
    with while_op.block():
        pre_ids = pd.array_read(array=ids_array, i=counter)
        pre_state = pd.array_read(array=state_array, i=counter)
        pre_score = pd.array_read(array=scores_array, i=counter)

        # expand the lod of pre_state to be the same with pre_score
        pre_state_expanded = pd.sequence_expand(pre_state, pre_score)

        pre_ids_emb = pd.embedding(input=pre_ids, size=[dict_size, word_dim], dtype='float32',
                                   is_sparse=is_sparse, param_attr=fluid.ParamAttr(name='vemb'))

        # use rnn unit to update rnn
        current_state = pd.fc(input=[pre_state_expanded, pre_ids_emb], size=decoder_size, act='tanh')
        current_state_with_lod = pd.lod_reset(x=current_state, y=pre_score)
        # use score to do beam search
        current_score = pd.fc(input=current_state_with_lod, size=target_dict_dim, act='softmax')
        topk_scores, topk_indices = pd.topk(current_score, k=beam_size)
        # calculate accumulated scores after topk to reduce computation cost
        accu_scores = pd.elementwise_add(x=pd.log(topk_scores),
                                         y=pd.reshape(pre_score, shape=[-1]), axis=0)
        selected_ids, selected_scores = pd.beam_search(
            pre_ids, pre_score, topk_indices, accu_scores, beam_size, end_id=END, level=0)

        pd.increment(x=counter, value=1, in_place=True)

        # update the memories
        pd.array_write(current_state, array=state_array, i=counter)
        pd.array_write(selected_ids, array=ids_array, i=counter)
        pd.array_write(selected_scores, array=scores_array, i=counter)

        # update the break condition: up to the max length or all candidates of
        # source sentences have ended.
        length_cond = pd.less_than(x=counter, y=array_len)
        finish_cond = pd.logical_not(pd.is_empty(x=selected_ids))
        pd.logical_and(x=length_cond, y=finish_cond, out=cond)

    translation_ids, translation_scores = pd.beam_search_decode(
        ids=ids_array, scores=scores_array, beam_size=beam_size, end_id=END)
    return translation_ids, translation_scores


infer_program, infer_startup = fluid.Program(), fluid.Program()
with fluid.program_guard(infer_program, infer_startup), fluid.unique_name.guard():
    translation_ids, translation_scores = decoder_decode(encoder(is_sparse=True), is_sparse=True)
for block in infer_program.blocks:
    print(f'block {block.idx} (parent {block.parent_idx}): {len(block.ops)} ops,',
          sorted({op.type for op in block.ops} & {'while', 'beam_search', 'beam_search_decode',
                                                   'topk', 'top_k', 'sequence_expand', 'is_empty'}))
trained = {p.name for p in main_program.global_block().all_parameters()}
needed = {p.name for p in infer_program.global_block().all_parameters()}
print('parameters the decoder needs, all trained:', sorted(needed), needed <= trained)"""),
    ("md", """\
`load_params` reads the trained parameters into the inference program's scope, by name.
`fc` with a list of inputs makes one weight per input (`fc_1.w_0`, `fc_1.w_1`) in the
list's order, so both steps must list the state and the word in the same order. The book
lists the word first when training and the state first when decoding, which swaps the
two weights' shapes (its test decodes with fresh parameters and never loads them). The
decoding order has to stay: `fc`'s output takes the LoD of its first input, and the
state is written back to `state_array`, where the next step's `sequence_expand` accepts
at most one LoD level — the word ids carry two. So the training step above lists the
state first. The start
is one hypothesis per source sentence, the word `<s>` with score 0 (log 1): `init_ids` and
`init_scores` have one row per sentence and the LoD `[[1, 1, ...], [1, 1, ...]]`."""),
    ("code", "beam-search", """\
sources = test_samples[:4]
def to_lod(rows):
    return fluid.create_lod_tensor([np.array(r, 'int64').reshape(-1, 1) for r in rows],
                                   [[len(r) for r in rows]], place)

n = len(sources)
init_ids = fluid.create_lod_tensor(np.full((n, 1), START, 'int64'), [[1] * n, [1] * n], place)
init_scores = fluid.create_lod_tensor(np.zeros((n, 1), 'float32'), [[1] * n, [1] * n], place)
infer_scope = fluid.Scope()
with fluid.scope_guard(infer_scope):
    exe.run(infer_startup)
    fluid.io.load_params(exe, params_dirname, main_program=infer_program)
    seq_ids, seq_scores = exe.run(
        infer_program, feed={'src_word_id': to_lod([s[0] for s in sources]),
                             'init_ids': init_ids, 'init_scores': init_scores},
        fetch_list=[translation_ids, translation_scores], return_numpy=False)

source_level, sentence_level = seq_ids.lod()
ids, scores = np.array(seq_ids).reshape(-1), np.array(seq_scores).reshape(-1)
print('translation_ids lod:', seq_ids.lod())
print('hypotheses per source:', np.diff(source_level).tolist())
lengths = []
for i, (src, trg, _) in enumerate(sources):
    print('source:   ', ' '.join(src_dict[w] for w in src[1:-1]))
    print('reference:', ' '.join(trg_dict[w] for w in trg[1:]))
    for j in range(source_level[i], source_level[i + 1]):
        start, end = sentence_level[j], sentence_level[j + 1]
        words = [trg_dict[w] for w in ids[start:end]]
        lengths.append(end - start)
        print(f'  {scores[end - 1]:7.3f}  ({end - start} ids) {" ".join(words)}')
print('decoded sentence lengths:', lengths)
first_right = sum(ids[sentence_level[source_level[i]] + 1] == trg[1]
                  for i, (_, trg, _) in enumerate(sources))
print(f"best translation's first word is the reference's: {first_right} of {len(sources)}")
print('every sentence starts with <s>:', all(ids[s] == START for s in sentence_level[:-1]))
print('ended with <e> or at max_length:',
      all(ids[e - 1] == END or e - s == max_length + 1 for s, e in zip(sentence_level, sentence_level[1:])))"""),
]
