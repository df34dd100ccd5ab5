"""``fluid.contrib.layers``: the layers Fluid 1.8 keeps outside ``fluid.layers``."""
from . import nn, pyramid_hash, rnn_impl, tdm
from .nn import *  # noqa: F401,F403
from .rnn_impl import BasicGRUUnit, BasicLSTMUnit, basic_gru, basic_lstm  # noqa: F401
from .pyramid_hash import search_pyramid_hash  # noqa: F401
from .tdm import tdm_child, tdm_sampler  # noqa: F401
from .embedding import fused_embedding_seq_pool  # noqa: F401

__all__ = (list(rnn_impl.__all__) + list(nn.__all__) + list(tdm.__all__)
           + list(pyramid_hash.__all__) + ['fused_embedding_seq_pool'])
