"""tfc.einsum against numpy's einsum; gradients by finite differences;
compiled (static and None signatures) bit-identical to eager."""
import numpy as np
import pytest

import tfc
from helpers import check_grad

CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("ji,jk->ik", [(4, 3), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("bhqk,bhkd->bqhd", [(2, 3, 4, 6), (2, 3, 6, 5)]),
    ("bthd->bhtd", [(2, 3, 4, 5)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("ij", [(3, 4)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("abc,cd->abd", [(2, 3, 4), (4, 5)]),
    ("abc,bcd->ad", [(2, 3, 4), (3, 4, 5)]),
    ("ab,cd->abcd", [(2, 3), (4, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("b...d,d->b...", [(2, 3, 4, 5), (5,)]),
    ("ij,ij->i", [(3, 4), (3, 4)]),
    ("bij,jk->bk", [(2, 3, 4), (4, 5)]),
    ("i,->i", [(3,), ()]),
]


@pytest.mark.parametrize("eq, shapes", CASES)
def test_einsum_matches_numpy(rng, eq, shapes):
    xs = [rng.normal(size=s) for s in shapes]
    got = tfc.einsum(eq, *xs).numpy()
    np.testing.assert_allclose(got, np.einsum(eq, *xs), rtol=1e-12, atol=1e-12)
    assert got.shape == np.einsum(eq, *xs).shape


@pytest.mark.parametrize("eq, shapes", [c for c in CASES if c[0] in (
    "ij,kj->ik", "bhqd,bhkd->bhqk", "abc,bcd->ad", "ij,jk,kl->il", "...ij,...jk->...ik", "ij->j", "i,j->ij")])
def test_einsum_gradients(rng, eq, shapes):
    xs = [rng.normal(size=s) for s in shapes]
    w = rng.normal(size=np.einsum(eq, *xs).shape)
    check_grad(lambda *ts: tfc.einsum(eq, *ts) * w, *xs)


@pytest.mark.parametrize("eq, shapes", [c for c in CASES if c[0] in (
    "bhqd,bhkd->bhqk", "bhqk,bhkd->bqhd", "abc,bcd->ad", "ij,jk,kl->il", "bthd->bhtd", "ij->j")])
def test_einsum_compiled(rng, eq, shapes):
    xs = [rng.normal(size=s).astype(np.float32) for s in shapes]
    want = tfc.einsum(eq, *xs).numpy()
    assert np.array_equal(tfc.function(lambda *ts: tfc.einsum(eq, *ts))(*xs).numpy(), want)
    # the batch dimension known only at run time
    sig = [tfc.TensorSpec([None] + list(s[1:]), tfc.float32) for s in shapes]
    assert np.array_equal(tfc.function(lambda *ts: tfc.einsum(eq, *ts), input_signature=sig)(*xs).numpy(), want)


def test_einsum_is_matmuls_in_the_ir(rng):
    f = tfc.function(lambda q, k: tfc.einsum("bhqd,bhkd->bhqk", q, k))
    ir = f.get_concrete_function(tfc.TensorSpec([2, 3, 4, 5]), tfc.TensorSpec([2, 3, 6, 5])).ir()
    assert "tfc.matmul" in ir and "tfc.transpose" not in ir  # k read transposed by the matmul


def test_einsum_errors():
    a = np.ones((2, 3))
    with pytest.raises(ValueError, match="einsum: dimension 'j'.*sizes 3 and 4"):
        tfc.einsum("ij,jk->ik", a, np.ones((4, 2)))
    with pytest.raises(ValueError, match="names 2 operands, got 1"):
        tfc.einsum("ij,jk->ik", a)
    with pytest.raises(ValueError, match="names 3 dimensions, the tensor has rank 2"):
        tfc.einsum("ijk->i", a)
    with pytest.raises(ValueError, match="output letter 'z'"):
        tfc.einsum("ij->z", a)
    with pytest.raises(ValueError, match="bad term"):
        tfc.einsum("i1->i", a)
    with pytest.raises(NotImplementedError, match="repeated within operand 'ii'"):
        tfc.einsum("ii->i", np.ones((3, 3)))
    with pytest.raises(TypeError, match="equation must be a string"):
        tfc.einsum(3, a)
