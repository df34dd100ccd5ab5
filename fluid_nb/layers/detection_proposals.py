"""Fluid 1.8 layers (filled in as their ops arrive)."""

__all__ = []
