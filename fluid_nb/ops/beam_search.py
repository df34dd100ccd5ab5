"""Beam search op family: one step of the search (``beam_search``) and the backtrace of
the steps into sentences (``beam_search_decode``), on Fluid's two-level LoD.

A step's candidates come as rows (one per prefix, i.e. per hypothesis kept so far) of
``ids`` and ``scores``; level 0 of their LoD groups the prefixes by source sentence. For
each source the ``beam_size`` best candidates over all its prefixes are kept; a prefix
that already ended (its ``pre_id`` is ``end_id``) offers only itself, with its score. The
kept items go out grouped by prefix (level 1 of the output LoD counts them per prefix),
best first within a prefix, with ``parent_idx`` naming each one's prefix row. On equal
scores the candidate of the later prefix row ranks higher (Paddle's order). A source
whose kept items all continue ended prefixes is finished and drops out (no items).
"""
import numpy as np

from ..errors import InvalidArgument, expected
from ..tensor.tensor import LoDTensor, LoDTensorArray
from ..framework.registry import def_op, no_gradient


def _ranks_below(a, b):
    """Paddle's order of candidates ``(score, row, id)``: by score, and on equal scores the
    candidate of the later prefix row ranks higher."""
    return a[0] < b[0] or (a[0] == b[0] and a[1] < b[1])


def _insert(best, candidate, beam_size):
    """Insert ``candidate`` into ``best`` (best first, at most ``beam_size`` long) the way
    Paddle's bounded insertion does: after every candidate it does not outrank, so equal
    candidates keep their arrival order, and a full list drops its last entry for a
    candidate that is not below it (the later of two equals takes the last place)."""
    if len(best) == beam_size:
        if _ranks_below(candidate, best[-1]):
            return
        best.pop()
    position = 0
    while position < len(best) and not _ranks_below(best[position], candidate):
        position += 1
    best.insert(position, candidate)


def _select(pre_ids, pre_scores, ids, scores, high_level, beam_size, end_id, accumulated):
    """Per prefix row: the kept items ``(score, id)``, best first."""
    kept = [[] for _ in range(high_level[-1])]
    width = scores.shape[1] if scores.ndim > 1 else 1
    for start, end in zip(high_level, high_level[1:]):
        best = []  # (score, row, id), best first
        for row in range(start, end):
            pre_id, pre_score = pre_ids[row], pre_scores[row]
            if pre_id == end_id:
                _insert(best, (pre_score, row, end_id), beam_size)
                continue
            for column in range(width):
                score = scores[row, column]
                if not accumulated:  # in the scores' precision, as the kernel computes it
                    score = pre_score + np.log(score)
                candidate_id = ids[row, column] if ids is not None else column
                _insert(best, (score, row, int(candidate_id)), beam_size)
        if all(pre_ids[row] == end_id and cid == end_id for _, row, cid in best):
            continue  # every kept item continues an ended prefix: the source is finished
        for score, row, cid in best:
            kept[row].append((score, cid))
    return kept


def _absolute(lod, level):
    """LoD level ``level`` as row offsets (the deeper levels applied), as Paddle's
    ToAbsOffset gives it: the prefixes of each source as rows of the candidates."""
    offsets = list(lod[level])
    for deeper in lod[level + 1:]:
        offsets = [deeper[i] for i in offsets]
    return offsets


def _beam_search(ctx, pre_ids, pre_scores, ids, scores):
    a = ctx.attrs
    lod = scores.lod() if scores.lod() else (ids.lod() if ids is not None else [])
    if len(lod) <= a["level"]:
        raise InvalidArgument(expected("beam_search", "scores' LoD",
                                       f"at least {a['level'] + 1} levels (sources, prefixes)",
                                       lod))
    high_level = _absolute(lod, a["level"])
    score_array = np.asarray(scores)
    if score_array.ndim == 1:
        score_array = score_array.reshape(-1, 1)
    id_array = np.asarray(ids).reshape(score_array.shape[0], -1) if ids is not None else None
    if score_array.shape[0] != high_level[-1]:
        raise InvalidArgument(expected("beam_search", "rows of scores",
                                       f"{high_level[-1]} (one per prefix, as the LoD says)",
                                       score_array.shape[0]))
    kept = _select(np.asarray(pre_ids).reshape(-1),
                   np.asarray(pre_scores).reshape(-1).astype(score_array.dtype),
                   id_array, score_array, high_level, a["beam_size"], a["end_id"],
                   a["is_accumulated"])
    low_level, out_ids, out_scores, parents = [0], [], [], []
    for row, items in enumerate(kept):
        for score, cid in items:
            out_ids.append(cid)
            out_scores.append(score)
            parents.append(row)
        low_level.append(len(out_ids))
    out_lod = [list(high_level), low_level]
    xp = ctx.xp
    selected_ids = LoDTensor(xp.asarray(np.array(out_ids, "int64").reshape(-1, 1)), out_lod)
    selected_scores = LoDTensor(xp.asarray(np.array(out_scores, score_array.dtype).reshape(
        -1, 1)), out_lod)
    parent_idx = LoDTensor(xp.asarray(np.array(parents, "int32")))
    return selected_ids, selected_scores, parent_idx


def _beam_search_infer(ctx):
    ctx.set_output("selected_ids", (-1, 1), ctx.input_dtype("pre_ids"), lod_level=2)
    ctx.set_output("selected_scores", (-1, 1), ctx.input_dtype("scores"), lod_level=2)
    if ctx.has_output("parent_idx"):
        from ..tensor.dtypes import VarType
        ctx.set_output("parent_idx", (-1,), VarType.INT32)


def_op("beam_search", inputs=["pre_ids", "pre_scores", "ids?", "scores"],
       outputs=["selected_ids", "selected_scores", "parent_idx?"],
       attrs={"level": ("int", 0), "beam_size": ("int", None), "end_id": ("int", None),
              "is_accumulated": ("bool", True)},
       infer_shape=_beam_search_infer, grad=no_gradient, kernel=_beam_search, lod_aware=True,
       host_reads="pre_ids, pre_scores, ids, scores: each prefix's candidates are ranked on "
                  "the host, and how many a source keeps decides the output's LoD",
       traits={"runtime_outputs"},
       doc="One beam search step (see the module docstring): candidates' score = scores "
           "(is_accumulated) or pre_score + log(scores); the beam_size best per source; "
           "selected_ids/selected_scores [n, 1] with LoD [sources' prefixes, kept per "
           "prefix]; parent_idx the prefix row of each kept item.")


# --- beam_search_decode ----------------------------------------------------------------------
def _backtrace(steps_ids, steps_scores, end_id):
    """Sentences per source: lists of (word ids, scores), last word first."""
    sources = len(steps_ids[0].lod()[0]) - 1
    sentences = [[] for _ in range(sources)]
    prefixes = [[] for _ in range(sources)]  # per hypothesis: its candidate row at this step
    for ids, scores in zip(reversed(steps_ids), reversed(steps_scores)):
        high, low = ids.lod()[0], ids.lod()[1]
        id_values = np.asarray(ids).reshape(-1)
        score_values = np.asarray(scores).reshape(-1)
        for src in range(sources):
            start, end = high[src], high[src + 1]
            if not prefixes[src]:  # the source's last step with items: they start sentences
                for prefix in range(start, end):
                    for row in range(low[prefix], low[prefix + 1]):
                        prefixes[src].append(prefix)
                        sentences[src].append(([int(id_values[row])], [score_values[row]]))
                continue
            for h, row in enumerate(prefixes[src]):
                words, word_scores = sentences[src][h]
                if id_values[row] != end_id or not words:  # a carried end_id counts once
                    words.append(int(id_values[row]))
                    word_scores.append(score_values[row])
                prefix = start
                while low[prefix + 1] <= row:
                    prefix += 1
                prefixes[src][h] = prefix
    return sentences


def _beam_search_decode(ctx, ids, scores):
    a = ctx.attrs
    if not isinstance(ids, LoDTensorArray) or not isinstance(scores, LoDTensorArray) or \
            len(ids) != len(scores) or not len(ids):
        raise InvalidArgument(expected("beam_search_decode", "Ids and Scores",
                                       "tensor arrays of the same non-zero length (one entry "
                                       "per step)", f"{type(ids).__name__}, "
                                       f"{type(scores).__name__}"))
    sentences = _backtrace(list(ids), list(scores), a["end_id"])
    words, values, source_level, sentence_level = [], [], [0], [0]
    for per_source in sentences:
        ranked = sorted(per_source, key=lambda s: -s[1][0])  # by the final (first) score
        for word_ids, word_scores in ranked:
            words.extend(reversed(word_ids))
            values.extend(reversed(word_scores))
            sentence_level.append(len(words))
        source_level.append(len(sentence_level) - 1)
    lod = [source_level, sentence_level]
    dtype = np.asarray(scores[0]).dtype
    xp = ctx.xp
    return (LoDTensor(xp.asarray(np.array(words, "int64")), lod),
            LoDTensor(xp.asarray(np.array(values, dtype)), lod))


def _decode_infer(ctx):
    from ..tensor.dtypes import VarType
    ctx.set_output("SentenceIds", (-1,), VarType.INT64, lod_level=2)
    ctx.set_output("SentenceScores", (-1,), VarType.FP32, lod_level=2)


def_op("beam_search_decode", inputs=["Ids", "Scores"],
       outputs=["SentenceIds", "SentenceScores"],
       attrs={"beam_size": ("int", None), "end_id": ("int", None)},
       infer_shape=_decode_infer, grad=no_gradient, kernel=_beam_search_decode,
       lod_aware=True, traits={"runtime_outputs"},
       host_reads="Ids, Scores: every step's values, traced back on the host into sentences",
       doc="The sentences of a beam search: each hypothesis of the last step a source has "
           "items in, traced back through the steps' LoD to the first word (an end_id "
           "carried by an ended hypothesis counted once); per source, best final score "
           "first; LoD [sentences per source, words per sentence].")
