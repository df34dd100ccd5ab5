"""Decoding layers: beam_search, beam_search_decode, Decoder, BeamSearchDecoder, dynamic_decode."""

__all__ = []
