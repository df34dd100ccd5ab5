"""``fluid.contrib``: the part of Fluid 1.8's incubating extras that fluid_nb has.

``contrib.layers`` holds the RNNs built from basic operators (``basic_gru``,
``basic_lstm``, ``BasicGRUUnit``, ``BasicLSTMUnit``) and layers of one op each
(``partial_concat``, ``partial_sum``, ``shuffle_batch``, ``tree_conv``, ``rank_attention``,
...); ``memory_usage`` estimates a
program's memory for a batch size; ``op_freq_statistic`` counts its op types and adjacent
op pairs. (Slim, quantization, mixed precision, the beam-search decoder and the HDFS and
lookup-table utilities are not part of fluid_nb.)
"""
from . import layers, memory_usage_calc, op_frequence
from .layers import *  # noqa: F401,F403
from .memory_usage_calc import memory_usage  # noqa: F401
from .op_frequence import op_freq_statistic  # noqa: F401

__all__ = memory_usage_calc.__all__ + op_frequence.__all__ + layers.__all__
