"""Imports every op family so each registers its ops (the registry loads this lazily)."""
from . import (  # noqa: F401
    io_ops, math, activation, nn, conv, norm, loss, creation, shape, tensor, metric, lookup,
    compare, optimizer_ops, clip_ops, init_ops, sequence,
    sequence_conv, sequence_layout, lod_ops, array_ops, rnn,
    control_flow, math_functions, indexing, vision, detection, crf, beam_search,
    similarity, detection_heads, detection_losses, detection_training, detection_fpn,
    decoding_ops, rnn_lstm, rnn_v2, memory_ops, distributed, shape_v1,
    vector_norms, classification_losses, optimizer_proximal, metric_counts,
    pieces, fills, shuffle, minus, pool_unpool, circular_conv, fc, fused_elementwise,
    compare_reduce, fusion_seqpool, fusion_rnn, fusion_fc, fusion_embedding,
    sync_batch_norm, tdm, match_matrix,
    rnn_memory_helper, var_conv, tree_conv, sequence_topk, file_ops, quantize, detection_map,
    sparse_ids, pyramid_hash, dgc, rank_attention)
