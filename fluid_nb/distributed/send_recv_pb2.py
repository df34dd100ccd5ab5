"""Message classes of ``send_recv.proto`` (the parameter server's wire format), built from
the committed descriptor set ``send_recv.desc`` (``tools/gen_proto.py`` writes it), as
:mod:`fluid_nb.proto.framework_pb2` does for programs: any protobuf runtime from 4.21 on.
"""
import pathlib

from google.protobuf import descriptor_pb2, descriptor_pool

try:
    from google.protobuf.message_factory import GetMessageClass as _message_class
except ImportError:  # protobuf < 4.21
    from google.protobuf import message_factory as _mf

    def _message_class(descriptor, _factory=_mf.MessageFactory()):
        return _factory.GetPrototype(descriptor)

PACKAGE = "sendrecv"
SERVICE = f"{PACKAGE}.SendRecvService"

_pool = descriptor_pool.DescriptorPool()
for _file in descriptor_pb2.FileDescriptorSet.FromString(
        pathlib.Path(__file__).with_name("send_recv.desc").read_bytes()).file:
    _pool.Add(_file)

VariableMessage = _message_class(_pool.FindMessageTypeByName(f"{PACKAGE}.VariableMessage"))
VoidMessage = _message_class(_pool.FindMessageTypeByName(f"{PACKAGE}.VoidMessage"))
VariableBatch = _message_class(_pool.FindMessageTypeByName(f"{PACKAGE}.VariableBatch"))
#: the kinds of variable a message carries (``VariableMessage.type``)
LOD_TENSOR, SELECTED_ROWS = (_pool.FindEnumTypeByName(f"{PACKAGE}.VarType")
                             .values_by_name[n].number for n in ("LOD_TENSOR", "SELECTED_ROWS"))
#: the service's methods, by name
METHODS = tuple(m.name for m in _pool.FindServiceByName(SERVICE).methods)
#: the message class each method's request is (VariableMessage but for the batched call)
REQUESTS = {m.name: _message_class(m.input_type)
            for m in _pool.FindServiceByName(SERVICE).methods}
#: the batched call: a trainer's exchange of one step with one server
BATCH_METHOD = "SendAndGetVariables"
DESCRIPTOR_POOL = _pool
