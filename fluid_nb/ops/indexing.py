"""Index and layout op family: gather_nd, scatter, expand, crop, strided_slice, unstack, pad, ..."""
