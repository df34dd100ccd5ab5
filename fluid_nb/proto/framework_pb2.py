"""Message classes of ``framework.proto``, built from the committed descriptor set.

``framework.desc`` is produced from ``framework.proto`` by ``tools/gen_proto.py``; building the
classes at import (instead of committing protoc's Python output) works with every protobuf
runtime from 4.21 on, so fluid_nb installs beside other packages that pin protobuf.
"""
import pathlib

from google.protobuf import descriptor_pb2, descriptor_pool

try:
    from google.protobuf.message_factory import GetMessageClass as _message_class
except ImportError:  # protobuf < 4.21
    from google.protobuf import message_factory as _mf

    def _message_class(descriptor, _factory=_mf.MessageFactory()):
        return _factory.GetPrototype(descriptor)

_PACKAGE = "paddle.framework.proto"
_pool = descriptor_pool.DescriptorPool()
_files = descriptor_pb2.FileDescriptorSet.FromString(
    (pathlib.Path(__file__).with_name("framework.desc")).read_bytes())
for _file in _files.file:
    _pool.Add(_file)


def _message(name):
    return _message_class(_pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))


Version = _message("Version")
Complex = _message("Complex")
Scalar = _message("Scalar")
OpDesc = _message("OpDesc")
OpProto = _message("OpProto")
VarType = _message("VarType")
VarDesc = _message("VarDesc")
BlockDesc = _message("BlockDesc")
OpVersion = _message("OpVersion")
OpVersionMap = _message("OpVersionMap")
ProgramDesc = _message("ProgramDesc")
AttrType = _pool.FindEnumTypeByName(f"{_PACKAGE}.AttrType")
DESCRIPTOR_POOL = _pool
