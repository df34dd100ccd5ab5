"""Program rewriters and targets: memory_optimize, the distribute transpiler,
the native code generator, ONNX export.

Each subpackage takes a built Program and produces a rewritten Program (memory_optimize,
transpiler) or another representation of it (native C++/CUDA source, an ONNX model).
"""
