"""``fluid.unique_name``: the module path Fluid 1.x scripts import unique names from
(``from paddle.fluid.unique_name import guard``); the generator lives in
``framework/unique_name.py`` and this module hands out the same functions."""
from .framework.unique_name import (UniqueNameGenerator, generate,  # noqa: F401
                                    generate_with_ignorable_key, guard, switch)

__all__ = ["generate", "switch", "guard"]
