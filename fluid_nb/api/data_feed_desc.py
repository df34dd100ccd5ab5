"""``fluid.DataFeedDesc``: the description of a slot-based data file, read from and written
as protobuf text (Paddle's ``paddle.framework.DataFeedDesc`` message).

    desc = fluid.DataFeedDesc("data.proto")   # name: "MultiSlotDataFeed"  batch_size: 2 ...
    desc.set_batch_size(128)
    desc.set_dense_slots(["words"])
    desc.set_use_slots(["words", "label"])
    print(desc.desc())                         # the text again, with the changes

The messages, their field numbers (the order ``desc()`` writes them in) and defaults:

    DataFeedDesc: name 1, batch_size 2 (32), multi_slot_desc 3, pipe_command 4,
                  thread_num 5, rank_offset 6, pv_batch_size 7 (32)
    MultiSlotDesc: slots 1 (repeated Slot)
    Slot: name 1, type 2, is_dense 3 (false), is_used 4 (false), shape 5 (repeated int)

As in proto2, a field is written only when the file gave it or a setter set it. Fluid
hands the description to its C++ dataset readers; fluid_nb keeps it as a description
(its data enters through ``DataLoader``).
"""
import re

from ..errors import InvalidArgument, InvalidType, NotFound, expected

__all__ = ["DataFeedDesc"]

# message -> [(field, kind, repeated)], in field-number order; kind: a type or a message name
_SCHEMA = {
    "DataFeedDesc": [("name", str, False), ("batch_size", int, False),
                     ("multi_slot_desc", "MultiSlotDesc", False),
                     ("pipe_command", str, False), ("thread_num", int, False),
                     ("rank_offset", str, False), ("pv_batch_size", int, False)],
    "MultiSlotDesc": [("slots", "Slot", True)],
    "Slot": [("name", str, False), ("type", str, False), ("is_dense", bool, False),
             ("is_used", bool, False), ("shape", int, True)],
}
_DEFAULTS = {"batch_size": 32, "pv_batch_size": 32, "thread_num": 0, "is_dense": False,
             "is_used": False}

_TOKEN = re.compile(r'\s*(?:#[^\n]*\n\s*)*("(?:[^"\\]|\\.)*"|[{}:]|[^\s{}:"]+)')


class _Message:
    """A protobuf message as an ordered dict of the fields present."""

    def __init__(self, kind):
        self.kind = kind
        self.fields = {}

    def get(self, name):
        if name in self.fields:
            return self.fields[name]
        return [] if self._field(name)[2] else _DEFAULTS.get(name, "")

    def _field(self, name):
        for field in _SCHEMA[self.kind]:
            if field[0] == name:
                return field
        raise InvalidArgument(expected("DataFeedDesc", f"a field of {self.kind}",
                                       "one of " + ", ".join(f[0] for f in _SCHEMA[self.kind]),
                                       repr(name)))


def _tokens(text):
    position, found = 0, []
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match:
            raise InvalidArgument(expected("DataFeedDesc", "protobuf text", "a field",
                                           repr(text[position:position + 20])))
        found.append(match.group(1))
        position = match.end()
    return found


def _scalar(kind, token, field):
    try:
        if kind is str:
            if not (token.startswith('"') and token.endswith('"')):
                raise ValueError
            return bytes(token[1:-1], "utf-8").decode("unicode_escape")
        if kind is bool:
            return {"true": True, "false": False, "1": True, "0": False}[token]
        return int(token)
    except (ValueError, KeyError):
        raise InvalidArgument(expected("DataFeedDesc", f"field {field}",
                                       f"a {kind.__name__} value", repr(token))) from None


def _parse(tokens, position, message, closing):
    while position < len(tokens) and tokens[position] != closing:
        name, kind, repeated = message._field(tokens[position])
        position += 1
        if isinstance(kind, str):  # a nested message: `name {` ... `}` (the colon optional)
            if tokens[position] == ":":
                position += 1
            if tokens[position] != "{":
                raise InvalidArgument(expected("DataFeedDesc", f"field {name}", "'{'",
                                               repr(tokens[position])))
            value = _Message(kind)
            position = _parse(tokens, position + 1, value, "}") + 1
        else:
            if tokens[position] != ":":
                raise InvalidArgument(expected("DataFeedDesc", f"field {name}", "':'",
                                               repr(tokens[position])))
            value = _scalar(kind, tokens[position + 1], name)
            position += 2
        if repeated:
            message.fields.setdefault(name, []).append(value)
        else:
            message.fields[name] = value
    if closing == "}" and position >= len(tokens):
        raise InvalidArgument(expected("DataFeedDesc", "protobuf text", "a closing '}'",
                                       "the end of the text"))
    return position


def _text(message, indent=""):
    lines = []
    for name, kind, repeated in _SCHEMA[message.kind]:
        if name not in message.fields:
            continue
        values = message.fields[name] if repeated else [message.fields[name]]
        for value in values:
            if isinstance(value, _Message):
                lines += [f"{indent}{name} {{", _text(value, indent + "  "), f"{indent}}}"]
            elif isinstance(value, bool):
                lines.append(f"{indent}{name}: {'true' if value else 'false'}")
            elif isinstance(value, str):
                escaped = value.replace("\\", "\\\\").replace('"', '\\"')
                lines.append(f'{indent}{name}: "{escaped}"')
            else:
                lines.append(f"{indent}{name}: {value}")
    return "\n".join(line for line in lines if line)


class DataFeedDesc:
    """A data feed description read from the protobuf text file ``proto_file``."""

    def __init__(self, proto_file):
        if not isinstance(proto_file, str):
            raise InvalidType(expected("DataFeedDesc", "proto_file", "a file path",
                                       type(proto_file).__name__))
        with open(proto_file) as f:
            text = f.read()
        self.proto_desc = _Message("DataFeedDesc")
        self.proto_desc.fields["pipe_command"] = "cat"  # Fluid's default command
        _parse(_tokens(text), 0, self.proto_desc, None)

    def _slots(self, where):
        if self.proto_desc.get("name") != "MultiSlotDataFeed":
            raise InvalidArgument(expected(
                where, "the feed's name", '"MultiSlotDataFeed" (only it has slots)',
                repr(self.proto_desc.get("name"))))
        slots_desc = self.proto_desc.get("multi_slot_desc")
        return {slot.get("name"): slot for slot in (slots_desc.get("slots") if slots_desc
                                                    else [])}

    def _mark(self, where, names, field):
        if not isinstance(names, (list, tuple)):
            raise InvalidType(expected(where, "slot names", "a list of str",
                                       type(names).__name__))
        slots = self._slots(where)
        for name in names:
            if name not in slots:
                raise NotFound(expected(where, "slot name", "one of " + ", ".join(slots),
                                        repr(name)))
        for name in names:
            slots[name].fields[field] = True

    def set_batch_size(self, batch_size):
        """The number of samples a trainer reads per batch."""
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise InvalidArgument(expected("DataFeedDesc.set_batch_size", "batch_size",
                                           "a positive int", repr(batch_size)))
        self.proto_desc.fields["batch_size"] = batch_size

    def set_dense_slots(self, dense_slots_name):
        """Mark the named slots dense (a fixed-size tensor rather than a LoD sequence)."""
        self._mark("DataFeedDesc.set_dense_slots", dense_slots_name, "is_dense")

    def set_use_slots(self, use_slots_name):
        """Mark the named slots as read for training (slots are unused by default)."""
        self._mark("DataFeedDesc.set_use_slots", use_slots_name, "is_used")

    def desc(self):
        """The description as protobuf text."""
        return _text(self.proto_desc) + "\n"
