"""``python -m fluid_nb.cli``: the ``fluid-nb`` command."""
import sys

from .commands import main

sys.exit(main())
