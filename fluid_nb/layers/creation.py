"""Layers that make tensors: range, linspace, full, eye, diag, random integers and permutations, ..."""

__all__ = []
