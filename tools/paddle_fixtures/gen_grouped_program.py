"""A training program as Paddle writes it, call stacks included, for the graph's groups.

A small ResNet for CIFAR (the book's ``resnet_cifar10`` at depth 14: a first conv, three
stages of two basic blocks) trained with Momentum, built with Paddle's legacy static graph
(``paddle.static.nn``/``fluid``-style functions called from the user's own functions), saved
as ``program.desc.serialize_to_string()`` with the ``op_callstack`` Paddle records in every
op. The paths in those tracebacks are the generating machine's, so they are rewritten with
Paddle itself to neutral ones (``/home/user/resnet_cifar.py`` for this script, a plain
``site-packages`` for Paddle's own files); everything else stays as Paddle wrote it::

    <paddle-venv>/bin/python tools/paddle_fixtures/gen_grouped_program.py
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

os.environ["FLAGS_call_stack_level"] = "2"
paddle = C.import_paddle()
from paddle.base import core  # noqa: E402

SCRIPT = "/home/user/resnet_cifar.py"
SITE = "/usr/lib/python3/site-packages/"


def conv_bn_layer(input, ch_out, filter_size, stride, padding, act="relu", bias_attr=False):
    tmp = paddle.static.nn.conv2d(input=input, filter_size=filter_size, num_filters=ch_out,
                                  stride=stride, padding=padding, bias_attr=bias_attr)
    return paddle.static.nn.batch_norm(input=tmp, act=act)


def shortcut(input, ch_in, ch_out, stride):
    if ch_in != ch_out:
        return conv_bn_layer(input, ch_out, 1, stride, 0, None)
    return input


def basicblock(input, ch_in, ch_out, stride):
    tmp = conv_bn_layer(input, ch_out, 3, stride, 1)
    tmp = conv_bn_layer(tmp, ch_out, 3, 1, 1, act=None, bias_attr=True)
    short = shortcut(input, ch_in, ch_out, stride)
    return paddle.nn.functional.relu(paddle.add(tmp, short))


def layer_warp(block_func, input, ch_in, ch_out, count, stride):
    tmp = block_func(input, ch_in, ch_out, stride)
    for _ in range(1, count):
        tmp = block_func(tmp, ch_out, ch_out, 1)
    return tmp


def resnet_cifar10(ipt, depth):
    n = (depth - 2) // 6
    conv1 = conv_bn_layer(ipt, ch_out=16, filter_size=3, stride=1, padding=1)
    res1 = layer_warp(basicblock, conv1, 16, 16, n, 1)
    res2 = layer_warp(basicblock, res1, 16, 32, n, 2)
    res3 = layer_warp(basicblock, res2, 32, 64, n, 2)
    return paddle.nn.functional.adaptive_avg_pool2d(res3, 1)


def build():
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        images = paddle.static.data(name="pixel", shape=[None, 3, 32, 32], dtype="float32")
        label = paddle.static.data(name="label", shape=[None, 1], dtype="int64")
        net = resnet_cifar10(images, 14)
        predict = paddle.static.nn.fc(x=paddle.flatten(net, 1), size=10, activation="softmax")
        cost = paddle.nn.functional.cross_entropy(predict, label, use_softmax=False)
        avg_cost = paddle.mean(cost)
        paddle.optimizer.Momentum(learning_rate=0.001, momentum=0.9).minimize(avg_cost)
    return main


def neutral(text, here):
    text = text.replace(here, SCRIPT)
    return re.sub(r'File "[^"]*?/site-packages/', 'File "' + SITE, text)


def main():
    program = build()
    here = os.path.abspath(__file__)
    desc = core.ProgramDesc(program.desc.serialize_to_string())
    stacks = 0
    for b in range(desc.num_blocks()):
        block = desc.block(b)
        for i in range(block.op_size()):
            op = block.op(i)
            if op.has_attr("op_callstack"):
                frames = [neutral(f, here) for f in op.attr("op_callstack")]
                op._set_attr("op_callstack", frames)
                stacks += 1
    data = desc.serialize_to_string()
    path = os.path.join(C.fixture_dir("programs"), "resnet_callstack.pb")
    with open(path, "wb") as f:
        f.write(data)
    print(f"wrote {path}: {len(data)} bytes, {desc.block(0).op_size()} ops, "
          f"{stacks} with op_callstack")


if __name__ == "__main__":
    main()
