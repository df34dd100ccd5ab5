// The runtime library: the parts of the host runtime no program changes, compiled once per
// compiler (at install, or into the build cache on first use) and linked by every program
// built for a Python process (build.py): the single-threaded matrix product
// (fluid_native_gemm.h) and the template instances fluid_native_instances.h lists. A
// program's build then parses these headers but optimises only its own functions.
#define FLUID_NATIVE_RUNTIME_LIBRARY 1

#include "fluid_native_dynamic.h"
