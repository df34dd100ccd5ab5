"""The dictionary rule Paddle's imikolov and imdb share, and the text decoding both use."""

UNK = "<unk>"


def decode(raw):
    """A word's bytes as str. Undecodable bytes become lone surrogates, so no two words
    merge and :func:`encode` gives the bytes back."""
    return raw.decode("utf-8", "surrogateescape")


def encode(word):
    return word.encode("utf-8", "surrogateescape")


def build_word_idx(word_freq, cutoff):
    """word -> id for the words counted more than ``cutoff`` times: most frequent first,
    ties in byte order (as Paddle sorts its byte-string words), then ``<unk>`` as the last
    id. A ``<unk>`` in the counts is dropped first: the text's own unknown marker shares
    the id of every word left out."""
    kept = [(w, c) for w, c in word_freq.items() if c > cutoff and w != UNK]
    kept.sort(key=lambda wc: (-wc[1], encode(wc[0])))
    word_idx = {w: i for i, (w, _) in enumerate(kept)}
    word_idx[UNK] = len(word_idx)
    return word_idx
