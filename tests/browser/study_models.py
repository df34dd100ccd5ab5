"""Training programs of the size people study, written the Fluid 1.x way: a ResNet for
CIFAR (the book's ``resnet_cifar10``, from ``examples/book``) with Momentum, a Transformer
encoder with Adam, and a DynamicRNN text classifier with Adam. The graph view's tests and
benchmark open them."""
import importlib.util
from pathlib import Path

import fluid_nb as fluid


# --- ResNet (the book's image_classification chapter, as examples/book runs it) -------------
def _book_example(name):
    path = Path(__file__).resolve().parents[2] / "examples" / "book" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"book_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def resnet_training(depth=56, with_startup=False):
    """The book's ``resnet_cifar10`` (``examples/book/image_classification.py``) trained
    with Momentum: the main program (``with_startup``: main, startup and the loss)."""
    book = _book_example("image_classification")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        images = fluid.layers.data(name="pixel", shape=[3, 32, 32], dtype="float32")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        predict = book.resnet_cifar10(images, depth)
        cost = fluid.layers.cross_entropy(input=predict, label=label)
        avg_cost = fluid.layers.mean(cost)
        fluid.layers.accuracy(input=predict, label=label)
        fluid.optimizer.Momentum(learning_rate=0.001, momentum=0.9).minimize(avg_cost)
    return (main, startup, avg_cost) if with_startup else main


# --- Transformer encoder -------------------------------------------------------------------
def multi_head_attention(x, d_model, n_head, dropout):
    d_key = d_model // n_head
    q = fluid.layers.fc(input=x, size=d_model, num_flatten_dims=2, bias_attr=False)
    k = fluid.layers.fc(input=x, size=d_model, num_flatten_dims=2, bias_attr=False)
    v = fluid.layers.fc(input=x, size=d_model, num_flatten_dims=2, bias_attr=False)

    def split_heads(t):
        t = fluid.layers.reshape(x=t, shape=[0, 0, n_head, d_key])
        return fluid.layers.transpose(x=t, perm=[0, 2, 1, 3])

    q, k, v = split_heads(q), split_heads(k), split_heads(v)
    product = fluid.layers.matmul(x=q, y=k, transpose_y=True, alpha=d_key ** -0.5)
    weights = fluid.layers.softmax(product)
    weights = fluid.layers.dropout(weights, dropout_prob=dropout, is_test=False)
    out = fluid.layers.matmul(weights, v)
    out = fluid.layers.transpose(out, perm=[0, 2, 1, 3])
    out = fluid.layers.reshape(x=out, shape=[0, 0, d_model])
    return fluid.layers.fc(input=out, size=d_model, num_flatten_dims=2, bias_attr=False)


def positionwise_feed_forward(x, d_inner, d_model):
    hidden = fluid.layers.fc(input=x, size=d_inner, num_flatten_dims=2, act="relu")
    return fluid.layers.fc(input=hidden, size=d_model, num_flatten_dims=2)


def add_and_norm(x, residual, dropout):
    x = fluid.layers.dropout(x, dropout_prob=dropout, is_test=False)
    return fluid.layers.layer_norm(fluid.layers.elementwise_add(x, residual),
                                   begin_norm_axis=len(x.shape) - 1)


def encoder_layer(x, d_model, n_head, d_inner, dropout):
    attended = add_and_norm(multi_head_attention(x, d_model, n_head, dropout), x, dropout)
    return add_and_norm(positionwise_feed_forward(attended, d_inner, d_model), attended, dropout)


def encoder(x, n_layer, d_model, n_head, d_inner, dropout):
    for _ in range(n_layer):
        x = encoder_layer(x, d_model, n_head, d_inner, dropout)
    return x


def transformer_training(n_layer=12, d_model=64, n_head=4, d_inner=128, seq_len=16,
                         vocab=1000, with_startup=False):
    """A Transformer encoder classifier trained with Adam: the main program
    (``with_startup``: main, startup and the loss)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        words = fluid.layers.data(name="words", shape=[seq_len, 1], dtype="int64")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        emb = fluid.layers.embedding(input=words, size=[vocab, d_model])
        emb = fluid.layers.reshape(emb, shape=[0, seq_len, d_model])
        enc = encoder(emb, n_layer, d_model, n_head, d_inner, 0.1)
        pooled = fluid.layers.reduce_mean(enc, dim=1)
        predict = fluid.layers.fc(input=pooled, size=2, act="softmax")
        avg_cost = fluid.layers.mean(fluid.layers.cross_entropy(input=predict, label=label))
        fluid.optimizer.Adam(learning_rate=0.001).minimize(avg_cost)
    return (main, startup, avg_cost) if with_startup else main


# --- DynamicRNN text classifier ---------------------------------------------------------------
def dynamic_rnn_training(dict_dim=5000, emb_dim=32, hidden=32, classes=2):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        words = fluid.layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        emb = fluid.layers.embedding(input=words, size=[dict_dim, emb_dim])
        rnn = fluid.layers.DynamicRNN()
        with rnn.block():
            word = rnn.step_input(emb)
            prev = rnn.memory(shape=[hidden], value=0.0)
            step = fluid.layers.fc(input=[word, prev], size=hidden, act="tanh")
            rnn.update_memory(prev, step)
            rnn.output(step)
        last = fluid.layers.sequence_last_step(rnn())
        predict = fluid.layers.fc(input=last, size=classes, act="softmax")
        avg_cost = fluid.layers.mean(fluid.layers.cross_entropy(input=predict, label=label))
        fluid.optimizer.Adam(learning_rate=0.002).minimize(avg_cost)
    return main


STUDY_PROGRAMS = {
    "resnet56_momentum": resnet_training,
    "transformer12_adam": transformer_training,
    "dynamic_rnn_adam": dynamic_rnn_training,
}
