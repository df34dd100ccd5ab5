"""A checking walk over protobuf wire bytes, driven by the message descriptors.

The protobuf runtime says only *that* bytes do not parse, and it accepts what a proto2
parser lets through (strings that are not UTF-8, enum values no one defined, a field sent
with the wrong wire type kept as an unknown field). This walk refuses all of these and
names the byte offset where each starts, and it records where every message begins, so
later checks of a parsed message can point at its bytes too.
"""
from google.protobuf.descriptor import FieldDescriptor as FD

from .. import c_parts
from ..errors import InvalidArgument, expected

# valid(data, tables, root): the same walk's checks in C, answering only "valid" or "not
# sure" (see _wire.c); a file it is not sure of is walked here, which words the refusal
_core = c_parts.load("fluid_nb.proto._wire", "the wire walk's C check")

_VARINT, _I64, _LEN, _SGROUP, _EGROUP, _I32 = 0, 1, 2, 3, 4, 5

_WIRE_OF = {
    FD.TYPE_DOUBLE: _I64, FD.TYPE_FIXED64: _I64, FD.TYPE_SFIXED64: _I64,
    FD.TYPE_FLOAT: _I32, FD.TYPE_FIXED32: _I32, FD.TYPE_SFIXED32: _I32,
    FD.TYPE_INT32: _VARINT, FD.TYPE_INT64: _VARINT, FD.TYPE_UINT32: _VARINT,
    FD.TYPE_UINT64: _VARINT, FD.TYPE_SINT32: _VARINT, FD.TYPE_SINT64: _VARINT,
    FD.TYPE_BOOL: _VARINT, FD.TYPE_ENUM: _VARINT,
    FD.TYPE_STRING: _LEN, FD.TYPE_BYTES: _LEN, FD.TYPE_MESSAGE: _LEN,
}
_MAX_DEPTH = 64


class Node:
    """Where one message starts (``start``) and where each of its fields' values start:
    ``fields[name]`` lists a :class:`Node` per sub-message, or a byte offset per value."""

    __slots__ = ("start", "fields")

    def __init__(self, start):
        self.start = start
        self.fields = {}

    def at(self, name, index=0):
        """The node or offset of the ``index``-th value of field ``name``; this node's own
        start when the field is absent (it was left at its default)."""
        values = self.fields.get(name)
        if not values or index >= len(values):
            return self
        return values[index]

    def offset(self, name=None, index=0):
        """The byte offset of a field's value (or of this message)."""
        found = self if name is None else self.at(name, index)
        return found.start if isinstance(found, Node) else found


#: how the C walk treats a field's value, by its type (see _tables_for)
_MESSAGE, _STRING, _ENUM, _OTHER = 0, 1, 2, 3
_KIND_OF = {FD.TYPE_MESSAGE: _MESSAGE, FD.TYPE_STRING: _STRING, FD.TYPE_ENUM: _ENUM}


class _Walk:
    def __init__(self, data, where):
        self.data = data
        self.where = where

    def fail(self, offset, what, want, got):
        raise InvalidArgument(expected(f"{self.where}: byte {offset}", what, want, got))

    def varint(self, pos, end, what):
        result = shift = 0
        start = pos
        while True:
            if pos >= end:
                self.fail(start, what, "a complete varint",
                          f"the data ending after {pos - start} bytes (truncated)")
            byte = self.data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result, pos
            shift += 7
            if shift >= 70:
                self.fail(start, what, "a varint of at most 10 bytes", "a longer one")

    def message(self, descriptor, pos, end, depth=0):
        if depth > _MAX_DEPTH:
            self.fail(pos, f"a {descriptor.name}", f"nesting below {_MAX_DEPTH} levels",
                      "deeper nesting")
        node = Node(pos)
        by_number = descriptor.fields_by_number
        seen = set()
        while pos < end:
            tag_at = pos
            tag, pos = self.varint(pos, end, f"field tag in {descriptor.name}")
            number, wire = tag >> 3, tag & 7
            if number == 0 or wire in (6, 7) or wire == _EGROUP:
                self.fail(tag_at, f"field tag in {descriptor.name}",
                          "a field number above 0 and a wire type 0-3 or 5",
                          f"field {number}, wire type {wire}")
            field = by_number.get(number)
            if field is None:  # an unknown field: legal protobuf, skipped as the parser does
                pos = self.skip(wire, number, pos, end, depth)
                continue
            seen.add(number)
            want = _WIRE_OF[field.type]
            packed = (wire == _LEN and field.is_repeated and want != _LEN)
            if wire != want and not packed:
                self.fail(tag_at, f"{descriptor.name}.{field.name}",
                          f"wire type {want}", f"wire type {wire}")
            values = node.fields.setdefault(field.name, [])
            if packed:
                length, pos = self.varint(pos, end, f"{descriptor.name}.{field.name} length")
                stop = self.span(pos, length, end, f"{descriptor.name}.{field.name}")
                while pos < stop:
                    values.append(pos)
                    pos = self.scalar(field, want, pos, stop, descriptor)
                continue
            values_at = pos
            if want == _LEN:
                length, pos = self.varint(pos, end, f"{descriptor.name}.{field.name} length")
                stop = self.span(pos, length, end, f"{descriptor.name}.{field.name}")
                if field.type == FD.TYPE_MESSAGE:
                    values.append(self.message(field.message_type, pos, stop, depth + 1))
                else:
                    values.append(values_at)
                    if field.type == FD.TYPE_STRING:
                        self.utf8(pos, stop, f"{descriptor.name}.{field.name}")
                pos = stop
            else:
                values.append(values_at)
                pos = self.scalar(field, want, pos, end, descriptor)
        for field in descriptor.fields:
            if field.is_required and field.number not in seen:
                self.fail(node.start, f"{descriptor.name}.{field.name}",
                          "a value (the field is required)", "none")
        return node

    def scalar(self, field, wire, pos, end, descriptor):
        what = f"{descriptor.name}.{field.name}"
        if wire == _VARINT:
            start = pos
            value, pos = self.varint(pos, end, what)
            if field.type == FD.TYPE_ENUM:
                if value >= 1 << 63:
                    value -= 1 << 64
                if field.enum_type.values_by_number.get(value) is None:
                    self.fail(start, what, f"a {field.enum_type.name} value",
                              f"{value}, which it does not define")
            return pos
        size = 8 if wire == _I64 else 4
        return self.span(pos, size, end, what)

    def span(self, pos, length, end, what):
        if pos + length > end:
            self.fail(pos, what, f"{length} bytes", f"{end - pos} left (truncated)")
        return pos + length

    def utf8(self, pos, stop, what):
        try:
            bytes(self.data[pos:stop]).decode("utf-8")
        except UnicodeDecodeError as exc:
            self.fail(pos + exc.start, what, "UTF-8 text",
                      f"byte 0x{self.data[pos + exc.start]:02x}, which is not UTF-8")

    def skip(self, wire, number, pos, end, depth):
        if wire == _VARINT:
            return self.varint(pos, end, f"unknown field {number}")[1]
        if wire == _I64:
            return self.span(pos, 8, end, f"unknown field {number}")
        if wire == _I32:
            return self.span(pos, 4, end, f"unknown field {number}")
        if wire == _LEN:
            length, pos = self.varint(pos, end, f"unknown field {number} length")
            return self.span(pos, length, end, f"unknown field {number}")
        # a group: fields up to the matching end tag
        if depth > _MAX_DEPTH:
            self.fail(pos, f"unknown group {number}", f"nesting below {_MAX_DEPTH} levels",
                      "deeper nesting")
        while True:
            tag_at = pos
            tag, pos = self.varint(pos, end, f"unknown group {number}")
            if tag & 7 == _EGROUP:
                if tag >> 3 != number:
                    self.fail(tag_at, f"end of group {number}", f"group {number}",
                              f"the end of group {tag >> 3}")
                return pos
            if tag >> 3 == 0 or tag & 7 in (6, 7):
                self.fail(tag_at, f"field tag in unknown group {number}",
                          "a field number above 0 and a wire type 0-5",
                          f"field {tag >> 3}, wire type {tag & 7}")
            pos = self.skip(tag & 7, tag >> 3, pos, end, depth + 1)


def check_message(data, descriptor, where):
    """Walk ``data`` as a ``descriptor`` message; InvalidArgument naming the byte offset of
    the first problem. Returns the root :class:`Node` (where each message begins)."""
    data = bytes(data)
    return _Walk(data, where).message(descriptor, 0, len(data))


def check_file(data, descriptor, where):
    """:func:`check_message` for a whole file: the C walk checks ``data`` first, and only
    bytes it is not sure of are walked in Python (which refuses them, or finds them fine).
    Returns a :class:`Deferred` root: the offsets of a file that passed are worked out when
    a later check asks for one (it does when it refuses something)."""
    data = bytes(data)
    tables, root = _tables_for(descriptor)
    if _core.valid(data, tables, root):
        return Deferred(lambda: check_message(data, descriptor, where))
    return check_message(data, descriptor, where)


class Deferred:
    """A :class:`Node` (or a place under one: ``root.at("blocks", 1).at("ops", 3)``) whose
    walk runs when an offset is first asked for; every place shares the one walk."""

    __slots__ = ("_walk", "_path")

    def __init__(self, walk, path=()):
        self._walk = walk if path else _once(walk)
        self._path = path

    def at(self, name, index=0):
        return Deferred(self._walk, self._path + ((name, index),))

    def offset(self, name=None, index=0):
        node = self._walk()
        for field, position in self._path:
            node = node.at(field, position)
        return node.offset(name, index) if isinstance(node, Node) else node


def _once(walk):
    done = []

    def walked():
        if not done:
            done.append(walk())
        return done[0]
    return walked


def _tables_for(descriptor, _cache={}):
    """``(tables, index of descriptor)`` for the C walk: one ``(fields, required)`` entry per
    message type reachable from ``descriptor``, ``fields`` a dict field number -> (wire
    type, kind, sub-message entry or -1, enum values or None, repeated)."""
    known = _cache.get(descriptor)
    if known is None:
        order, index = [descriptor], {descriptor.full_name: 0}
        entries = []
        while len(entries) < len(order):
            message_type = order[len(entries)]
            fields = {}
            for field in message_type.fields:
                sub = -1
                if field.type == FD.TYPE_MESSAGE:
                    name = field.message_type.full_name
                    if name not in index:
                        index[name] = len(order)
                        order.append(field.message_type)
                    sub = index[name]
                kind = _KIND_OF.get(field.type, _OTHER)
                values = frozenset(field.enum_type.values_by_number) if kind == _ENUM \
                    else None
                fields[field.number] = (_WIRE_OF[field.type], kind, sub, values,
                                        field.is_repeated)
            required = tuple(f.number for f in message_type.fields if f.is_required)
            entries.append((fields, required))
        known = _cache[descriptor] = (tuple(entries), 0)
    return known
