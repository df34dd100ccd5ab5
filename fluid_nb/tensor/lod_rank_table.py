"""LoDRankTable: the sequences of one LoD level ranked by length, as Paddle's.

DynamicRNN runs a batch of sequences time step by time step. To keep each step's batch a
contiguous prefix, it first ranks the sequences by length (longest first): at step ``t``
the sequences still running are exactly the first ``k`` of the ranking.

The table is a list of ``(index, length)`` pairs: ``index`` is the sequence's position in
LoD level ``level`` of the ranked tensor, ``length`` the number of items (rows, or
sequences of the next level) it holds. The sort is stable, so equal lengths keep their
original order. ``coarse_lod`` keeps the LoD levels above ``level`` (offsets), so that
``array_to_lod_tensor`` can rebuild the whole LoD.
"""
from bisect import bisect_left

from ..errors import InvalidArgument, expected


class LoDRankTable(list):
    """``[(index, length), ...]`` sorted by length, descending (stable).

    A list subclass so that the executor stores it as a runtime value as it is. Like every
    value it is not changed once made: ``batch_size_at`` reads lengths kept at construction.
    """

    __slots__ = ("coarse_lod", "_negated_lengths")

    def __init__(self, items=(), coarse_lod=()):
        super().__init__((int(i), int(n)) for i, n in items)
        self.coarse_lod = [list(level) for level in coarse_lod]
        self._negated_lengths = [-n for _, n in self]

    @classmethod
    def _of_ints(cls, items, coarse_lod):
        """A table of ``(int, int)`` pairs already ranked, taking ``coarse_lod`` as it is:
        the constructor without its conversions."""
        table = cls.__new__(cls)
        list.extend(table, items)
        table.coarse_lod = coarse_lod
        # ascending, so that bisect counts the sequences longer than a step
        table._negated_lengths = [-n for _, n in items]
        return table

    @classmethod
    def from_lod(cls, lod, level=0, where="lod_rank_table"):
        """The table of LoD ``lod`` (offsets) at ``level``."""
        if not 0 <= level < len(lod):
            raise InvalidArgument(expected(where, "attribute 'level'",
                                           f"in [0, {len(lod)}) (the LoD depth of X)", level))
        offsets = list(map(int, lod[level]))
        lengths = [b - a for a, b in zip(offsets, offsets[1:])]
        # sorted() is stable with reverse=True too, as std::stable_sort
        order = sorted(range(len(lengths)), key=lengths.__getitem__, reverse=True)
        return cls._of_ints([(i, lengths[i]) for i in order],
                            [list(level) for level in lod[:level]])

    def copy(self):
        """A new table equal to this one (its coarse LoD copied too)."""
        return self._of_ints(list(self), [list(level) for level in self.coarse_lod])

    @property
    def level(self):
        """The ranked LoD level (the number of coarser levels kept)."""
        return len(self.coarse_lod)

    def items(self):
        """The ``(index, length)`` pairs, as Paddle's ``LoDRankTable.items()``."""
        return list(self)

    def lengths_by_index(self):
        """Sequence lengths in their original order."""
        lengths = [0] * len(self)
        for index, length in self:
            lengths[index] = length
        return lengths

    def batch_size_at(self, step):
        """How many sequences are longer than ``step`` (the batch size of time step
        ``step``): a prefix of the ranking, since lengths descend."""
        return bisect_left(self._negated_lengths, -step)

    def __repr__(self):
        return f"LoDRankTable(level={self.level}, items={list(self)})"
