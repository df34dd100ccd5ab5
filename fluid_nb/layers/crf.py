"""Sequence labelling layers: linear_chain_crf, crf_decoding, chunk_eval."""

__all__ = []
