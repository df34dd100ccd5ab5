"""Beam search op family: beam_search, beam_search_decode, gather_tree."""
