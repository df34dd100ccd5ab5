"""``rnn_memory_helper``: the identity that older Fluid recurrent programs put between a
step's memory and its use, so the memory has a variable of its own; its gradient passes
Out@GRAD through, or zeros where no gradient reached Out."""
from ..framework.registry import def_op, grad_maker, grads_like, same_shape
from ..tensor.dtypes import VarType
from ..tensor.tensor import LoDTensor

_ATTRS = {"dtype": ("int", int(VarType.FP32))}


def _grad(ctx, x, out, dout):
    given = dout is not None and getattr(dout, "array", None) is not None
    if given:
        return LoDTensor(dout.array.copy(), x.lod())
    return LoDTensor(ctx.xp.zeros_like(x.array), x.lod())


def_op("rnn_memory_helper", inputs=["X"], outputs=["Out"], attrs=_ATTRS,
       infer_shape=same_shape("X", "Out"), share_lod=("X", ["Out"]),
       grad=grad_maker("rnn_memory_helper_grad", inputs=["X"], outputs=["Out"],
                       out_grads=["Out"], in_grads=["X"]),
       kernel=lambda ctx, x: x.copy(), doc="Out = X.")
def_op("rnn_memory_helper_grad", inputs=["X", "Out", "Out@GRAD?"], outputs=["X@GRAD"],
       attrs=_ATTRS, infer_shape=grads_like(**{"X@GRAD": "X"}), kernel=_grad, lod_aware=True,
       doc="X@GRAD = Out@GRAD, or zeros like X when Out@GRAD is absent or holds no value.")
