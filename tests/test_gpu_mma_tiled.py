"""The tiled float16 tensor-core matmul (tfc/passes/gpu_mma.py ``_tiled``: 64 x 64
tiles staged in shared memory, fragments loaded with ``tgpu.ldmatrix``,
``mma.sync.aligned.m16n8k16``), compiled for cuda and run on the PTX simulator
(which also checks every shared access's bounds and alignment, ldmatrix's
16-byte rows, the barriers and shared-memory races), against numpy's float32
matmul of the float16 inputs within test_gpu_mma's bound: sizes that are not
multiples of the tile or of K's step, K = 0 and 1, both transpose flags,
batches with broadcasting, views with strides; the switch to the simple kernel
below 32 rows or columns; ptxas for sm_80 and sm_90 within the matmul budget
(128 registers: the 32 accumulators, the fragments and the addresses)."""
from __future__ import annotations

import numpy as np
import pytest

import tfc

pytest.importorskip("tfc.backends.cuda.simulator", reason="the PTX simulator has not landed")
from test_gpu_mma import _check  # noqa: E402
from test_lower_gpu import check_budgets, kernels, l3_of, lower  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

CASES = [((64, 32), (32, 64), False, False), ((70, 45), (45, 67), False, False),
         ((2, 40, 33), (40, 130), True, False), ((3, 65, 17), (3, 33, 17), False, True),
         ((33, 1), (1, 32), False, False), ((97, 50), (33, 50), False, True), ((2, 1, 32, 0), (3, 0, 40), False, False)]


def _compiled(fn, *args):
    conc = tfc.function(fn, target="cuda").get_concrete_function(*(tfc.constant(a) for a in args))
    return conc, conc(*(tfc.constant(a) for a in args))


@pytest.mark.parametrize("ash,bsh,ta,tb", CASES)
def test_tiled_f16_matmul(cuda_driver, ash, bsh, ta, tb):
    rng = np.random.default_rng(sum(ash) + sum(bsh))
    a = rng.standard_normal(ash).astype(np.float16)
    b = rng.standard_normal(bsh).astype(np.float16)
    conc, got = _compiled(lambda x, y: tfc.matmul(x, y, transpose_a=ta, transpose_b=tb), a, b)
    _check(got, a, b, ta, tb)
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in conc.ptx


def test_strided_views(cuda_driver):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((90, 80)).astype(np.float16)
    b = rng.standard_normal((80, 100)).astype(np.float16)
    conc, got = _compiled(lambda x, y: tfc.matmul(x[::2, 1::2], y[::2, 3:]), a, b)
    _check(got, a[::2, 1::2], b[::2, 3:], False, False)
    assert "ldmatrix" in conc.ptx


def test_large_values_accumulate_in_float32(cuda_driver):
    a = np.full((40, 48), 300.0, np.float16)
    b = np.full((48, 36), 300.0, np.float16)
    b[::2] = -300.0  # products past float16's range cancel in the float32 accumulator
    conc, got = _compiled(lambda x, y: tfc.matmul(x, y), a, b)
    assert np.array_equal(np.asarray(got), np.zeros((40, 36), np.float16))


def test_small_results_keep_the_simple_kernel():
    a, b = np.ones((31, 40), np.float16), np.ones((40, 64), np.float16)
    (k,) = kernels(lower(l3_of(lambda x, y: tfc.matmul(x, y), a, b)))
    assert k.sym_name.data.endswith("f16_mma")
    (k,) = kernels(lower(l3_of(lambda x, y: tfc.matmul(x, y), np.ones((32, 40), np.float16), b)))
    assert k.sym_name.data.endswith("f16_mma_64x64")


def test_tiled_kernel_ptxas_budgets():
    a = np.ones((2, 70, 45), np.float16)
    b = np.ones((45, 67), np.float16)
    m = lower(l3_of(lambda x, y: tfc.matmul(x, y, transpose_b=False), a, b))
    (k,) = kernels(m)
    text = str(m)
    assert k.sym_name.data.endswith("f16_mma_64x64")
    assert text.count("tgpu.ldmatrix x4") == 2 * (2 + 2) and text.count("tgpu.mma m16n8k16") == 2 * 8
    check_budgets(m)


def test_bfloat16_is_refused_with_what_it_needs():
    """No bfloat16 dtype yet (so no .bf16 mma): the name is refused with what is missing."""
    for name in ("bfloat16", "bf16"):
        with pytest.raises(NotImplementedError, match="uint16 bits .* round-to-nearest-even .* .bf16 mma"):
            tfc.constant([1.0], name)


def test_eager_gpu_matmul_and_its_gradients(cuda_driver):
    """Eager float16 tensors on the (simulated) GPU: the product and both gradients
    (matmuls with a transposed operand, through the tiled kernel) within the bound."""
    rng = np.random.default_rng(9)
    a = rng.standard_normal((40, 50)).astype(np.float16)
    b = rng.standard_normal((50, 36)).astype(np.float16)
    x, y = tfc.Variable(tfc.constant(a).gpu()), tfc.Variable(tfc.constant(b).gpu())
    with tfc.GradientTape() as tape:
        z = tfc.matmul(x, y)
        loss = tfc.reduce_sum(z)
    _check(z, a, b, False, False)
    gx, gy = tape.gradient(loss, [x, y])
    ones = np.ones((40, 36), np.float16)
    _check(gx, ones, b, False, True)
    _check(gy, a, ones, True, False)


def _ldmatrix_kernel_ptx(row_offset=0, barrier=True):
    """One warp: 256 float16 to shared memory, (a barrier,) ldmatrix x4 of rows 8 j + r
    (plus ``row_offset`` elements), each lane's 8 values stored to out."""
    from xdsl.dialects import gpu
    from xdsl.dialects.builtin import Float16Type, StringAttr, i32
    from xdsl.ir import Block, Region

    from tfc.backends.cuda.ptx import to_ptx
    from tfc.dialects import gpu as G
    from tfc.passes.gpu_builder import KernelBuilder

    f16 = Float16Type()
    kb = KernelBuilder("ldm", [G.PtrType(f16, "global")] * 2, "copy", i32, (32, 1, 1))
    px, po = kb.args
    lane = kb.tid()
    sm = kb.shared(f16, 256 + 8)
    for e in range(8):
        at = kb.add(lane, kb.i(32 * e))
        kb.store(kb.load(px, at), sm, at)
    if barrier:
        kb.emit(gpu.BarrierOp())
    vals = kb.emit(G.LdMatrixOp(sm, kb.add(kb.mul(lane, kb.i(8)), kb.i(row_offset)), 4)).results
    for e, v in enumerate(vals):
        kb.store([v], po, kb.add(kb.mul(lane, kb.i(8)), kb.i(e)))
    return to_ptx(gpu.ModuleOp(StringAttr("kernels"), Region(Block([kb.finish()]))))


@pytest.mark.parametrize("change,message", [
    ({"row_offset": 1}, "misaligned 16-byte shared read"),
    ({"barrier": False}, "shared-memory race"),
    ({"block": 16}, "ldmatrix .* partial"),
])
def test_the_simulator_checks_ldmatrix(change, message):
    """A row address off 16-byte alignment, rows read without the barrier after other threads
    wrote them, a partial warp: each a SimulationError naming it (what a GPU leaves undefined)."""
    from tfc.backends.cuda import simulator as S

    ptx = _ldmatrix_kernel_ptx(change.get("row_offset", 0), change.get("barrier", True))
    block = change.get("block", 32)
    ptx = ptx.replace(".reqntid 32, 1, 1", f".reqntid {block}, 1, 1")
    x = np.arange(256).astype(np.float16)
    out = np.zeros(256, np.float16)
    with pytest.raises(S.SimulationError, match=message):
        S.run(S.parse(ptx), "ldm", (1, 1, 1), (block, 1, 1), [x, out], S.Memory())
    ok = _ldmatrix_kernel_ptx()
    S.run(S.parse(ok), "ldm", (1, 1, 1), (32, 1, 1), [x, out], S.Memory())
    m = x.reshape(4, 8, 8)
    lanes = np.arange(32)
    want = np.stack([m[j, lanes // 4, 2 * (lanes % 4) + h] for j in range(4) for h in (0, 1)], axis=1)
    assert np.array_equal(out.reshape(32, 8), want)


@pytest.mark.parametrize("ash,bsh,tb", [((70, 48), (67, 48), True), ((2, 40, 40), (3, 1, 36, 40), True),
                                        ((33, 64), (64, 50), False), ((40, 8), (8, 33), False)])
def test_cp_async_staging(cuda_driver, ash, bsh, tb):
    """Operands with k contiguous and 16-byte aligned rows are staged by cp.async (16-byte
    chunks, those past K or the rows zero-filled; a wait, then the barrier): A always here, B
    where it is transposed (k contiguous); the same results within the bound."""
    rng = np.random.default_rng(sum(ash) + sum(bsh))
    a = rng.standard_normal(ash).astype(np.float16)
    b = rng.standard_normal(bsh).astype(np.float16)
    conc, got = _compiled(lambda x, y: tfc.matmul(x, y, transpose_b=tb), a, b)
    _check(got, a, b, False, tb)
    assert conc.ptx.count("cp.async.cg.shared.global") == (4 if tb else 2)
    assert "cp.async.wait_all" in conc.ptx


def test_cp_async_kernel_ptxas_budgets():
    a = np.ones((2, 70, 48), np.float16)
    b = np.ones((67, 48), np.float16)
    m = lower(l3_of(lambda x, y: tfc.matmul(x, y, transpose_b=True), a, b))
    assert str(m).count("tgpu.cp_async ") == 4 and str(m).count("tgpu.cp_async_wait") == 1
    check_budgets(m)


def test_cp_async_only_where_the_view_starts_aligned(cuda_driver):
    """A reshape of ``x[1:]`` has no layout offset but starts 2 bytes past an aligned
    address (its data start is the slice's): it is staged with plain loads, not cp.async
    (whose misaligned address would fault on a GPU); an aligned slice keeps cp.async."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal(8 + 64 * 32).astype(np.float16)
    b = rng.standard_normal((64, 32)).astype(np.float16)
    for start, staged in ((1, 1), (8, 2)):
        conc, got = _compiled(lambda x, y, s=start: tfc.matmul(tfc.reshape(x[s:s + 64 * 32], (64, 32)), y,
                                                               transpose_b=True), x, b)
        _check(got, x[start:start + 64 * 32].reshape(64, 32), b, False, True)
        assert conc.ptx.count("cp.async.cg.shared.global") == 2 * staged


def test_the_simulator_catches_a_missing_cp_async_wait():
    """The tiled kernel's PTX without its ``cp.async.wait_all``: the copies never land (the
    simulator writes them at the thread's wait), so the fragments read stale shared memory and
    the result is wrong; with the wait it is right."""
    from tfc.backends.cuda import simulator as S

    rng = np.random.default_rng(12)
    a = rng.standard_normal((64, 32)).astype(np.float16)
    b = rng.standard_normal((64, 32)).astype(np.float16)
    conc = tfc.function(lambda x, y: tfc.matmul(x, y, transpose_b=True), target="cuda").get_concrete_function(
        tfc.constant(a), tfc.constant(b))
    ptx = conc.ptx
    (name,) = S.parse(ptx).kernels
    assert ptx.count("cp.async.wait_all;") == 1
    for text, right in ((ptx, True), (ptx.replace("cp.async.wait_all;", ""), False)):
        out = np.zeros((64, 64), np.float16)
        S.run(S.parse(text), name, (1, 1, 1), (128, 1, 1), [a, b, out], S.Memory())
        want = (a.astype(np.float32) @ b.astype(np.float32).T).astype(np.float16)
        assert np.allclose(out.astype(np.float32), want, atol=0.05, rtol=0.01) == right



def test_cp_async_partial_chunks_at_the_end_of_k():
    """A matmul of views with K = 45 of rows of 48 halves (B from column 8 on: its data 16 bytes
    in), which bufferization passes as they are in this L3: aligned rows, so cp.async, and the
    last chunk of each row copies 5 halves (10 bytes), zero-filling the 3 past K (halves of
    the next columns, which must not enter the sum); run on the simulator."""
    from tfc.backends.cuda import simulator as S
    from tfc.backends.cuda.ptx import to_ptx

    text = """func.func @f(%x: memref<70x48xf16>, %y: memref<40x56xf16>, %arena: memref<0xi8>) -> memref<70x40xf16> {
  %a = loops.subview %x [0, 0] [70, 45] [1, 1] : memref<70x48xf16> -> memref<70x45xf16, strided<[48, 1]>>
  %b = loops.subview %y [0, 8] [40, 45] [1, 1] : memref<40x56xf16> -> memref<40x45xf16, strided<[56, 1], offset: 8>>
  %c = loops.alloc : memref<70x40xf16>
  loops.library "matmul"(%a, %b : memref<70x45xf16, strided<[48, 1]>>, memref<40x45xf16, strided<[56, 1], offset: 8>>) outs(%c : memref<70x40xf16>) {attrs = {transpose_a = false, transpose_b = true}} -> ()
  func.return %c : memref<70x40xf16>
}"""
    m = lower(text)
    (k,) = kernels(m)
    ptx = to_ptx(m)
    assert ptx.count("cp.async.cg.shared.global") == 4
    rng = np.random.default_rng(13)
    x = rng.standard_normal((70, 48)).astype(np.float16)
    y = rng.standard_normal((40, 56)).astype(np.float16)
    out = np.zeros((70, 40), np.float16)
    grid = (2 * 1, 1, 1)  # tiles of 64 x 64: two rows of tiles, one column
    S.run(S.parse(ptx), k.sym_name.data, grid, (128, 1, 1), [x, y.ravel()[8:].copy(), out], S.Memory())
    _check(out, x[:, :45], y[:, 8:53], False, True)
