"""Bad arguments to Python-level composites (einsum, top_k, dropout, tensordot,
set_seed) and to a registry op's argument packing name the user's line (a note
"at file:line"), eagerly and while tracing, as a registry op's inference errors do."""
from __future__ import annotations

import inspect

import pytest

import tfc

X = tfc.ones([2, 3])

CASES = {
    "einsum": (lambda: tfc.einsum("ij,jk->ikz", X, X), ValueError, "output letter 'z'"),
    "einsum operands": (lambda: tfc.einsum("ij,jk", X), ValueError, "names 2 operands, got 1"),
    "top_k": (lambda: tfc.top_k(X, k=-1), ValueError, "k must be an int >= 0"),
    "top_k index_type": (lambda: tfc.top_k(X, index_type=tfc.float32), TypeError, "index_type"),
    "dropout": (lambda: tfc.nn.dropout(X, 1.5), ValueError, r"rate must be in \[0, 1\)"),
    "tensordot": (lambda: tfc.tensordot(X, X, axes="a"), TypeError, "axes must be an int"),
    "set_seed": (lambda: tfc.random.set_seed("a"), TypeError, "seed must be a non-negative int"),
    "packing": (lambda: tfc.cast(X, "foo"), TypeError, "unsupported dtype 'foo'"),  # a registry op's pack
}


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "traced"])
@pytest.mark.parametrize("name", list(CASES))
def test_composite_errors_name_the_users_line(name, traced):
    call, cls, match = CASES[name]
    line = inspect.getsourcelines(call)[1]  # the CASES line that makes the call
    f = tfc.function(call, autograph=False) if traced else call
    with pytest.raises(cls, match=match) as info:
        f()
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert f"{__file__}:{line} " in notes, notes
    assert notes.count(" at ") == 1  # once, not per frame



def _line_of(marker):
    with open(__file__) as f:
        return next(i for i, text in enumerate(f, 1) if text.rstrip().endswith(marker))


def test_compiled_gradient_refusals_name_the_users_line():
    """An assignment, or an unseeded draw, inside differentiated compiled control
    flow: the NotImplementedError starts with the line that made it."""
    import numpy as np

    v = tfc.Variable(np.float32(1.0))

    @tfc.function
    def assigns(x, n):
        with tfc.GradientTape() as t:
            t.watch(x)
            i, y = tfc.constant(0), x
            while i < n:
                v.assign_add(1.0)  # the assignment
                y = y * 2.0
                i += 1
            s = tfc.reduce_sum(y)
        return t.gradient(s, x)

    @tfc.function
    def draws(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            y = tfc.cond(tfc.reduce_sum(x) > 0.0, lambda: x * tfc.random.uniform((2,)), lambda: x)  # the draw
            s = tfc.reduce_sum(y)
        return t.gradient(s, x)

    with pytest.raises(NotImplementedError, match=f"^{__file__}:{_line_of('# the assignment')}: .*assigns the var"):
        assigns(tfc.ones([2]), tfc.constant(2))
    with pytest.raises(NotImplementedError, match=f"^{__file__}:{_line_of('# the draw')}: .*stateful op uniform"):
        draws(tfc.ones([2]))
