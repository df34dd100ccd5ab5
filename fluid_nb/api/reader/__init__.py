"""``fluid.reader`` / ``paddle.reader``: reader decorators."""
from . import decorator, loader  # noqa: F401  (loader attaches the read op's kernel)
from .decorator import *  # noqa: F401,F403
from .decorator import __all__  # noqa: F401
