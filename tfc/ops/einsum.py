"""``tfc.einsum``: Einstein summation written with existing ops, at trace
level (no kernel of its own): a label summed within one operand is a
``reduce_sum``, a pair of operands is one (batched) ``matmul`` of operands
transposed and reshaped to [batch..., M, K] and [batch..., K, N], and the result
is reshaped and transposed to the output's labels. Operands are contracted left
to right. The gradient, the compiled code and the L3 lowering are those ops';
eager and compiled results are the same ops' bits.

Supported: letters a-z and A-Z, ``...`` (the dimensions an operand has beyond
its letters, aligned from the right, broadcast as numpy's), the implicit form
(no ``->``: the output is the letters used once, in alphabetical order).
A letter repeated within one operand (a diagonal) raises NotImplementedError,
as does merging (or splitting) several dimensions where more than one of the
operand's are known only at run time (dimensions that are not merged may all be
unknown)."""
from __future__ import annotations

import string

from tfc.core.registry import user_errors
from tfc.core.tensor import convert_to_tensor
from tfc.ops.linalg import matmul
from tfc.ops.reductions import reduce_sum
from tfc.ops.shapes import expand_dims, reshape, squeeze, transpose

_LETTERS = frozenset(string.ascii_letters)
# labels the ``...`` dimensions get: characters no equation letter can be
_ELLIPSIS_LABELS = [chr(0x3B1 + i) for i in range(24)]  # Greek letters


def _parse(equation: str, ranks):
    if not isinstance(equation, str):
        raise TypeError(f"einsum: the equation must be a string, got {type(equation).__name__}")
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ValueError(f"einsum: equation {equation!r} names {len(terms)} operands, got {len(ranks)}")
    # the ``...`` dimensions: as many as the operand with most, aligned from the right
    extra = []
    for t, r in zip(terms, ranks):
        letters = t.replace("...", "")
        if "..." in t:
            extra.append(r - len(letters))
            if extra[-1] < 0:
                raise ValueError(f"einsum: operand {t!r} of equation {equation!r} has rank {r}, fewer than its "
                                 f"{len(letters)} letters")
        elif len(letters) != r:
            raise ValueError(f"einsum: operand {t!r} of equation {equation!r} names {len(letters)} dimensions, "
                             f"the tensor has rank {r}")
    n_ell = max(extra, default=0)
    if n_ell > len(_ELLIPSIS_LABELS):
        raise NotImplementedError(f"einsum: {n_ell} dimensions under '...' (at most {len(_ELLIPSIS_LABELS)})")
    ell = _ELLIPSIS_LABELS[:n_ell]

    def labels(t, r):
        bad = set(t.replace("...", "")) - _LETTERS
        if bad or t.count("...") > 1:
            raise ValueError(f"einsum: bad term {t!r} in equation {equation!r} (letters a-z, A-Z and one '...')")
        head, _, tail = t.partition("...")
        mid = ell[n_ell - (r - len(head) - len(tail)):] if "..." in t else []
        out = list(head) + mid + list(tail)
        dup = {c for c in out if out.count(c) > 1}
        if dup:
            raise NotImplementedError(f"einsum: letter {sorted(dup)[0]!r} repeated within operand {t!r} "
                                      f"(a diagonal) is not supported")
        return out

    ins = [labels(t, r) for t, r in zip(terms, ranks)]
    if arrow:
        if rhs.count("...") > 1 or set(rhs.replace("...", "")) - _LETTERS:
            raise ValueError(f"einsum: bad output {rhs!r} in equation {equation!r}")
        head, dots, tail = rhs.partition("...")
        out = list(head) + (ell if dots else []) + list(tail)
        used = {c for i in ins for c in i}
        for c in out:
            if c not in used:
                raise ValueError(f"einsum: output letter {c!r} of equation {equation!r} is in no operand")
        if len(set(out)) != len(out):
            raise ValueError(f"einsum: the output of equation {equation!r} repeats a letter")
    else:  # implicit: the '...' dimensions, then the letters used once, sorted
        counts = {}
        for i in ins:
            for c in i:
                counts[c] = counts.get(c, 0) + 1
        out = ell + sorted(c for c, k in counts.items() if k == 1 and c not in ell)
    return ins, out


def _check_sizes(equation, tensors, ins):
    """A label's static sizes agree (1 broadcasts against any size)."""
    seen: dict = {}
    for t, labels in zip(tensors, ins):
        for c, d in zip(labels, t.shape):
            s = seen.get(c)
            if d is None or d == 1:
                continue
            if s is not None and s != d:
                raise ValueError(f"einsum: dimension {c!r} of equation {equation!r} has sizes {s} and {d}")
            seen[c] = d


def _sum_out(x, labels, keep):
    """Sum away the labels of ``x`` not in ``keep``."""
    axes = [i for i, c in enumerate(labels) if c not in keep]
    if axes:
        x = reduce_sum(x, axis=axes)
        labels = [c for c in labels if c in keep]
    return x, labels


def _permute(x, labels, order):
    perm = [labels.index(c) for c in order]
    return x if perm == list(range(len(perm))) else transpose(x, perm)


def _merged(x, n_lead, groups, equation):
    """``x`` (its dimensions: ``n_lead`` kept, then the groups' in order)
    reshaped so that each group of dimensions is one (an empty group: size 1)."""
    if all(len(g) <= 1 for g in groups):  # nothing merged: no reshape, whatever sizes run-time has
        for i, g in enumerate(groups):
            if not g:
                x = expand_dims(x, n_lead + i)
        return x
    dims = list(x.shape)
    target, at = dims[:n_lead], n_lead
    for g in groups:
        size = 1
        for d in dims[at:at + len(g)]:
            size = None if size is None or d is None else size * d
        target.append(size)
        at += len(g)
    return _reshape_to(x, target, equation)


def _reshape_to(x, target, equation):
    if target.count(None) > 1:
        raise NotImplementedError(f"einsum {equation!r}: merging or splitting dimensions where more than one "
                                  f"is known only at run time (shape {list(x.shape)})")
    return reshape(x, [-1 if d is None else d for d in target])


@user_errors
def einsum(equation, *inputs, name=None):
    """Einstein summation (numpy's and TensorFlow's notation): ``einsum("bij,bjk->bik", a, b)``."""
    if not inputs:
        raise ValueError("einsum: no operands")
    tensors = [convert_to_tensor(x) for x in inputs]
    ins, out = _parse(equation, [t.ndim for t in tensors])
    _check_sizes(equation, tensors, ins)
    x, lx = tensors[0], ins[0]
    for i in range(1, len(tensors)):
        keep = set(out).union(*[set(l) for l in ins[i + 1:]])
        y, ly = tensors[i], ins[i]
        x, lx = _pair(x, lx, y, ly, keep, equation)
    x, lx = _sum_out(x, lx, set(out))
    return _permute(x, lx, out)


def _pair(a, la, b, lb, keep, equation):
    """``a`` [la] times ``b`` [lb], summed over their common labels not in
    ``keep``: one (batched) matmul; the result and its labels."""
    a, la = _sum_out(a, la, keep | set(lb))
    b, lb = _sum_out(b, lb, keep | set(la))
    batch = [c for c in la if c in lb and c in keep]
    k = [c for c in la if c in lb and c not in keep]
    m = [c for c in la if c not in lb]
    n = [c for c in lb if c not in la]
    size = {c: d for c, d in zip(la, a.shape)}
    size.update({c: d for c, d in zip(lb, b.shape) if c in n})
    # A as [batch, M, K] (or [batch, K, M], read transposed), B as [batch, K, N] (or [batch, N, K])
    ta = len(m) > 0 and len(k) > 0 and la == batch + k + m
    tb = len(n) > 0 and len(k) > 0 and lb == batch + n + k
    a = _merged(_permute(a, la, batch + (k + m if ta else m + k)), len(batch), [k, m] if ta else [m, k], equation)
    b = _merged(_permute(b, lb, batch + (n + k if tb else k + n)), len(batch), [n, k] if tb else [k, n], equation)
    y = matmul(a, b, transpose_a=ta, transpose_b=tb)  # [batch, M, N] (batch broadcast)
    if len(m) > 1 or len(n) > 1:
        y = _reshape_to(y, list(y.shape[:len(batch)]) + [size[c] for c in m + n], equation)
    elif not m or not n:  # only size-1 axes to drop
        y = squeeze(y, axis=[len(batch) + i for i, g in enumerate((m, n)) if not g])
    return y, batch + m + n
