"""Reverse-mode differentiation of programs: ``append_backward`` / ``gradients``
(:mod:`.backward`) and backward with checkpoints (:mod:`.recompute`). Above the executor's
layer and below the Python API: it appends grad ops, built by each op's grad maker."""
