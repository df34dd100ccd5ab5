"""``pyramid_hash``: the hashed n-gram embedding of Fluid 1.8's search models
(``fluid.contrib.search_pyramid_hash``).

For each sequence of token ids (X, LoD level 0) and each n-gram of 2 to ``pyramid_layer``
tokens (in order of n, then of position), the n-gram's key is the bytes of its tokens as
float32. An n-gram is used when it passes the white-list and black-list Bloom filters
(``use_filter``) and, in training, survives dropout (``rand_r`` draws from ``seed``, kept
when ``draw / RAND_MAX >= drop_out_percent``). A used n-gram's embedding is ``num_emb``
values taken from the flat weight W in chunks of ``rand_len``: chunk k starts at
``XXH32(key, seed=k * rand_len) % space_len``. Out has one row per used n-gram of each
sequence, or one zero row for a sequence without any; outside training Out is multiplied
by ``drop_out_percent``. DropPos holds the used/dropped flag of every n-gram.

``pyramid_hash_grad`` is Fluid's in-place update of W: every chunk W read gets
``-lr * Out@GRAD`` added (no X@GRAD is produced).
"""
import struct

import numpy as np

from ..errors import InvalidArgument, expected
from ..framework.registry import def_op
from ..tensor.dtypes import VarType
from ..tensor.tensor import LoDTensor
from ..tensor.transfer import to_host

_OP = "pyramid_hash"
_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF
_P1, _P2, _P3, _P4, _P5 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1
RAND_MAX = 2147483647
BLOOM_MAGIC = 17070416


def _rotl32(x, r):
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data, seed=0):
    """The 32-bit xxHash of ``data`` (bytes)."""
    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                lane = int.from_bytes(data[pos:pos + 4], "little")
                v[i] = (_rotl32((v[i] + lane * _P2) & _M32, 13) * _P1) & _M32
                pos += 4
        h = (_rotl32(v[0], 1) + _rotl32(v[1], 7) + _rotl32(v[2], 12)
             + _rotl32(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        h = (h + int.from_bytes(data[pos:pos + 4], "little") * _P3) & _M32
        h = (_rotl32(h, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (h + data[pos] * _P5) & _M32
        h = (_rotl32(h, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)


def rand_r(state):
    """glibc's ``rand_r``: (value in [0, RAND_MAX], next state)."""
    nxt = state
    result = 0
    for bits, first in ((2048, True), (1024, False), (1024, False)):
        nxt = (nxt * 1103515245 + 12345) & _M32
        part = (nxt // 65536) % bits
        result = part if first else ((result << 10) ^ part)
    return result, nxt


def _rotl64(x, r):
    return ((x << r) | (x >> (64 - r))) & _M64


def _fmix64(k):
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & _M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & _M64
    return k ^ (k >> 33)


def murmur3_x64_128(data, seed):
    """MurmurHash3 x64 128 of ``data``: (h1, h2)."""
    c1, c2 = 0x87C37B91114253D5, 0x4CF5AD432745937F
    n = len(data)
    h1 = h2 = seed
    blocks = n // 16
    for i in range(blocks):
        k1 = int.from_bytes(data[16 * i:16 * i + 8], "little")
        k2 = int.from_bytes(data[16 * i + 8:16 * i + 16], "little")
        h1 ^= (_rotl64((k1 * c1) & _M64, 31) * c2) & _M64
        h1 = (_rotl64(h1, 27) + h2) & _M64
        h1 = (h1 * 5 + 0x52DCE729) & _M64
        h2 ^= (_rotl64((k2 * c2) & _M64, 33) * c1) & _M64
        h2 = (_rotl64(h2, 31) + h1) & _M64
        h2 = (h2 * 5 + 0x38495AB5) & _M64
    tail = data[16 * blocks:]
    if len(tail) > 8:
        k2 = int.from_bytes(tail[8:], "little")
        h2 ^= (_rotl64((k2 * c2) & _M64, 33) * c1) & _M64
    if tail:
        k1 = int.from_bytes(tail[:8], "little")
        h1 ^= (_rotl64((k1 * c1) & _M64, 31) * c2) & _M64
    h1 ^= n
    h2 ^= n
    h1 = (h1 + h2) & _M64
    h2 = (h2 + h1) & _M64
    h1, h2 = _fmix64(h1), _fmix64(h2)
    h1 = (h1 + h2) & _M64
    return h1, (h2 + h1) & _M64


class BloomFilter:
    """Fluid's Bloom filter, stored in a float tensor's bytes: magic, m (bits), k (hash
    pairs), count (uint64 each), then the bit vector (most significant bit first)."""

    def __init__(self, array, which):
        raw = np.ascontiguousarray(array).tobytes()
        if len(raw) < 32:
            raise InvalidArgument(expected(_OP, f"input '{which}'", "a Bloom filter (at "
                                                                   "least 32 bytes)",
                                           f"{len(raw)} bytes"))
        magic, self.m, self.k, _ = struct.unpack("<4Q", raw[:32])
        if magic != BLOOM_MAGIC:
            raise InvalidArgument(expected(_OP, f"input '{which}'",
                                           f"a Bloom filter (magic {BLOOM_MAGIC})", magic))
        self.bits = raw[32:]

    def _bit(self, n):
        return self.bits[n >> 3] & (1 << (7 - (n & 7)))

    def __contains__(self, key):
        for i in range(self.k):
            for h in murmur3_x64_128(key, i):
                if not self._bit(h % self.m):
                    return False
        return True


def _ngrams(width, layers):
    """(start, length) of the n-grams of a sequence of ``width`` tokens, in Fluid's order."""
    return [(start, n + 1) for n in range(1, min(layers, width))
            for start in range(width - n)]


def _infer(ctx):
    a = ctx.attrs()
    x, w = list(ctx.input_shape("X")), list(ctx.input_shape("W"))
    ctx.check(len(x) == 2, "input 'X'", "rank 2 ([N, 1] token ids)", x)
    ctx.check(len(w) == 2 and (w[0] < 0 or w[0] == a["space_len"] + a["rand_len"])
              and w[1] in (1, -1), "input 'W'",
              f"[space_len + rand_len, 1] = [{a['space_len'] + a['rand_len']}, 1]", w)
    ctx.check(a["rand_len"] > 0 and a["num_emb"] % a["rand_len"] == 0, "attribute 'num_emb'",
              f"a multiple of rand_len ({a['rand_len']})", a["num_emb"])
    ctx.check(a["pyramid_layer"] >= 2, "attribute 'pyramid_layer'", ">= 2",
              a["pyramid_layer"])
    for slot, length in (("WhiteList", "white_list_len"), ("BlackList", "black_list_len")):
        if a[length] > 0:
            ctx.check(ctx.has_input(slot), f"input '{slot}'",
                      f"a variable when {length} > 0", "none")
            shape = list(ctx.input_shape(slot))
            ctx.check(shape == [a[length], 1] or -1 in shape, f"input '{slot}'",
                      f"[{length}, 1] = [{a[length]}, 1]", shape)
    ctx.set_output("Out", (-1, a["num_emb"]), ctx.input_dtype("W"), lod_level=1)
    ctx.set_output("DropPos", (-1, 1), VarType.INT32)
    ctx.set_output("X_Temp_Out", x, VarType.FP32)


def _filters(ctx, white, black):
    a = ctx.attrs
    if not a["use_filter"]:
        return None, None
    keep = BloomFilter(to_host(white.array), "WhiteList") \
        if a["white_list_len"] and white is not None else None
    drop = BloomFilter(to_host(black.array), "BlackList") \
        if a["black_list_len"] and black is not None else None
    return keep, drop


def _keys(tokens, offsets, layers):
    """Per sequence, the (start, length, key bytes) of its n-grams."""
    raw = tokens.astype("<f4")
    return [[(s, n, raw[lo + s:lo + s + n].tobytes())
             for s, n in _ngrams(hi - lo, layers)]
            for lo, hi in zip(offsets[:-1], offsets[1:])]


def _chunks(key, a):
    step = a["rand_len"]
    return [(j, xxh32(key, j) % a["space_len"]) for j in range(0, a["num_emb"], step)]


def _pyramid_hash(ctx, x, w, white, black):
    a = ctx.attrs
    lod = x.lod()
    if not lod:
        raise InvalidArgument(expected(_OP, "input 'X'", "a LoDTensor with sequences",
                                       "no LoD"))
    offsets = list(lod[0])
    tokens = to_host(x.array).reshape(-1)[:x.array.shape[0]].astype("float32")
    weights = to_host(w.array).reshape(-1)
    keep, drop = _filters(ctx, white, black)
    training = bool(a["is_training"])
    state = a["seed"] & _M32
    flags, rows, out_offsets = [], [], [0]
    step = a["rand_len"]
    for grams in _keys(tokens, offsets, a["pyramid_layer"]):
        used = 0
        for _, _, key in grams:
            flag = (keep is None or key in keep) and (drop is None or key not in drop)
            if flag and training:
                draw, state = rand_r(state)
                flag = not np.float32(draw) / np.float32(RAND_MAX) < a["drop_out_percent"]
            flags.append(int(flag))
            if flag:
                used += 1
                row = np.empty(a["num_emb"], weights.dtype)
                for j, pos in _chunks(key, a):
                    row[j:j + step] = weights[pos:pos + step]
                rows.append(row)
        if not used:
            rows.append(np.zeros(a["num_emb"], weights.dtype))
        out_offsets.append(len(rows))
    out = np.stack(rows)
    if not training and weights.dtype != np.int8:
        out = (out * np.float32(a["drop_out_percent"])).astype(weights.dtype)
    xp = ctx.xp
    return (LoDTensor(xp.asarray(out), [out_offsets]),
            xp.asarray(np.array(flags, "int32").reshape(-1, 1)),
            LoDTensor(xp.asarray(to_host(x.array).astype("float32")), lod))


def _grad_maker(g):
    return [g.op("pyramid_hash_grad",
                 {"X": g.input("X"), "W": g.input("W"), "DropPos": g.output("DropPos"),
                  "X_Temp_Out": g.output("X_Temp_Out"), "Out@GRAD": g.output_grad("Out")},
                 {"X@GRAD": g.input_grad("X")})]


_ATTRS = {"num_emb": ("int", 0), "space_len": ("int", 0), "pyramid_layer": ("int", 2),
          "rand_len": ("int", 0), "drop_out_percent": ("float", 0.0),
          "is_training": ("int", 0), "use_filter": ("bool", True),
          "white_list_len": ("int", 0), "black_list_len": ("int", 0), "seed": ("int", 0),
          "lr": ("float", 0.0), "distribute_update_vars": ("string", "")}

def_op(_OP, inputs=["X", "W", "WhiteList?", "BlackList?"],
       outputs=["Out", "DropPos", "X_Temp_Out!"], attrs=_ATTRS,
       infer_shape=_infer, grad=_grad_maker, kernel=_pyramid_hash, lod_aware=True,
       host_reads="X, W: n-grams are hashed on the host",
       doc="Out = for each sequence of X, the embeddings of its kept 2..pyramid_layer-grams: "
           "num_emb values of W in rand_len chunks, chunk k at XXH32(n-gram as float32 "
           "bytes, k * rand_len) % space_len (one zero row for a sequence without any; "
           "times drop_out_percent outside training). DropPos: each n-gram's kept flag.")


def _pyramid_hash_grad(ctx, x, w, drop_pos, x_temp, out_grad):
    a = ctx.attrs
    offsets = list(x.lod()[0])
    temp = to_host(x_temp.array).reshape(-1)
    if x.array.shape[0] == len(offsets) - 1 and np.all(temp[:x.array.shape[0]] == -1):
        return None  # Fluid's marker of an empty batch: nothing to update
    flags = to_host(drop_pos.array).reshape(-1)
    xp = ctx.xp
    diff = to_host(out_grad.array).reshape(-1, a["num_emb"])
    weights = w.array  # updated in place: W is a table the op trains itself
    step, scale = a["rand_len"], -a["lr"]
    flat = weights.reshape(-1)
    row = flag = 0
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        grams = _ngrams(hi - lo, a["pyramid_layer"])
        n_used = int(flags[flag:flag + len(grams)].sum())
        if not n_used:
            row += 1
        for start, n in grams:
            if flags[flag]:
                key = temp[lo + start:lo + start + n].astype("<f4").tobytes()
                for j, pos in _chunks(key, a):
                    flat[pos:pos + step] += xp.asarray(
                        (scale * diff[row, j:j + step]).astype(flat.dtype))
                row += 1
            flag += 1
    return None


def _grad_infer(ctx):
    """pyramid_hash_grad writes W in place and gives X no gradient."""


def_op("pyramid_hash_grad", inputs=["X", "W", "DropPos", "X_Temp_Out", "Out@GRAD"],
       outputs=["X@GRAD?"], attrs=_ATTRS, infer_shape=_grad_infer, lod_aware=True,
       kernel=_pyramid_hash_grad, traits=("stateful", "optional_outputs"),
       host_reads="all inputs: the update of W runs on the host",
       doc="W[chunk of each kept n-gram] += -lr * Out@GRAD (W updated in place); no X@GRAD.")
