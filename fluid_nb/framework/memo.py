"""The memos that spare a repeated call its work (an op's completed attributes, an
inference, what an index appends, a kernel's index or plan): each keeps at most
``MOST_ANSWERS`` answers, and is cleared when full, so a session that goes through ever
new shapes or values keeps a few rather than all of them."""

MOST_ANSWERS = 256


def remember(memo, key, value):
    """``value`` kept in ``memo`` under ``key`` (the memo cleared first when full); returns
    ``value``."""
    if len(memo) >= MOST_ANSWERS:
        memo.clear()
    memo[key] = value
    return value
