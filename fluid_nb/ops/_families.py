"""Imports every op family so each registers its ops (the registry loads this lazily)."""
from . import (  # noqa: F401
    io_ops, math, activation, nn, conv, norm, loss, creation, shape, tensor, metric, lookup,
    compare, optimizer_ops, clip_ops, init_ops, sequence,
    sequence_conv, sequence_layout, lod_ops, array_ops, rnn,
    control_flow, math_functions, indexing, vision, detection, crf, beam_search,
    similarity, detection_heads, detection_losses, detection_training, detection_fpn,
    decoding_ops, rnn_lstm, memory_ops, distributed)
