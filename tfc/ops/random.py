"""Random tensors from a counter-based generator: Philox4x32-10.

Every random op (``uniform``, ``normal``, ``dropout_mask`` in tfc.ops.conv) is a
pure function of (key, counter base, element index): element ``i`` of a draw
reads fixed 32-bit words of the Philox4x32-10 blocks ``base + j``, so the values
do not depend on the backend, on chunking or on threads, and a GPU kernel can
compute each element alone (docs/random.md has the layouts).

An op with a ``seed`` uses key = seed (low word, high word) and counter base 0,
so it gives the same values on every call. Without one it draws from the global
stream: a key from ``set_seed`` (OS entropy until then) and a 64-bit block
counter that each draw advances by the blocks it used; ``set_seed`` restarts it,
so ``set_seed(s)`` reproduces a run. The global seed does not change seeded ops.
Compiled code calls these same kernels (random ops stay ``loops.library``
calls), so eager and compiled draws give the same values.
"""
from __future__ import annotations

import math
import secrets
import threading

import numpy as np

from tfc.core import dtypes
from tfc.core.registry import Spec, declare, user_errors
from tfc.core.shape import as_int
from tfc.core.tensor import Tensor, convert_to_tensor
from tfc.ops.creation import as_shape

# -- Philox4x32-10 (Salmon et al., SC'11; the Random123 reference) ----------------------

PHILOX_M = (0xD2511F53, 0xCD9E8D57)  # round multipliers
PHILOX_W = (0x9E3779B9, 0xBB67AE85)  # key bumps (golden ratio, sqrt(3) - 1)
ROUNDS = 10
_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1
_MCOL = np.array([[PHILOX_M[0]], [PHILOX_M[1]]], np.uint64)
_CHUNK = 16384  # blocks per pass: the temporaries stay in cache (and few numpy calls)
# The counter's third word is 0; its fourth names the source, so a seeded op and
# the global stream with the same seed do not share words.
SEEDED, GLOBAL = 0, 1


def _round_keys(key, rounds):
    """The key of each round, (2, 1) uint64 columns (k0 + r*W0, k1 + r*W1 mod 2^32)."""
    k0, k1 = key
    return [np.array([[(k0 + r * PHILOX_W[0]) & _MASK32], [(k1 + r * PHILOX_W[1]) & _MASK32]], np.uint64)
            for r in range(rounds)]


_M32, _S32 = np.uint64(_MASK32), np.uint64(32)


def _philox_into(a, b, keys, out, p):
    """Philox rounds over n counters held in uint64 words: ``a`` = (c0, c2) and
    ``b`` = (c1, c3), each (2, n), both overwritten; ``p`` a (2, n) scratch; the
    result goes to ``out`` (n, 4) uint32.

    A round is (hi0, lo0) = M0*c0, (hi1, lo1) = M1*c2 (32x32 -> 64-bit products
    split into their high and low words), then c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)."""
    np.bitwise_xor(b, keys[0], out=b)  # b carries c1 ^ k0, c3 ^ k1 into each round
    for r in range(len(keys)):
        np.multiply(a, _MCOL, out=p)
        np.right_shift(p[::-1], _S32, out=a)  # [::-1]: c0 takes M1*c2's high word
        np.bitwise_xor(a, b, out=a)
        np.bitwise_and(p[::-1], _M32, out=b)
        if r + 1 < len(keys):
            np.bitwise_xor(b, keys[r + 1], out=b)
    out[:, 0::2] = a.T
    out[:, 1::2] = b.T


def philox4x32(counters, key, rounds=ROUNDS) -> np.ndarray:
    """Philox4x32-``rounds`` of each counter: ``counters`` (..., 4) of 32-bit
    words, ``key`` (k0, k1) -> (..., 4) uint32 (the Random123 word order)."""
    c = np.asarray(counters, np.uint64)
    if c.shape[-1:] != (4,) or (c > _MASK32).any():
        raise ValueError("philox4x32: counters must be (..., 4) words below 2**32")
    flat = c.reshape(-1, 4)
    out = np.empty(flat.shape, np.uint32)
    keys = _round_keys(tuple(int(k) & _MASK32 for k in key), rounds)
    _philox_into(flat[:, 0::2].T.copy(), flat[:, 1::2].T.copy(), keys, out, np.empty((2, flat.shape[0]), np.uint64))
    return out.reshape(c.shape)


def _generate(key, base, stream, n, per, convert, dtype, out=None) -> np.ndarray:
    """``n`` values of a draw whose element i reads the words i*per .. i*per+per-1
    (per in 1, 2, 4); ``convert`` maps words to values (a whole number of blocks
    in, 4/per values a block out). Word ``k`` is word ``k % 4`` of
    Philox4x32-10(key, counter (lo32(base + k//4), hi32(base + k//4), 0, stream)),
    the block index taken modulo 2^64. Generated and converted a chunk of blocks
    at a time, so the temporaries stay in cache; chunks do not change the values.
    ``out``, where given (C-contiguous, ``n`` elements of ``dtype``), receives
    the values (a planned buffer) and is returned."""
    nblocks = -(-n * per // 4)
    given = out
    if out is None:
        out = np.empty(nblocks * 4 // per, dtype)
    else:
        out = out.view()
        out.shape = (n,)  # a view (numpy raises rather than copy)
    keys = _round_keys(key, ROUNDS)
    m = min(nblocks, _CHUNK)
    a, b, p = (np.empty((2, m), np.uint64) for _ in range(3))
    idx, words = np.empty(m, np.uint64), np.empty((m, 4), np.uint32)
    for s in range(0, nblocks, _CHUNK):
        m = min(nblocks - s, _CHUNK)
        i = idx[:m]
        i[:] = np.arange(m, dtype=np.uint64)
        i += np.uint64((base + s) & _MASK64)  # wraps modulo 2^64
        np.bitwise_and(i, _M32, out=a[0, :m])
        a[1, :m] = 0
        np.right_shift(i, _S32, out=b[0, :m])
        b[1, :m] = stream
        _philox_into(a[:, :m], b[:, :m], keys, words[:m], p[:, :m])
        w = words[:m].reshape(-1)
        lo, hi = s * 4 // per, (s + m) * 4 // per
        vals = w if convert is None else convert(w)
        if given is None:
            out[lo:hi] = vals
        else:  # the last block's values past n are dropped, as out[:n] drops them
            out[lo:min(hi, n)] = vals[:min(hi, n) - lo]
    return out[:n] if given is None else given


def random_words(key, base, nwords, stream=SEEDED) -> np.ndarray:
    """Words 0..nwords-1 of a draw, uint32 (the layout of ``_generate``)."""
    return _generate(key, base, stream, nwords, 1, None, np.uint32)


def seed_key(seed) -> tuple:
    """The Philox key of a seed in [0, 2^64): (low 32 bits, high 32 bits). A
    negative value is the seed's two's complement (an i64 attribute holds seeds
    of 2^63 and above that way)."""
    seed = int(seed) & _MASK64
    return seed & _MASK32, seed >> 32


# -- words -> values ------------------------------------------------------------------------

_2_M24, _2_M32, _2_M53 = 2.0 ** -24, 2.0 ** -32, 2.0 ** -53


def _words64(w):
    """Word pairs as 64-bit integers, the first word low: w0 | w1 << 32 (on a
    little-endian host the pair's own bytes)."""
    if np.little_endian:
        return np.ascontiguousarray(w).view(np.uint64)
    w = w.reshape(-1, 2).astype(np.uint64)
    return w[:, 0] | (w[:, 1] << np.uint64(32))


def _pairs64(w):
    """53-bit integers from word pairs: (w0 | w1 << 32) >> 11."""
    return _words64(w) >> np.uint64(11)


def _unit_words(dtype) -> int:
    return 2 if dtype == dtypes.float64 else 1


def uniform_from_words(w, dtype, minval, maxval) -> np.ndarray:
    """Floats in [minval, maxval) from a draw's words: u = (w >> 8) * 2^-24 (one
    word an element) for float16/float32, u = ((w0 | w1 << 32) >> 11) * 2^-53
    (two) for float64; then minval + u * (maxval - minval) in float64 (a product
    and a sum, each rounded: no fused multiply-add), rounded once to ``dtype`` and
    kept below maxval (rounding to a narrow float can land on it). Where
    maxval - minval overflows float64 the value is minval*(1 - u) + maxval*u."""
    np_dt = dtype.as_numpy_dtype
    if dtype == dtypes.float64:
        u = _pairs64(w).astype(np.float64)
        u *= _2_M53
        if minval == 0 and maxval == 1:
            return u  # as below: u * 1 + 0 is u, below 1
    else:
        u = (w >> np.uint32(8)).astype(np.float32) * np.float32(_2_M24)  # exact
        if minval == 0 and maxval == 1 and dtype == dtypes.float32:
            return u  # the general formula gives these same values
        u = u.astype(np.float64)
    lo, hi = float(minval), float(maxval)
    if math.isfinite(hi - lo):
        out = u * (hi - lo) + lo
    else:  # a span past float64's range: lo*(1 - u) + hi*u (1 - u is exact) stays finite
        out = lo * (1.0 - u) + hi * u
    out = out.astype(np_dt, copy=False)
    return np.minimum(out, np.nextafter(np_dt.type(hi), np_dt.type(lo)), out=out)


def _int_words(span) -> int:
    return 2 if span <= 1 << 32 else 4


def integers_from_words(w, dtype, minval, maxval) -> np.ndarray:
    """Integers in [minval, maxval): with span s = maxval - minval (at most 2^64),
    r = the element's words as one integer (first word lowest; 2 words if s <= 2^32,
    else 4) and the result minval + floor(r * s / 2^bits(r)), the multiply-shift
    method without rejection: each value has probability within s / 2^64 of 1/s
    (exact when s is a power of two), and every element takes the same words."""
    lo, span = int(minval), int(maxval) - int(minval)
    k = _int_words(span)
    r = w.reshape(-1, k).astype(np.uint64)
    s_limbs = [(span >> (32 * j)) & _MASK32 for j in range((span.bit_length() + 31) // 32)]
    # Schoolbook product of 32-bit limbs (least significant first), carries in uint64.
    acc = [np.zeros(r.shape[0], np.uint64) for _ in range(k + len(s_limbs) + 1)]
    m32, sh = np.uint64(_MASK32), np.uint64(32)
    for i in range(k):
        ri = r[:, i]
        for j, sj in enumerate(s_limbs):
            if sj:
                t = ri * np.uint64(sj)
                acc[i + j] += t & m32
                acc[i + j + 1] += t >> sh
    for i in range(len(acc) - 1):
        acc[i + 1] += acc[i] >> sh
        acc[i] &= m32
    top = acc[k] | (acc[k + 1] << sh)  # floor(r * s / 2^(32k)) < s <= 2^64
    top += np.uint64(lo & _MASK64)  # modulo 2^64: the int64 value's bits
    return top.view(np.int64).astype(dtype.as_numpy_dtype)


def normal_from_words(w, dtype, mean, stddev) -> np.ndarray:
    """Normals by Box-Muller: a pair of uniforms u1 in (0, 1], u2 in [0, 1) gives
    r = sqrt(-2 ln u1) and the elements 2p, 2p+1 = r cos(2 pi u2), r sin(2 pi u2).

    float16/float32, from the words 2p, 2p+1: u1 = (w0 + 1) * 2^-32 and r in
    float64; u2 = (w1 >> 8) * 2^-24 and the angle u2 * float32(2 pi), its cos and
    sin in float32 (float64 trigonometry would triple the cost; the angle is off
    by a few float32 ulps at most, which a float32 sample cannot tell apart).
    float64, from the 53-bit pairs (words 4p..4p+1, 4p+2..4p+3) as in
    ``uniform_from_words``: u1 = (x0 + 1) * 2^-53, u2 = x1 * 2^-53, all in float64.
    Then z * stddev + mean in float64, rounded once to ``dtype``."""
    if dtype == dtypes.float64:
        x = _pairs64(w).reshape(-1, 2).astype(np.float64)
        u1 = (x[:, 0] + 1.0) * _2_M53
        theta = x[:, 1] * (_2_M53 * 2 * np.pi)
    else:
        w = w.reshape(-1, 2)
        u1 = (w[:, 0].astype(np.float64) + 1.0) * _2_M32
        theta = (w[:, 1] >> np.uint32(8)).astype(np.float32)
        theta *= np.float32(_2_M24 * 2 * np.pi)  # float32(2 pi) / 2^24: exact scaling
    r = np.sqrt(-2.0 * np.log(u1))
    z = np.empty((r.shape[0], 2))
    np.multiply(r, np.cos(theta), out=z[:, 0])
    np.multiply(r, np.sin(theta), out=z[:, 1])
    z = z.reshape(-1)
    if stddev != 1 or mean != 0:
        z *= float(stddev)
        z += float(mean)
    return z.astype(dtype.as_numpy_dtype, copy=False)


def keep_from_words(w, rate) -> np.ndarray:
    """Dropout's keep decision: element i is kept iff word i >= ceil(rate * 2^32)
    (an integer threshold: keeps with probability 1 - rate up to 2^-32)."""
    t = math.ceil(float(rate) * 2.0 ** 32)
    return np.zeros(w.shape, bool) if t > _MASK32 else w >= np.uint32(t)


def uniform_spec(dtype, minval, maxval):
    return _unit_words(dtype), lambda w: uniform_from_words(w, dtype, minval, maxval), dtype.as_numpy_dtype


def integers_spec(dtype, minval, maxval):
    return _int_words(maxval - minval), lambda w: integers_from_words(w, dtype, minval, maxval), \
        dtype.as_numpy_dtype


def normal_spec(dtype, mean, stddev):
    # One word an element (two a float64 element), in whole Box-Muller pairs.
    return _unit_words(dtype), lambda w: normal_from_words(w, dtype, mean, stddev), dtype.as_numpy_dtype


def dropout_spec(rate, np_dtype):
    """Dropout's mask: 0 where dropped, else 1 / (1 - rate) in ``np_dtype``."""
    scale = np.asarray(1.0 / (1.0 - rate), dtype=np_dtype)
    return 1, lambda w: keep_from_words(w, rate) * scale, np_dtype


# -- keys and counters --------------------------------------------------------------------


class Stream:
    """A Philox key and a 64-bit block counter: each draw takes the next blocks.

    The global stream is one of these; ``generator(seed)`` gives a private one
    (initializers draw from it with numpy Generator-style methods, in float64)."""

    def __init__(self, key, counter=0, stream=GLOBAL):
        self.key = key
        self.counter = counter
        self.stream = stream
        self._lock = threading.Lock()

    def take(self, nblocks) -> int:
        """Reserve ``nblocks`` blocks; returns the draw's counter base."""
        with self._lock:
            base = self.counter
            self.counter = (base + nblocks) & _MASK64
        return base

    def draw(self, n, per, convert, dtype, out=None) -> np.ndarray:
        """The next ``n`` values (see ``_generate``; into ``out`` where given)."""
        return _generate(self.key, self.take(-(-n * per // 4)), self.stream, n, per, convert, dtype, out)

    def random(self, size=None) -> np.ndarray:
        return self.uniform(0.0, 1.0, size)

    def uniform(self, low=0.0, high=1.0, size=None) -> np.ndarray:
        shape = _np_shape(size)
        return self.draw(math.prod(shape), *uniform_spec(dtypes.float64, low, high)).reshape(shape)

    def standard_normal(self, size=None) -> np.ndarray:
        return self.normal(0.0, 1.0, size)

    def normal(self, loc=0.0, scale=1.0, size=None) -> np.ndarray:
        shape = _np_shape(size)
        return self.draw(math.prod(shape), *normal_spec(dtypes.float64, loc, scale)).reshape(shape)

    def integers(self, low, high, size=None, dtype=np.int64) -> np.ndarray:
        shape = _np_shape(size)
        spec = integers_spec(dtypes.as_dtype(np.dtype(dtype)), int(low), int(high))
        return self.draw(math.prod(shape), *spec).reshape(shape)


def _np_shape(size):
    return () if size is None else (tuple(size) if isinstance(size, (tuple, list)) else (int(size),))


_GLOBAL = [Stream(seed_key(secrets.randbits(64)))]  # OS entropy until set_seed


@user_errors
def set_seed(seed) -> None:
    """Restart the global random stream: key from ``seed`` (None: fresh OS
    entropy), block counter 0."""
    seed = secrets.randbits(64) if seed is None else _seed_value("set_seed", seed)
    _GLOBAL[0] = Stream(seed_key(seed))


def generator(seed=None) -> Stream:
    """The stream for a draw: a fresh one keyed by ``seed`` (counter 0), else the global stream."""
    return _GLOBAL[0] if seed is None else Stream(seed_key(seed), stream=SEEDED)


def draw(seed, shape, spec) -> np.ndarray:
    """One op's draw of ``shape``: seeded, key = seed at counter base 0; else the
    global stream's next blocks. ``spec`` = (words an element, words -> values,
    numpy dtype), from ``uniform_spec``, ``integers_spec``, ``normal_spec``."""
    n = math.prod(shape)
    if seed is None:
        return _GLOBAL[0].draw(n, *spec).reshape(shape)
    return _generate(seed_key(seed), 0, SEEDED, n, *spec).reshape(shape)


def draw_into(out, seed, spec) -> None:
    """``draw`` of ``out``'s shape written into ``out`` (a planned buffer)."""
    n = out.size
    if seed is None:
        _GLOBAL[0].draw(n, *spec, out=out)
    else:
        _generate(seed_key(seed), 0, SEEDED, n, *spec, out=out)


def _seed_value(op_name, seed):
    if seed is None:
        return None
    if isinstance(seed, Tensor):
        seed = seed.numpy().item()
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or not 0 <= seed <= _MASK64:
        raise TypeError(f"{op_name}: seed must be a non-negative int below 2**64 or None, got {seed!r}")
    return int(seed)


def _scalar(op_name, v, what):
    if isinstance(v, Tensor):
        if v.size != 1:
            raise ValueError(f"{op_name}: {what} must be a scalar, got shape {v.shape}")
        v = v.numpy().item()
    if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, bool):
        raise TypeError(f"{op_name}: {what} must be a number, got {v!r}")
    return v.item() if isinstance(v, np.generic) else v


# -- ops --------------------------------------------------------------------------------------


def _int_bound(what, v, dtype):
    """An integer bound as an int; the op's attribute is a float64, so the bound
    must be an integer that float64 holds exactly (2**63 is, 2**63 - 1 is not)."""
    if not float(v).is_integer() or int(float(v)) != v:
        raise ValueError(f"uniform: {what} {v!r} for integer dtype {dtype.name} must be an integer that "
                         "float64 represents exactly (the op stores its bounds as f64 attributes)")
    return int(v)


def _uniform_infer(op, shape, dtype, minval, maxval, seed) -> Spec:
    if dtype.is_bool:
        raise TypeError("uniform: dtype bool is not supported; expected a float or integer dtype")
    if dtype.is_integer and maxval is None:
        raise ValueError(f"uniform: maxval must be given for integer dtype {dtype.name}")
    hi = 1 if maxval is None else maxval
    if not (math.isfinite(minval) and math.isfinite(hi)):
        raise ValueError(f"uniform: minval and maxval must be finite, got {minval} and {hi}")
    if not minval < hi:
        raise ValueError(f"uniform: minval {minval} must be less than maxval {hi}")
    if dtype.is_integer:
        lo, hi = _int_bound("minval", minval, dtype), _int_bound("maxval", maxval, dtype)
        info = np.iinfo(dtype.as_numpy_dtype)
        if lo < info.min or hi > info.max + 1:
            raise ValueError(f"uniform: [{lo}, {hi}) is outside {dtype.name}'s range "
                             f"[{info.min}, {info.max + 1})")
    return Spec(shape, dtype)


def _uniform_kernel(shape, dtype, minval, maxval, seed):
    if dtype.is_integer:
        return draw(seed, shape, integers_spec(dtype, int(minval), int(maxval)))
    return draw(seed, shape, uniform_spec(dtype, minval, 1.0 if maxval is None else maxval))


def _uniform_into(out, shape, dtype, minval, maxval, seed):
    if dtype.is_integer:
        return draw_into(out, seed, integers_spec(dtype, int(minval), int(maxval)))
    return draw_into(out, seed, uniform_spec(dtype, minval, 1.0 if maxval is None else maxval))


@declare(kernel=_uniform_kernel, infer=_uniform_infer, stateful=True, kernel_into=_uniform_into, name="uniform",
         attrs={"shape": "ints", "dtype": "dtype", "minval": "float", "maxval": "float?", "seed": "seed"})
def _uniform_op(shape, minval, maxval, dtype, seed):
    """Values drawn uniformly from [minval, maxval) (maxval defaults to 1 for floats
    and is required for integer dtypes).

    Element i (row-major) of a draw with key K and counter base B reads the
    words of Philox4x32-10(K, (lo32(b), hi32(b), 0, S)) for blocks b = B + j
    (word k of the draw: block k // 4, word k % 4; S = 0 seeded, 1 the global
    stream): float16/float32 word i, u = (w >> 8) * 2^-24; float64 words 2i and
    2i+1, u = ((w0 | w1 << 32) >> 11) * 2^-53; value minval + u*(maxval - minval)
    in float64 (no FMA), rounded to the dtype and kept below maxval. Integers:
    words ki..ki+k-1 as r, first word lowest (k = 2 if the span s <= 2^32, else 4), value
    minval + floor(r*s / 2^(32k)). Seeded: K = (seed mod 2^32, seed >> 32), B = 0.

    (The op takes bounds known while tracing, as attributes; ``uniform_bounds``
    takes them as operands.)"""
    return (), {"shape": shape, "dtype": dtype, "minval": minval, "maxval": maxval, "seed": seed}


# -- uniform between bounds known only at run time --------------------------------------------
#
# tf.random.uniform((), i, i + 1, tf.int32) with i a loop counter: the bounds are
# operands (0-d tensors of the result's dtype), checked when the op runs. The draw
# is uniform's (the same words, the same conversion), so the bits are uniform's
# for the same bounds, seed and stream. As TensorFlow's (rnd * (maxval - minval)
# + minval), a float draw is differentiable in its bounds.


def _uniform_bounds_infer(op, minval: Spec, maxval: Spec, shape, dtype, seed) -> Spec:
    if dtype.is_bool or not (dtype.is_integer or dtype.is_floating):
        raise TypeError(f"uniform: dtype {dtype.name} is not supported; expected a float or integer dtype")
    for what, b in (("minval", minval), ("maxval", maxval)):
        if b.ndim != 0 or b.dtype != dtype:
            raise TypeError(f"uniform: {what} must be a scalar of the result's dtype {dtype.name}, got "
                            f"{b.dtype.name} of shape {tuple(b.shape)}")
    return Spec(shape, dtype)


def _run_time_bounds(minval, maxval, dtype):
    """The bounds as Python numbers, checked as ``_uniform_infer`` checks attributes."""
    from tfc.core.errors import InvalidArgumentError

    lo, hi = minval.item(), maxval.item()
    if dtype.is_floating and not (math.isfinite(lo) and math.isfinite(hi)):
        raise InvalidArgumentError(f"uniform: minval and maxval must be finite, got {lo} and {hi}")
    if not lo < hi:
        raise InvalidArgumentError(f"uniform: minval {lo} must be less than maxval {hi}")
    return lo, hi


def _uniform_bounds_spec(minval, maxval, dtype):
    lo, hi = _run_time_bounds(minval, maxval, dtype)
    return integers_spec(dtype, lo, hi) if dtype.is_integer else uniform_spec(dtype, lo, hi)


def _uniform_bounds_kernel(minval, maxval, shape, dtype, seed):
    return draw(seed, shape, _uniform_bounds_spec(minval, maxval, dtype))


def _uniform_bounds_into(minval, maxval, out, shape, dtype, seed):
    draw_into(out, seed, _uniform_bounds_spec(minval, maxval, dtype))


def _uniform_bounds_grad(e, g):
    """value = minval + u * (maxval - minval): d/dminval = 1 - u, d/dmaxval = u,
    with u = (value - minval) / (maxval - minval) (TensorFlow's: the draw's
    unit values times the incoming gradient, summed)."""
    from tfc.ops.reductions import reduce_sum

    lo, hi = e.inputs
    if e.attrs["dtype"].is_integer:
        return [None, None]
    u = (e.outputs[0] - lo) / (hi - lo)
    gu = reduce_sum(g * u)
    return [reduce_sum(g) - gu if e.needs_grad(0) else None, gu if e.needs_grad(1) else None]


@declare(kernel=_uniform_bounds_kernel, infer=_uniform_bounds_infer, grad=_uniform_bounds_grad, stateful=True,
         kernel_into=_uniform_bounds_into, attrs={"shape": "ints", "dtype": "dtype", "seed": "seed"})
def uniform_bounds(minval, maxval, shape, dtype=dtypes.float32, seed=None):
    """``uniform(shape, minval, maxval, dtype, seed)`` whose bounds are 0-d
    tensors of ``dtype`` (perhaps known only at run time): the same draw and
    values; minval < maxval (and finite) is checked when the op runs."""
    return (minval, maxval), {"shape": shape, "dtype": dtype, "seed": seed}


def _tensor_bound(v, dtype, what):
    """A bound as a 0-d tensor of ``dtype`` (a number or an eager tensor's value
    converted as TensorFlow converts it; a traced tensor of another dtype is
    refused, as there)."""
    if isinstance(v, Tensor) and (v.symbolic or (v.ndim == 0 and v.dtype == dtype)):
        if v.dtype != dtype:
            raise TypeError(f"uniform: {what} is a {v.dtype.name} tensor, the result's dtype is {dtype.name}: "
                            f"cast it (tfc.cast({what}, {dtype.name}))")
        if v.ndim != 0:
            raise ValueError(f"uniform: {what} must be a scalar, got shape {v.shape}")
        return v
    v = _scalar("uniform", v, what)
    if dtype.is_integer:
        info = np.iinfo(dtype.as_numpy_dtype)
        if not float(v).is_integer() or not info.min <= v <= info.max:
            raise ValueError(f"uniform: {what} {v!r} is not a {dtype.name} value")
        v = int(v)
    return convert_to_tensor(np.array(v, dtype.as_numpy_dtype))


@user_errors
def uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    # (its docstring, set below, is the op's with a paragraph on tensor bounds)
    shape, dtype = as_shape("uniform", shape), dtypes.as_dtype(dtype)
    seed = _seed_value("uniform", seed)
    if any(isinstance(b, Tensor) and (b.symbolic or (b.ndim == 0 and b.dtype == dtype)) for b in (minval, maxval)):
        if maxval is None and dtype.is_integer:
            raise ValueError(f"uniform: maxval must be given for integer dtype {dtype.name}")
        lo = _tensor_bound(minval, dtype, "minval")
        hi = _tensor_bound(1 if maxval is None else maxval, dtype, "maxval")
        return uniform_bounds(lo, hi, shape, dtype, seed, name=name)
    return _uniform_op(shape, _scalar("uniform", minval, "minval"),
                       None if maxval is None else _scalar("uniform", maxval, "maxval"), dtype, seed, name=name)


uniform.__doc__ = _uniform_op.__doc__.split("\n\n    (The op takes")[0] + """

    A bound that is a tensor of the result's dtype (a traced one: known only when
    the function runs) is an operand of the op (``uniform_bounds``): the same
    values, checked when the op runs, and a float draw's gradient reaches it."""


def _normal_infer(op, shape, dtype, mean, stddev, seed) -> Spec:
    if not dtype.is_floating:
        raise TypeError(f"{op.name}: dtype {dtype.name} is not supported; expected float16, float32 or float64")
    if not (math.isfinite(mean) and math.isfinite(stddev)):
        raise ValueError(f"{op.name}: mean and stddev must be finite, got {mean} and {stddev}")
    if stddev < 0:
        raise ValueError(f"{op.name}: stddev must be >= 0, got {stddev}")
    return Spec(shape, dtype)


def _normal_kernel(shape, dtype, mean, stddev, seed):
    return draw(seed, shape, normal_spec(dtype, mean, stddev))


def _normal_into(out, shape, dtype, mean, stddev, seed):
    draw_into(out, seed, normal_spec(dtype, mean, stddev))


@declare(kernel=_normal_kernel, infer=_normal_infer, stateful=True, kernel_into=_normal_into,
         attrs={"shape": "ints", "dtype": "dtype", "mean": "float", "stddev": "float", "seed": "seed"})
def normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None):
    """Values drawn from a normal distribution with ``mean`` and ``stddev``.

    Box-Muller on the draw's words (key, counter and word numbering as in
    ``uniform``): element i belongs to pair p = i // 2 and is r cos(2 pi u2) if
    i is even, r sin(2 pi u2) if odd, r = sqrt(-2 ln u1). float16/float32: words
    2p and 2p+1, u1 = (w + 1) * 2^-32, u2 = w * 2^-32; float64: words 4p..4p+3,
    53-bit u1 (plus 2^-53) and u2 as in ``uniform``. Computed in float64, then
    z * stddev + mean rounded once to the dtype."""
    return (), {
        "shape": as_shape("normal", shape), "dtype": dtypes.as_dtype(dtype),
        "mean": float(_scalar("normal", mean, "mean")), "stddev": float(_scalar("normal", stddev, "stddev")),
        "seed": _seed_value("normal", seed),
    }


# -- truncated normal, categorical, shuffle --------------------------------------------------
# Each element reads two words of its draw, a float64 uniform u in [0, 1) as
# ``uniform``'s (docs/random.md), whatever the result dtype.

_SQRT2 = 1.4142135623730951


def erfinv_formula(m, y):
    """erf^-1(y) for |y| < 1 in float64 with ``m`` the arithmetic (numpy arrays,
    or kernel ops: tfc/passes/gpu_random.py): Winitzki's closed form (relative
    error about 2e-3), then three Newton steps on tfc's erf (each squares the
    error)."""
    from tfc.ops.math import ERF_SLOPE_AT_0, _erf_formula

    a = 0.147
    ln = m.log1p(m.neg(m.mul(y, y)))
    t = m.add(m.c(2.0 / (np.pi * a)), m.div(ln, m.c(2.0)))
    w = m.copysign(m.sqrt(m.sub(m.sqrt(m.sub(m.mul(t, t), m.div(ln, m.c(a)))), t)), y)
    for _ in range(3):
        slope = m.mul(m.c(ERF_SLOPE_AT_0), m.exp(m.neg(m.mul(w, w))))
        w = m.sub(w, m.div(m.sub(_erf_formula(m, w, True), y), slope))
    return w


def _erfinv(y):
    from tfc.ops.math import _ArrayMath

    return erfinv_formula(_ArrayMath(np.float64), y)


def truncated_from_words(w, dtype, mean, stddev) -> np.ndarray:
    """Normals truncated to two standard deviations by inverse transform (as
    JAX's): y = e + u * (-2e) with e = erf(-sqrt 2) runs over the erf range of
    [-2, 2), z = sqrt(2) erfinv(y), clipped to [-2, 2] against rounding; then
    z * stddev + mean in float64, rounded once to ``dtype``."""
    from tfc.ops.math import _erf_kernel

    u = uniform_from_words(w, dtypes.float64, 0.0, 1.0)
    e = float(_erf_kernel(np.array(-_SQRT2)))
    z = np.clip(_SQRT2 * _erfinv(e + u * (-2.0 * e)), -2.0, 2.0)
    if stddev != 1 or mean != 0:
        z = z * float(stddev) + float(mean)
    return z.astype(dtype.as_numpy_dtype, copy=False)


def _truncated_kernel(shape, dtype, mean, stddev, seed):
    return draw(seed, shape, (2, lambda w: truncated_from_words(w, dtype, mean, stddev), dtype.as_numpy_dtype))


@declare(kernel=_truncated_kernel, infer=_normal_infer, stateful=True,
         attrs={"shape": "ints", "dtype": "dtype", "mean": "float", "stddev": "float", "seed": "seed"})
def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None):
    """Normal values with ``mean`` and ``stddev`` whose magnitude beyond the
    mean is at most two standard deviations (TensorFlow's ``truncated_normal``),
    by inverse transform: element i reads words 2i, 2i+1 as a float64 uniform u
    (as ``uniform``), z = sqrt(2) erfinv(erf(-sqrt 2) (1 - 2u)), then
    z * stddev + mean rounded once to the dtype."""
    return (), {
        "shape": as_shape("truncated_normal", shape), "dtype": dtypes.as_dtype(dtype),
        "mean": float(_scalar("truncated_normal", mean, "mean")),
        "stddev": float(_scalar("truncated_normal", stddev, "stddev")),
        "seed": _seed_value("truncated_normal", seed),
    }


def _categorical_infer(op, logits: Spec, num_samples, dtype, seed) -> Spec:
    from tfc.ops import _infer as inf

    inf.check_dtype(op, logits, dtypes.FLOATS, "logits")
    if logits.ndim != 2:
        raise ValueError(f"{op.name}: logits must be [batch_size, num_classes], got shape "
                         f"{inf.fmt_shape(logits.shape)}")
    if logits.shape[1] == 0:
        raise ValueError(f"{op.name}: logits must have at least one class")
    if num_samples < 0:
        raise ValueError(f"{op.name}: num_samples must be >= 0, got {num_samples}")
    if dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"{op.name}: dtype must be int32 or int64, got {dtype.name}")
    return Spec((logits.shape[0], num_samples), dtype)


def _categorical_kernel(logits, num_samples, dtype, seed):
    """Inverse transform per row: p = exp(logits - max) in float64, the first
    class whose running sum of p exceeds u * sum(p)."""
    from tfc.core.errors import InvalidArgumentError

    batch = logits.shape[0]
    u = draw(seed, (batch, num_samples), uniform_spec(dtypes.float64, 0.0, 1.0))
    x = logits.astype(np.float64)
    with np.errstate(invalid="ignore"):
        p = np.exp(x - x.max(axis=1, keepdims=True))
    cdf = np.cumsum(p, axis=1)
    total = cdf[:, -1:]
    bad = ~(np.isfinite(total[:, 0]) & (total[:, 0] > 0))
    if batch and num_samples and bad.any():
        raise InvalidArgumentError(f"categorical: row {int(np.argmax(bad))} of logits has no finite maximum "
                                   "(all -inf, or NaN or +inf): no distribution to sample")
    # below the total (u * total may round up to it), so the class found has p > 0
    v = np.minimum(u * total, np.nextafter(total, 0))
    out = np.empty((batch, num_samples), dtype.as_numpy_dtype)
    for r in range(batch):
        out[r] = np.searchsorted(cdf[r], v[r], side="right")
    return out


@declare(kernel=_categorical_kernel, infer=_categorical_infer, stateful=True,
         attrs={"num_samples": "int", "dtype": "dtype", "seed": "seed"})
def categorical(logits, num_samples, dtype=dtypes.int64, seed=None):
    """``num_samples`` class indices for each row of ``logits`` [batch,
    num_classes] (unnormalised log-probabilities), as TensorFlow's
    ``tf.random.categorical``. Sample j of row r reads words 2k, 2k+1 (k = r *
    num_samples + j) as a float64 uniform u, and is the first class whose
    running sum of exp(logits - max) exceeds u times their total (float64)."""
    return (logits,), {"num_samples": as_int("categorical", num_samples, "num_samples", minimum=None), "dtype": dtypes.as_dtype(dtype),
                       "seed": _seed_value("categorical", seed)}


def _shuffle_infer(op, value: Spec, seed) -> Spec:
    if value.ndim == 0:
        raise ValueError(f"{op.name}: value must have rank >= 1, got a scalar")
    return Spec((value.shape[0],), dtypes.int64)


def _shuffle_kernel(value, seed):
    # a random 64-bit key per row (words 2i, 2i+1, first word low), rows in key order
    n = value.shape[0]
    keys = draw(seed, (2 * n,), (1, None, np.uint32))
    return np.argsort(_words64(keys), kind="stable")


@declare(kernel=_shuffle_kernel, infer=_shuffle_infer, stateful=True, attrs={"seed": "seed"})
def shuffle_indices(value, seed=None):
    """A random permutation of 0 .. n-1 for the n rows of ``value`` (only its
    first dimension is read): row i gets the 64-bit key of words 2i, 2i+1 of
    the draw, and the rows are ordered by key (ties, of probability 2^-64, in
    index order)."""
    return (value,), {"seed": _seed_value("shuffle", seed)}


def shuffle(value, seed=None, name=None):
    """``value`` with its first dimension randomly permuted (TensorFlow's
    ``tf.random.shuffle``); the gradient goes back to each row's place."""
    from tfc.ops.shapes import gather

    return gather(value, shuffle_indices(value, seed=seed), axis=0)


# -- a dropout mask whose seed is a tensor -------------------------------------------------
#
# A seeded tfc.layers.Dropout draws a new mask on each call, from seed + (masks
# drawn so far): a count held in a variable, so the seed of a compiled call is
# known only when it runs. This op takes it as an operand; the mask is that of
# dropout_mask with that seed (the same kernel, the same bits). Being a function
# of its operands, it is not stateful: it may be folded, merged and replayed.


def _seeded_mask_infer(op, x: Spec, seed: Spec, rate, noise_shape) -> Spec:
    from tfc.ops.conv import _mask_infer

    if seed.ndim != 0 or seed.dtype != dtypes.int64:
        raise TypeError(f"{op.name}: the seed must be an int64 scalar, got {seed}")
    return _mask_infer(op, x, rate, noise_shape, None)


def _seed_of(seed) -> int:
    """The seed an int64 scalar holds (two's complement: taken modulo 2^64)."""
    return int(seed) & _MASK64


def _seeded_mask_kernel(x, seed, rate, noise_shape):
    shape = tuple(x.shape if noise_shape is None else noise_shape)
    return draw(_seed_of(seed), shape, dropout_spec(rate, x.dtype))


def _seeded_mask_into(x, seed, out, rate, noise_shape):
    draw_into(out, _seed_of(seed), dropout_spec(rate, np.dtype(x.dtype)))


@declare(kernel=_seeded_mask_kernel, infer=_seeded_mask_infer, kernel_into=_seeded_mask_into,
         attrs={"rate": "float", "noise_shape": "ints?"})
def seeded_dropout_mask(x, seed, rate, noise_shape=None):
    """``dropout_mask(x, rate, noise_shape, seed=s)`` where ``seed`` is an int64
    scalar tensor holding s (modulo 2^64), known perhaps only at run time."""
    seed = convert_to_tensor(seed)
    if seed.dtype != dtypes.int64:
        raise TypeError(f"seeded_dropout_mask: the seed must be an int64 scalar tensor, got dtype {seed.dtype.name}")
    return (x, seed), {"rate": float(_scalar("seeded_dropout_mask", rate, "rate")),
                       "noise_shape": None if noise_shape is None else tuple(noise_shape)}


__all__ = ["uniform", "normal", "set_seed", "truncated_normal", "categorical", "shuffle"]
