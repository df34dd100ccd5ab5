"""What fluid_nb's tests run on besides the real places: ``strict_device``, a stand-in for
CuPy with device memory's rules made strict, so machines without a GPU check device code."""
