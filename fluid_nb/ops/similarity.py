"""Similarity op family: cos_sim."""
