"""``fluid.layers.device``: Fluid 1.x's ``get_places`` (deprecated there since 1.6), which
made a list of places for the ParallelDo op that later releases removed."""
from ...errors import Unimplemented, expected

__all__ = ["get_places"]


def get_places(device_count=None, device_type=None):
    """Refused: its only consumer, ParallelDo, is not part of Fluid 1.8 or fluid_nb; use
    ``fluid.CompiledProgram(...).with_data_parallel`` or ``fluid.cuda_places()``."""
    raise Unimplemented(expected("get_places", "an API of Fluid 1.8", "CompiledProgram."
                                 "with_data_parallel or fluid.cuda_places()/cpu_places()",
                                 "get_places, the ParallelDo-era layer Fluid removed"))
