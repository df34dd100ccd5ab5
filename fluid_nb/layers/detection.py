"""Detection layers of Fluid 1.8: prior boxes, box coding, non-maximum suppression, RoI pooling, ..."""

__all__ = []
