"""Fluid 1.x's Python API: what a script calls to build, train and save programs.

``layers`` (the layer functions that append ops), ``optimizer``, ``initializer``,
``param_attr``, ``regularizer``, ``clip``, ``nets``, ``io``, ``data_feeder``, ``metrics``,
``compiler``, ``reader``, ``dataset``, ``contrib``, ``dygraph`` and ``paddle`` (Fluid 1.8's
``paddle.*`` namespace) build on the framework, the op table, ``autodiff`` and the
executor. Scripts reach these modules by Fluid's own paths (``fluid_nb.layers``,
``fluid_nb.optimizer`` ...; see ``fluid_nb.fluid_paths``).
"""
