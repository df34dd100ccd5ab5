"""``sync_batch_norm``: batch_norm whose batch statistics are gathered across the devices
of a data-parallel run. One process holds one device here, so its statistics are the
device's own: the op is batch_norm under another name (same slots, attributes, kernels and
gradient), which lets programs written for multi-GPU training load and run."""
from ..framework.registry import def_op, get


def _renamed_grad(batch_norm_maker):
    def make(g):
        specs = batch_norm_maker(g)
        for spec in specs:
            spec.type = "sync_batch_norm_grad"
        return specs
    make.grad_type = "sync_batch_norm_grad"
    return make


def _define():
    for source, target, grad in (("batch_norm", "sync_batch_norm", True),
                                 ("batch_norm_grad", "sync_batch_norm_grad", False)):
        bn = get(source)
        def_op(target, inputs=[repr(s) for s in bn.inputs],
               outputs=[repr(s) for s in bn.outputs], attrs=dict(bn.attrs),
               infer_shape=bn.infer_shape, share_lod=bn.share_lod,
               grad=_renamed_grad(bn.grad) if grad else None, kernels=bn.kernels,
               traits=bn.traits,
               doc=f"{source} on this process's device alone (see the module docstring).\n\n"
                   + (bn.doc or ""))


_define()
