"""The Fluid 1.6+ RNN API: RNNCell, GRUCell, LSTMCell and rnn()."""

__all__ = []
