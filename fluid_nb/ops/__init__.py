"""Op definitions: one record per op type in a family module; see ``registry``."""
from .registry import all_ops, def_op, find, get, grad_maker, make_grad_ops  # noqa: F401
