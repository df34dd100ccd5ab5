"""The vision op family (image-shaped ops other than 2-D convolution and normalisation);
each concept in its own module, imported here so the family registers them all: N-D
convolution and pooling (``conv_nd``), image resizing (``interp``), ROI pooling (``roi``),
rearrangements and small per-channel maps (``rearrange``), sampling grids and patches
(``sampling``), deformable convolution (``deformable``)."""
from . import conv_nd  # noqa: F401
from . import interp  # noqa: F401
from . import roi  # noqa: F401
from . import rearrange  # noqa: F401
from . import sampling  # noqa: F401
from . import deformable  # noqa: F401
