"""``contrib.op_freq_statistic``: how often each op type, and each pair of an op and the
op that made one of its inputs, occurs in a program's global block."""
from collections import Counter

from ...errors import InvalidType, expected
from ...framework import Program

__all__ = ["op_freq_statistic"]


def op_freq_statistic(program):
    """``(op counts, adjacent pair counts)``, each a list of ``(key, count)`` from the most
    frequent: an op counts once when it writes a variable that is not a parameter; a pair
    ``"producer->consumer"`` counts once per non-parameter input of the consumer, the
    producer being the last op before it that wrote that input.

    Example::

        ops, pairs = fluid.contrib.op_freq_statistic(fluid.default_main_program())
        # ops: [('elementwise_add', 12), ('mul', 8), ...]; pairs: [('mul->elementwise_add', 8), ...]
    """
    if not isinstance(program, Program):
        raise InvalidType(expected("op_freq_statistic", "program", "a Program",
                                   type(program).__name__))
    block = program.global_block()
    parameters = {p.name for p in block.all_parameters()}
    ops, pairs = Counter(), Counter()
    last_writer = {}
    for op in block.ops:
        if any(name not in parameters for name in op.output_arg_names):
            ops[op.type] += 1
        for name in op.input_arg_names:
            if name not in parameters and name in last_writer:
                pairs[f"{last_writer[name]}->{op.type}"] += 1
        for name in op.output_arg_names:
            last_writer[name] = op.type
    # the stable sort keeps first-seen order among equal counts
    return (sorted(ops.items(), key=lambda item: item[1], reverse=True),
            sorted(pairs.items(), key=lambda item: item[1], reverse=True))
