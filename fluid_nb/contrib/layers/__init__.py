"""``fluid.contrib.layers``: the layers Fluid 1.8 keeps outside ``fluid.layers``."""
from . import rnn_impl
from .rnn_impl import BasicGRUUnit, BasicLSTMUnit, basic_gru, basic_lstm  # noqa: F401
from .embedding import fused_embedding_seq_pool  # noqa: F401

__all__ = list(rnn_impl.__all__) + ["fused_embedding_seq_pool"]
